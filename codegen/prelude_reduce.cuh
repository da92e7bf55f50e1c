// widefuse reduction prelude (docs/reductions.md §8-§10): what a kernel that reduces adds after
// the device prelude (codegen/prelude.cuh), which it needs; kernels without reductions leave it
// out. The reduction tree's combines and counter are the reference evaluator's own text
// (ir/reduction_tree.h); here are what kernels add: the leaf that stands for a missing element,
// the finish, and the trees over a block's row of threads and over short arrays.
#include "ir/reduction_tree.h"

/// +infinity of f32 or f64 (no <cmath> under NVRTC).
template <typename A> WF_DEVICE A wf_infinity() {
  if constexpr (sizeof(A) == 4)
    return wf_bitcast<A>(0x7f800000u);
  else
    return wf_bitcast<A>(0x7ff0000000000000ull);
}

/// The leaf a missing element stands for: combining with it changes no bit (x + -0.0 is x,
/// -0.0 included; max(x, -inf) is x, NaN included), so chunks past a member's end pad with it.
template <typename Op, typename A> WF_DEVICE A wf_tree_identity() {
  if constexpr (wf_is_same<Op, wf_tree_sum>::value)
    return A(-0.0);
  else if constexpr (wf_is_same<Op, wf_tree_max>::value && wf_is_floating<A>::value)
    return -wf_infinity<A>();
  else if constexpr (wf_is_same<Op, wf_tree_max>::value)
    return wf_limits<A>::lowest;
  else if constexpr (wf_is_same<Op, wf_tree_min>::value && wf_is_floating<A>::value)
    return wf_infinity<A>();
  else if constexpr (wf_is_same<Op, wf_tree_min>::value)
    return wf_limits<A>::max;
  else
    return A(wf_is_same<Op, wf_tree_all>::value);
}

/// The result from its tree: a sum is added to +0.0 once, so it is never -0.0 (the tree of
/// zero elements is the identity, which this makes the empty sum's +0.0).
template <typename Op, typename A> WF_DEVICE A wf_tree_finish(A value) {
  if constexpr (wf_is_same<Op, wf_tree_sum>::value)
    return Op::combine(value, A(0));
  else
    return value;
}

/// The pairwise tree of `count` values in place, `count` a power of two (pad with the
/// identity): values[i] becomes the tree of [i, i + 2o) at step o, as the recursive definition.
template <typename Op, typename A> WF_DEVICE A wf_tree_array(A* values, int count) {
  for (int o = 1; o < count; o *= 2)
    for (int i = 0; i + o < count; i += 2 * o)
      values[i] = Op::combine(values[i], values[i + o]);
  return values[0];
}

#ifdef __CUDACC__
/// The tree of the block's `Threads` leaves, one per thread, in thread order (the block's
/// elements of one row): every thread takes part; the result is valid on thread 0 (the others
/// get their leaf back).
template <typename Op, int Threads, typename A> WF_DEVICE A wf_block_tree(A leaf, A* row) {
  row[threadIdx.x] = leaf;
  __syncthreads();
  for (int o = 1; o < Threads; o *= 2) {
    if ((threadIdx.x & (2 * o - 1)) == 0)
      row[threadIdx.x] = Op::combine(row[threadIdx.x], row[threadIdx.x + o]);
    __syncthreads();
  }
  // Only thread 0 reads the root: no barrier separates another thread's read of row[0] from
  // thread 0's next leaf written there (a race the device emulator reported).
  return threadIdx.x == 0 ? row[0] : leaf;
}

/// The tree of `count` >= 1 values in global memory (other blocks' partials), by every thread
/// of the block; valid on thread 0. Each pass replaces each group of `Threads` consecutive
/// values by its tree, in place, until one group is left: the pairwise tree of a power-of-two
/// group size is the tree of its groups' trees, and the identity padding changes no bit, so
/// the result is wf_tree_counter's over the same values. Loads bypass the L1 cache (volatile).
template <typename Op, int Threads, typename A>
WF_DEVICE A wf_block_combine(A* values, int count, A* row) {
  for (;;) {
    const int groups = (count + Threads - 1) / Threads;
    for (int g = 0; g < groups; ++g) {
      const int k = g * Threads + int(threadIdx.x);
      const A leaf = k < count ? *(volatile A*)(values + k) : wf_tree_identity<Op, A>();
      const A tree = wf_block_tree<Op, Threads>(leaf, row);
      if (groups == 1)
        return tree;
      // Group g's values were read in pass-loop iterations g / Threads <= g, before this.
      if (threadIdx.x == 0)
        *(volatile A*)(values + g) = tree;
    }
    __syncthreads(); // the pass's trees are visible to every thread of the block
    count = groups;
  }
}
#else
/// The host backend's entries compute the rows themselves (its device functions are compiled,
/// never run): reaching this is a bug in the host entry.
template <typename Op, int Threads, typename A> inline A wf_block_tree(A leaf, A*) {
  __builtin_trap();
  return leaf;
}
template <typename Op, int Threads, typename A> inline A wf_block_combine(A* values, int, A*) {
  __builtin_trap();
  return values[0];
}
#endif
