// How a launch's blocks share its chunks (codegen/chunk_shares.h, the text every kernel's
// skeleton carries): every chunk has exactly one block, blocks take contiguous runs in order,
// and each block's work is its equal share of the launch's work within one chunk, however the
// members' chunks weigh. The members below are a packed launch as the binding lays it out:
// flat chunks of 1,024 and 4,096 elements beside rows chunks of 32 rows by 512 columns.

#include "codegen/chunk_shares.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

struct Header {
  int64_t numel;
  int32_t first_chunk;
  int32_t body;
  int64_t first_work;
  int64_t chunk_work;
};
struct Entry {
  Header header;
};

/// A table of members of (chunks, chunk_work), with the prefix sums the binding writes.
struct Launch {
  std::vector<Entry> table;
  int numChunks = 0;
  int64_t work = 0;

  void add(int chunks, int64_t chunkWork) {
    table.push_back({{0, numChunks, 0, work, chunkWork}});
    numChunks += chunks;
    work += chunks * chunkWork;
  }
  int64_t chunkWork(int chunk) const {
    int member = wf_find_member(table.data(), int(table.size()), chunk);
    return table[size_t(member)].header.chunk_work;
  }
};

/// A packed launch: a rows member of 24 row groups by 99 segments (GPT-2's column factor),
/// then many small flat members, a large one, and a rows member of one segment.
Launch packedLaunch() {
  Launch launch;
  launch.add(24 * 99, 32 * 512);
  for (int i = 0; i < 50; ++i)
    launch.add(1 + i % 3, 1024);
  launch.add(9000, 4096);
  launch.add(1571, 32 * 100);
  return launch;
}

} // namespace

TEST(ChunkShares, EveryChunkHasOneBlockInOrder) {
  Launch launch = packedLaunch();
  for (int grid : {1, 2, 3, 7, 132, 528, 4096, 20000}) {
    int expected = 0;
    for (int block = 0; block < grid; ++block) {
      int first = -1, last = -1;
      wf_block_chunks(launch.table.data(), int(launch.table.size()), launch.numChunks, block, grid,
                      &first, &last);
      ASSERT_EQ(first, expected) << "block " << block << " of " << grid;
      ASSERT_LE(first, last);
      expected = last;
    }
    EXPECT_EQ(expected, launch.numChunks) << grid << " blocks";
  }
}

TEST(ChunkShares, EachBlockTakesItsShareOfTheWorkWithinOneChunk) {
  // By count, a block of rows chunks would move 16 times the elements of a block of flat ones.
  Launch launch = packedLaunch();
  int64_t heaviest = 32 * 512;
  for (int grid : {132, 528, 1056}) {
    int64_t least = launch.work, most = 0;
    for (int block = 0; block < grid; ++block) {
      int first = 0, last = 0;
      wf_block_chunks(launch.table.data(), int(launch.table.size()), launch.numChunks, block, grid,
                      &first, &last);
      int64_t work = 0;
      for (int chunk = first; chunk < last; ++chunk)
        work += launch.chunkWork(chunk);
      EXPECT_LE(std::abs(work - launch.work / grid), heaviest) << "block " << block;
      least = std::min(least, work);
      most = std::max(most, work);
    }
    EXPECT_LE(most - least, 2 * heaviest) << grid << " blocks";
  }
}

TEST(ChunkShares, MembersOfEqualChunksShareByCount) {
  // One weight of chunk: every block takes floor(n / g) or ceil(n / g) of the n chunks.
  Launch launch;
  for (int i = 0; i < 7; ++i)
    launch.add(13 + i, 4096);
  for (int grid : {1, 5, 64, 111, 200}) {
    int fewest = launch.numChunks / grid, most = (launch.numChunks + grid - 1) / grid;
    for (int block = 0; block < grid; ++block) {
      int first = 0, last = 0;
      wf_block_chunks(launch.table.data(), int(launch.table.size()), launch.numChunks, block, grid,
                      &first, &last);
      EXPECT_GE(last - first, fewest) << "block " << block << " of " << grid;
      EXPECT_LE(last - first, most) << "block " << block << " of " << grid;
    }
  }
}
