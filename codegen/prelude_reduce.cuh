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

/// The pairwise tree of `Count` values (a power of two) level by level, each level's values in
/// another array than the pairs it combines: the pairs and their order of wf_tree_array, in a
/// form the host compiler vectorizes (the host's whole chunks). Overwrites `values`.
template <typename Op, int Count, typename A> WF_DEVICE A wf_tree_levels(A* values) {
  A half[Count > 1 ? Count / 2 : 1];
  A* from = values;
  A* to = half;
  for (int n = Count / 2; n >= 1; n /= 2) {
    for (int i = 0; i < n; ++i)
      to[i] = Op::combine(from[2 * i], from[2 * i + 1]);
    A* level = to;
    to = from;
    from = level;
  }
  return from[0];
}

/// The pairwise tree of the `Count` values at `values` (a power of two), which it only reads:
/// unrolled, in registers (a block's warp trees in shared memory, read by all its threads).
template <typename Op, int Count, typename A> WF_DEVICE A wf_span_tree(const A* values) {
  A tree[Count];
#pragma unroll
  for (int i = 0; i < Count; ++i)
    tree[i] = values[i];
#pragma unroll
  for (int o = 1; o < Count; o *= 2)
#pragma unroll
    for (int i = 0; i + o < Count; i += 2 * o)
      tree[i] = Op::combine(tree[i], tree[i + o]);
  return tree[0];
}

#ifdef __CUDACC__
/// `value` of lane `lane` of the warp (every lane takes part); 1-byte values travel as int.
template <typename A> WF_DEVICE A wf_shuffle(A value, int lane) {
  if constexpr (sizeof(A) == 1)
    return A(__shfl_sync(0xffffffffu, int(value), lane));
  else
    return __shfl_sync(0xffffffffu, value, lane);
}

/// The tree of each aligned group of `Group` lanes' leaves in lane order (`Group` a power of
/// two up to 32), on every lane of the group: lanes l and l + o combine at level o (the
/// pairwise tree), by shuffles: no shared memory, no barrier.
template <typename Op, int Group, typename A> WF_DEVICE A wf_lanes_tree(A leaf) {
  const int lane = int(threadIdx.x) & 31;
#pragma unroll
  for (int o = 1; o < Group; o *= 2) {
    const A other = sizeof(A) == 1 ? A(__shfl_down_sync(0xffffffffu, int(leaf), o))
                                   : __shfl_down_sync(0xffffffffu, leaf, o);
    if ((lane & (2 * o - 1)) == 0)
      leaf = Op::combine(leaf, other);
  }
  return wf_shuffle(leaf, lane & ~(Group - 1));
}

/// The tree of the warp's 32 leaves in lane order, on every lane.
template <typename Op, typename A> WF_DEVICE A wf_warp_tree(A leaf) {
  return wf_lanes_tree<Op, 32>(leaf);
}

/// The tree of the block's warp trees `warps[0, Threads / 32)` in order, by warp 0; valid on
/// thread 0. The tree of 32-aligned subtrees is the tree of their leaves.
template <typename Op, int Threads, typename A> WF_DEVICE A wf_warps_tree(const A* warps) {
  const int lane = int(threadIdx.x) & 31;
  return wf_warp_tree<Op>(lane < Threads / 32 ? warps[lane] : wf_tree_identity<Op, A>());
}

/// The tree of the block's `Threads` leaves, one per thread, in thread order: each warp's by
/// shuffles, then warp 0's over the warps' trees, one barrier between. Every thread takes
/// part; the result is valid on thread 0 (the others get their leaf back). `warps` holds
/// Threads / 32 values and must not be written again before a barrier after this call.
template <typename Op, int Threads, typename A> WF_DEVICE A wf_block_tree(A leaf, A* warps) {
  const A warp = wf_warp_tree<Op>(leaf);
  if ((threadIdx.x & 31u) == 0)
    warps[threadIdx.x / 32u] = warp;
  __syncthreads();
  return threadIdx.x < 32u ? wf_warps_tree<Op, Threads>(warps) : leaf;
}

/// A load at device scope (`ld.relaxed.gpu`): it reads L2, never a line this SM's L1 kept, so
/// another block's store, fenced before that block drew its ticket, is seen after ours.
template <typename A> WF_DEVICE A wf_load_device(const A* address) {
#ifndef WF_EMULATED_DEVICE
  if constexpr (sizeof(A) == 8) {
    unsigned long long bits;
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(bits) : "l"(address) : "memory");
    return wf_bitcast<A>(bits);
  } else if constexpr (sizeof(A) == 4) {
    unsigned bits;
    asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(bits) : "l"(address) : "memory");
    return wf_bitcast<A>(bits);
  } else {
    static_assert(sizeof(A) == 1, "accumulators are 1, 4 or 8 bytes");
    unsigned short bits;
    asm volatile("ld.relaxed.gpu.global.u8 %0, [%1];" : "=h"(bits) : "l"(address) : "memory");
    return A(bits);
  }
#else
  return *(const volatile A*)address; // the emulator's memory is sequentially consistent
#endif
}

/// A store at device scope (`st.relaxed.gpu`), the counterpart of wf_load_device.
template <typename A> WF_DEVICE void wf_store_device(A* address, A value) {
#ifndef WF_EMULATED_DEVICE
  if constexpr (sizeof(A) == 8)
    asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(address),
                 "l"(wf_bitcast<unsigned long long>(value))
                 : "memory");
  else if constexpr (sizeof(A) == 4)
    asm volatile("st.relaxed.gpu.global.b32 [%0], %1;" ::"l"(address),
                 "r"(wf_bitcast<unsigned>(value))
                 : "memory");
  else
    asm volatile("st.relaxed.gpu.global.u8 [%0], %1;" ::"l"(address), "h"((unsigned short)value)
                 : "memory");
