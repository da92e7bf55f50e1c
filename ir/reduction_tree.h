// The reduction tree (docs/reductions.md §3): the one order in which every reduction
// combines its elements, whatever the backend, blocks, threads or chunks. The reference
// evaluator includes this file, and so does the kernels' reduction prelude
// (codegen/prelude_reduce.cuh), so that every backend gives the evaluator's bits.
//
// It is plain C++17 with no header of its own and no library call.
#ifndef WIDEFUSE_REDUCTION_TREE
#define WIDEFUSE_REDUCTION_TREE

#ifdef __CUDACC__
#define WF_TREE_FN __host__ __device__ __forceinline__
#else
#define WF_TREE_FN inline
#endif

/// sum: an add rounded once, never contracted with the leaf's multiply (the leaf is a value
/// of its own here). Integer sums wrap, as two's complement does.
struct wf_tree_sum {
  template <typename T> WF_TREE_FN static T combine(T a, T b) {
    if constexpr (T(0.5) != T(0)) {
#ifdef __CUDA_ARCH__
      if constexpr (sizeof(T) == 4) // an add the device compiler may not fuse into an fma
        return __fadd_rn(a, b);
      else
        return __dadd_rn(a, b);
#else
      return a + b;
#endif
    } else if constexpr (T(-1) > T(0))
      return a + b;
    else
      return T((unsigned long long)a + (unsigned long long)b);
  }
};

/// max: NaN wins; -0.0 counts below +0.0, so the result does not depend on the order.
/// Selects, no early return: the host compiler vectorizes a loop of them.
struct wf_tree_max {
  template <typename T> WF_TREE_FN static T combine(T a, T b) {
    const T larger = a > b ? a : b;
    // Equal zeros of either sign: +0.0 + -0.0 is +0.0 (a + b is only added when a is zero).
    const T equal = a == T(0) ? T(a + b) : a;
    const T numbers = a == b ? equal : larger;
    const T nan_b = b != b ? b : numbers;
    return a != a ? a : nan_b;
  }
};

/// min: NaN wins; -0.0 counts below +0.0.
struct wf_tree_min {
  template <typename T> WF_TREE_FN static T combine(T a, T b) {
    const T smaller = a < b ? a : b;
    // Equal zeros of either sign: -(-0.0 + +0.0) is -0.0.
    const T equal = a == T(0) ? T(-(-a + -b)) : a;
    const T numbers = a == b ? equal : smaller;
    const T nan_b = b != b ? b : numbers;
    return a != a ? a : nan_b;
  }
};

/// any: a logical or of truth values.
struct wf_tree_any {
  template <typename T> WF_TREE_FN static T combine(T a, T b) { return a || b; }
};

/// all: a logical and of truth values.
struct wf_tree_all {
  template <typename T> WF_TREE_FN static T combine(T a, T b) { return a && b; }
};

/// The pairwise tree over a stream of subtrees of equal size, pushed in order, some of them
/// possibly missing: a binary counter. Subtree `j` is pushed at level 0 and combined with the
/// pending subtree of each level it fills; finish() combines what is pending from the lowest
/// level up, so that `T(i, 2m) = T(i, m) + T(i + m, m)` with `a + missing = a` holds for every
/// count, as the recursive definition gives.
template <typename T, typename Op> struct wf_tree_counter {
  T pending[64];
  bool present[64];
  unsigned long long pushed = 0;

  /// Pushes the next subtree; `here` false pushes a missing one.
  WF_TREE_FN void push(T value, bool here = true) {
    unsigned level = 0;
    for (unsigned long long j = pushed; j & 1; j >>= 1, ++level)
      join(pending[level], present[level], value, here);
    pending[level] = value;
    present[level] = here;
    ++pushed;
  }

  /// The tree over everything pushed; false in `*here` when every subtree was missing.
  WF_TREE_FN T finish(bool* here) const {
    T value{};
    bool some = false;
    unsigned level = 0;
    for (unsigned long long j = pushed; j; j >>= 1, ++level)
      if (j & 1)
        join(pending[level], present[level], value, some);
    *here = some;
    return value;
  }

private:
  /// `right` becomes `left + right`, where either may be missing.
  WF_TREE_FN static void join(T left, bool leftHere, T& right, bool& rightHere) {
    if (leftHere && rightHere)
      right = Op::combine(left, right);
    else if (leftHere)
      right = left;
    rightHere = leftHere || rightHere;
  }
};

#endif // WIDEFUSE_REDUCTION_TREE
