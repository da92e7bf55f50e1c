// The inverse error functions erfinv and erfcinv on the host. C++ has no std:: version, so
// this one text is shared: the reference evaluator (ir/element_ops.h) includes it, and the
// CUDA prelude's host path (codegen/prelude_special.cuh) embeds it, so the host backend and
// the reference agree bit for bit. Generated device code calls CUDA's erfinv/erfcinv instead.
//
// It is plain C++17 over float and double with no header of its own (the includer provides
// <cmath>), and it calls the C function of T's own precision (erff for float), as std:: does.
// Both includers compile without contraction into fma (-ffp-contract=off / strict ISO mode).
//
// Method, in double: a rational first approximation (central for |t| <= 0.7, a tail in
// sqrt(-log q) beyond), refined by Newton steps on erf near 0 and on log(erfc) in the tails.
#ifndef WIDEFUSE_INVERSE_ERF
#define WIDEFUSE_INVERSE_ERF

// C functions of T's precision: unqualified erf(float) would call the double erf.
#define WF_HOST_BY_PRECISION(f32_call, f64_call)                                                   \
  if constexpr (sizeof(T) == 4)                                                                    \
    return f32_call;                                                                               \
  else                                                                                             \
    return f64_call
template <typename T> inline T wf_host_erf(T x) {
  WF_HOST_BY_PRECISION(erff(x), erf(x));
}
template <typename T> inline T wf_host_erfc(T x) {
  WF_HOST_BY_PRECISION(erfcf(x), erfc(x));
}
template <typename T> inline T wf_host_exp(T x) {
  WF_HOST_BY_PRECISION(expf(x), exp(x));
}
template <typename T> inline T wf_host_log(T x) {
  WF_HOST_BY_PRECISION(logf(x), log(x));
}
template <typename T> inline T wf_host_sqrt(T x) {
  WF_HOST_BY_PRECISION(sqrtf(x), sqrt(x));
}
/// The default quiet NaN and +infinity as constants (a computed 0/0 may differ in its sign bit
/// between a folded and a run-time evaluation).
template <typename T> inline T wf_host_nan() {
  WF_HOST_BY_PRECISION(__builtin_nanf(""), __builtin_nan(""));
}
template <typename T> inline T wf_host_infinity() {
  WF_HOST_BY_PRECISION(__builtin_huge_valf(), __builtin_huge_val());
}
#undef WF_HOST_BY_PRECISION

/// erf'(x) = 2 / sqrt(pi) * exp(-x^2).
template <typename T> inline T wf_erf_slope(T x) {
  return T(1.1283791670955126) * wf_host_exp(-(x * x));
}

/// First approximation of erfinv(y) for |y| <= 0.7.
template <typename T> inline T wf_erfinv_central(T y) {
  const T z = y * y;
  const T numerator =
      ((T(-0.140543331) * z + T(0.914624893)) * z + T(-1.645349621)) * z + T(0.886226899);
  const T denominator =
      (((T(0.012229801) * z + T(-0.329097515)) * z + T(1.442710462)) * z + T(-2.118377725)) * z +
      T(1);
  return y * numerator / denominator;
}

/// First approximation of erfinv(1 - q) = erfcinv(q) for small q > 0, from
/// z = sqrt(-log(q / 2)) (written log(2) - log(q) so that a subnormal q does not underflow).
template <typename T> inline T wf_erfinv_tail(T q) {
  const T z = wf_host_sqrt(T(0.6931471805599453) - wf_host_log(q));
  const T numerator =
      ((T(1.641345311) * z + T(3.429567803)) * z + T(-1.624906493)) * z + T(-1.970840454);
  const T denominator = (T(1.6370678) * z + T(3.5438892)) * z + T(1);
  return numerator / denominator;
}