#else
  *(volatile A*)address = value;
#endif
}

/// The tree of values [first, first + group) of `values`, `group` a power of two <= 8, those
/// at or past `count` the identity: its loads are independent (all in flight at once) and its
/// tree is unrolled (registers only).
template <typename Op, typename A>
WF_DEVICE A wf_group_tree(const A* values, int first, int count, int group) {
  A v[8];
#pragma unroll
  for (int k = 0; k < 8; ++k)
    v[k] = k < group && first + k < count ? wf_load_device(values + first + k)
                                          : wf_tree_identity<Op, A>();
#pragma unroll
  for (int o = 1; o < 8; o *= 2)
#pragma unroll
    for (int k = 0; k + o < 8; k += 2 * o)
      v[k] = Op::combine(v[k], v[k + o]);
  return v[0];
}

/// The group size of the combine's last pass over `count` values (wf_block_combine): the
/// smallest power of two with `count <= group * Threads`; more than 16 takes passes of 8 first.
template <int Threads> WF_DEVICE int wf_last_group(int count) {
  int group = 1;
  while (group * Threads < count)
    group *= 2;
  return group;
}

/// The tree of `count` >= 1 values in global memory (other blocks' partials), by every thread
/// of the block; valid on thread 0 (docs/reductions.md §10). While more than 16 values per
/// thread remain, a pass replaces each aligned group of 8 by its tree, in place, in rounds of
/// one group per thread. The last pass gives each thread one aligned group of at most 16, whose
/// trees are the leaves of the block tree. The pairwise tree of an aligned power-of-two group
/// is a subtree, and the identity padding changes no bit, so the result is wf_tree_counter's
/// over the same values.
template <typename Op, int Threads, typename A>
WF_DEVICE A wf_block_combine(A* values, int count, A* row) {
  while (count > 16 * Threads) {
    const int groups = (count + 7) / 8;
    for (int first = 0; first < groups; first += Threads) { // the same rounds on every thread
      const int g = first + int(threadIdx.x);
      const A tree =
          g < groups ? wf_group_tree<Op>(values, 8 * g, count, 8) : wf_tree_identity<Op, A>();
      // Round r reads values [8 Threads r, 8 Threads (r + 1)) and writes [Threads r, ...):
      // every read of this round and the earlier ones is done before any of its writes.
      __syncthreads();
      if (g < groups)
        wf_store_device(values + g, tree);
    }
    __syncthreads(); // the pass's trees are visible to every thread of the block
    count = groups;
  }
  const int group = wf_last_group<Threads>(count);
  const int size = group > 8 ? 8 : group; // 16 is two groups of 8 and the tree's top combine
  A leaf = wf_tree_identity<Op, A>();
#pragma unroll 1
  for (int half = 0; half * size < group; ++half) {
    const A tree = wf_group_tree<Op>(values, int(threadIdx.x) * group + half * size, count, size);
    leaf = half == 0 ? tree : Op::combine(leaf, tree);
  }
  return wf_block_tree<Op, Threads>(leaf, row);
}
/// wf_tree_counter for a warp, with no missing subtrees: lane k keeps the pending subtree of
/// level k in a register, so no array is indexed at run time (no local memory). 32 levels
/// count 2^32 - 1 pushes of 32-element subtrees (kMaxRowElements, checked when bound).
/// Every lane makes the same calls with the same values; the result is the counter's bits.
template <typename A, typename Op> struct wf_warp_counter {
  A mine{};
  unsigned pushed = 0;

  /// Pushes the next subtree (the same on every lane).
  WF_DEVICE void push(A value) {
    int level = 0;
    for (unsigned j = pushed; j & 1u; j >>= 1, ++level)
      value = Op::combine(wf_shuffle(mine, level), value);
    if ((int(threadIdx.x) & 31) == level)
      mine = value;
    ++pushed;
  }

  /// The tree over everything pushed; false in `*here` when nothing was.
  WF_DEVICE A finish(bool* here) const {
    A value{};
    bool some = false;
    int level = 0;
    for (unsigned j = pushed; j; j >>= 1, ++level)
      if (j & 1u) { // the same on every lane
        const A pending = wf_shuffle(mine, level);
        value = some ? Op::combine(pending, value) : pending;
        some = true;
      }
    *here = some;
    return value;
  }
};

#else
/// The host's twins of the device-scope accesses: the host backend's threads see each other's
/// fenced stores.
template <typename A> inline A wf_load_device(const A* address) {
  return *(const volatile A*)address;
}
template <typename A> inline void wf_store_device(A* address, A value) {
  *(volatile A*)address = value;
}

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
template <typename Op, typename A> inline A wf_warp_tree(A leaf) {
  __builtin_trap();
  return leaf;
}
template <typename Op, int Group, typename A> inline A wf_lanes_tree(A leaf) {
  __builtin_trap();
  return leaf;
}
template <typename Op, int Threads, typename A> inline A wf_warps_tree(const A* warps) {
  __builtin_trap();
  return warps[0];
}
template <typename A, typename Op> struct wf_warp_counter {
  void push(A) { __builtin_trap(); }
  A finish(bool*) const {
    __builtin_trap();
    return A{};
  }
};
#endif
