// widefuse codebook prelude (docs/ir_reference.md, code_value and nearest_code): the device
// prelude includes it. The kernel defines each table it reads (wf_codebook_<name>) and, for the
// host, each table's code index (wf_codebook_<name>_index, ir/code_index.h).
#ifdef __CUDACC__
#define WF_CODEBOOK static __device__ const f32
#else
#define WF_CODEBOOK static const f32
#endif

/// code_value: the entry at the code's low log2(N) bits.
template <int N, typename C> WF_DEVICE f32 wf_code_value(const f32 (&table)[N], C code) {
  // An int index (the same low bits): the host compiler gathers with 32-bit indices only.
  return table[int(code) & (N - 1)];
}

/// nearest_code, ir/codebook.h's rule: the largest c with table[c] <= x by a branchless binary
/// search (0 for NaN), then up when x - table[c] >= half the gap to table[c + 1].
template <int N> WF_DEVICE u8 wf_nearest_code(const f32 (&table)[N], f32 x) {
  // A loop unrolled by its count (bits of N): the host compiler then vectorizes the element
  // loop around it (gathers from the table).
  const int bits = N == 256 ? 8 : N == 16 ? 4 : N == 2 ? 1 : -1;
  static_assert(bits > 0, "codebooks have 256 or 16 entries");
  int code = 0;
#ifdef __CUDACC__
#pragma unroll
#else
#pragma GCC unroll 8
#endif
  for (int bit = bits - 1; bit >= 0; --bit)
    code += x >= table[code + (1 << bit)] ? (1 << bit) : 0;
  int up = code + 1 < N ? code + 1 : N - 1;
  f32 half = (table[up] - table[code]) * 0.5f;
  return u8(x - table[code] >= half ? up : code);
}

#ifdef __CUDACC__
#define WF_NEAREST_CODE(table, x) wf_nearest_code(table, x)
#else
/// nearest_code by a codebook's code index (ir/code_index.h): squeeze and clamp the value's
/// ordered key, then one entry of its bucket gives the code. The host's vectorized loops gather
/// one entry per value where the search gathers ten. The kernel defines
/// wf_codebook_<name>_index(x), which calls this with the index's constants and entries.
template <i32 Shift, i32 Zero, i32 Low, i32 High, int Count>
inline u8 wf_indexed_code(const u32 (&entries)[Count], f32 x) {
  const i32 bits = wf_bitcast<i32>(x);
  const i32 key = bits ^ ((bits >> 31) & 0x7fffffff);
  const i32 inside = key < -Zero ? -Zero : key > Zero ? Zero : key;
  const i32 above = key - inside - Low; // ir/code_index.cpp checks that it cannot overflow
  // max(above, 0) by its sign bit and NaN's 0 by a mask, not by selects: on a select whose one
  // side is constant, the host compiler splits the loop's path and stops vectorizing it.
  const i32 lifted = above & ~(above >> 31);
  const i32 from = lifted < High - Low ? lifted : High - Low;
  const u32 entry = entries[from >> Shift];
  const u32 offset = u32(from & ((1 << Shift) - 1));
  const i32 code = i32(entry >> 24) + i32(offset >= (entry & 0xffffffu));
  return u8(code & -i32(x == x));
}
#define WF_NEAREST_CODE(table, x) table##_index(x)
#endif
