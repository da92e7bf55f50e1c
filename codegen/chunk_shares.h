// How the blocks of a launch share its members' chunks (docs/kernel_source.md §9): by work,
// not by count. Each member's chunks weigh `chunk_work` (its entry header: elements per chunk,
// a rows chunk its rows times its columns), and `first_work` is the weight of the members
// before it. Block b of g takes the chunks that start in [floor(W b / g), floor(W (b + 1) / g))
// of the launch's work W, so that a block of rows chunks and one of flat chunks move about the
// same number of elements, and every chunk has exactly one block.
//
// Generated kernels carry this text (the kernel skeleton), and tests include it. It is plain
// C++17 with no header of its own and no library call; `Entry` is a member-table entry whose
// `header` has the fields of scheduler/kernel_abi.h.
#ifndef WF_CHUNK_SHARES_H
#define WF_CHUNK_SHARES_H

#ifdef __CUDACC__
#define WF_SHARE_FN __host__ __device__ __forceinline__
#else
#define WF_SHARE_FN inline
#endif

/// The last member whose first chunk (`ByWork` false) or first work position (true) is at most
/// `position`: a binary search over those prefix sums, which increase strictly (every member has
/// a chunk, and every chunk some work).
template <bool ByWork, typename Entry>
WF_SHARE_FN int wf_member_at(const Entry* table, int count, long long position) {
  int low = 0, high = count - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    const long long start = ByWork ? (long long)table[middle].header.first_work
                                   : (long long)table[middle].header.first_chunk;
    if (start <= position)
      low = middle;
    else
      high = middle - 1;
  }
  return low;
}

/// The member whose chunks include `chunk`.
template <typename Entry> WF_SHARE_FN int wf_find_member(const Entry* table, int count, int chunk) {
  return wf_member_at<false>(table, count, chunk);
}

/// The first chunk that starts at or after work position `position` (`num_chunks` at the end).
template <typename Entry>
WF_SHARE_FN int wf_chunk_at(const Entry* table, int count, int num_chunks, long long position) {
  const int member = wf_member_at<true>(table, count, position);
  const long long into = position - (long long)table[member].header.first_work;
  const long long weight = table[member].header.chunk_work;
  const long long chunks = (into + weight - 1) / weight;
  const int first = table[member].header.first_chunk;
  const int next = member + 1 < count ? table[member + 1].header.first_chunk : num_chunks;
  return chunks < (long long)(next - first) ? first + int(chunks) : next;
}

/// The chunks [*first, *last) of block `block` of a `grid`-block launch of `count` >= 1
/// members (each has a chunk at least).
template <typename Entry>
WF_SHARE_FN void wf_block_chunks(const Entry* table, int count, int num_chunks, long long block,
                                 long long grid, int* first, int* last) {
  const long long tail_chunks = num_chunks - table[count - 1].header.first_chunk;
  const long long work = (long long)table[count - 1].header.first_work +
                         tail_chunks * (long long)table[count - 1].header.chunk_work;
  // floor(work * b / grid) without the product: work may take 50 bits and b 16.
  const long long share = work / grid, rest = work % grid;
  *first = wf_chunk_at(table, count, num_chunks, share * block + rest * block / grid);
  *last = wf_chunk_at(table, count, num_chunks, share * (block + 1) + rest * (block + 1) / grid);
}

#endif // WF_CHUNK_SHARES_H