/// The x > 0 with erfc(x) = q, for 0 < q < 0.5, in double. Newton's method on
/// log(erfc(x)) - log(q) (derivative -erf'(x) / erfc(x)): erfc keeps its relative accuracy in
/// the tail, where erf(x) rounds to 1, and the logarithm keeps the steps quadratic.
inline double wf_erfc_solve(double q) {
  double x = wf_erfinv_tail(q);
  for (int i = 0; i < 4; ++i) {
    if (x > 26) {
      // erfc(x) is subnormal or 0 here: log(erfc(x)) from its asymptotic series instead,
      // -x^2 - log(x sqrt(pi)) + log(1 - 1/(2x^2) + 3/(4x^4) - ...), and its derivative
      // -(2x + 1/x) to within 1e-6.
      const double r = 1 / (x * x);
      const double series =
          1 + r * (-0.5 + r * (0.75 + r * (-1.875 + r * (6.5625 + r * -29.53125))));
      const double logErfc = -(x * x) - wf_host_log(x) - 0.5723649429247001 + wf_host_log(series);
      x = x + (logErfc - wf_host_log(q)) / (2 * x + 1 / x);
      continue;
    }
    const double value = wf_host_erfc(x), slope = wf_erf_slope(x);
    if (!(value > 0) || !(slope > 0))
      break; // cannot happen below x = 26; kept as a guard against a NaN estimate
    x = x + (wf_host_log(value) - wf_host_log(q)) * value / slope;
  }
  return x;
}

/// The x with erf(x) = t for |t| <= 0.7, in double: Newton's method on erf.
inline double wf_erf_solve(double t) {
  double x = wf_erfinv_central(t);
  for (int i = 0; i < 3; ++i)
    x = x - (wf_host_erf(x) - t) / wf_erf_slope(x);
  return x;
}

/// erfinv(y): erfinv(+-1) = +-inf, NaN outside [-1, 1] and for NaN, erfinv(-0) = -0. f32
/// is computed in double and rounded once (erff's own rounding would cost many ulps near 1).
template <typename T> inline T wf_erfinv_host(T y) {
  // A NaN comes back quieted by arithmetic: a compiler that assumes no signaling NaNs may
  // drop the float-double round trip, which would quiet it in one build and not another.
  if (y != y)
    return y + y;
  if constexpr (sizeof(T) == 4) {
    return T(wf_erfinv_host(double(y)));
  } else {
    const double magnitude = y < 0 ? -y : y;
    if (magnitude > 1)
      return wf_host_nan<double>();
    if (magnitude == 1)
      return y * wf_host_infinity<double>();
    if (magnitude <= 0.7)
      return wf_erf_solve(y);
    const double x = wf_erfc_solve(1 - magnitude); // 1 - magnitude is exact here
    return y < 0 ? -x : x;
  }
}

/// erfcinv(y) = erfinv(1 - y) without the cancellation: erfcinv(0) = inf, erfcinv(2) = -inf,
/// NaN outside [0, 2] and for NaN. f32 is computed in double and rounded once.
template <typename T> inline T wf_erfcinv_host(T y) {
  // A NaN comes back quieted by arithmetic: a compiler that assumes no signaling NaNs may
  // drop the float-double round trip, which would quiet it in one build and not another.
  if (y != y)
    return y + y;
  if constexpr (sizeof(T) == 4) {
    return T(wf_erfcinv_host(double(y)));
  } else {
    if (y < 0 || y > 2)
      return wf_host_nan<double>();
    if (y >= 0.5 && y <= 1.5)
      return wf_erf_solve(1 - y); // exact (Sterbenz)
    // erfcinv(2 - q) = -erfcinv(q); 2 - y is exact for y in (1.5, 2].
    const bool upper = y > 1;
    const double q = upper ? 2 - y : y;
    if (q == 0)
      return upper ? -wf_host_infinity<double>() : wf_host_infinity<double>();
    const double x = wf_erfc_solve(q);
    return upper ? -x : x;
  }
}

#endif // WIDEFUSE_INVERSE_ERF
