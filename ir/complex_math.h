// Complex numbers (c64, c128): their storage and the one text of their arithmetic and
// elementary functions. The reference evaluator (ir/element_ops.h) includes this file, and the
// CUDA prelude (codegen/prelude.cuh) embeds it for the device and the host backend, so the
// host backend and the reference agree bit for bit; on the device the real functions it calls
// (sinf, expf, ...) are CUDA's, which may differ in the last place.
//
// It is plain C++17 over float and double with no header of its own (the includer provides
// <cmath> on the host; NVRTC has the functions built in), and it calls the C function of T's
// own precision (sinf for float), as std:: does. Its products go through wf_complex_mul_rn, so
// that no compiler fuses them into an fma (see there).
//
// The formulas are the textbook ones torch's c10::complex computes on the CPU, with care at
// the edges torch's results show (docs/ir_reference.md, "Complex numbers"): multiplication is
// (ac - bd) + (ad + bc)i without C99's infinity recovery, division is Smith's algorithm,
// abs is hypot, tanh is Kahan's. Where a part is infinite or NaN, the functions give C99's
// Annex G values, with glibc's choices where Annex G leaves a sign open (torch's CPU kernels
// call glibc); those cases sit behind a comparison that finite values pass, so that these
// keep the textbook formulas' bits.
#ifndef WIDEFUSE_COMPLEX_MATH
#define WIDEFUSE_COMPLEX_MATH

#ifdef __CUDACC__
#define WF_COMPLEX_FN __device__ __forceinline__
#else
#define WF_COMPLEX_FN inline
#endif

/// A complex number as torch stores one: the real part, then the imaginary part, aligned to
/// the pair's size (c10::complex's layout).
template <typename T> struct alignas(2 * sizeof(T)) wf_complex_number { T re, im; };

// The C function of T's precision: unqualified sin(float) would call the double sin.
#define WF_COMPLEX_BY_PRECISION(f32_call, f64_call)                                                \
  if constexpr (sizeof(T) == 4)                                                                    \
    return f32_call;                                                                               \
  else                                                                                             \
    return f64_call
#define WF_COMPLEX_REAL_FUNCTION(name, f32_function, f64_function)                                 \
  template <typename T> WF_COMPLEX_FN T wf_complex_real_##name(T x) {                              \
    WF_COMPLEX_BY_PRECISION(f32_function(x), f64_function(x));                                     \
  }
WF_COMPLEX_REAL_FUNCTION(sin, sinf, sin)
WF_COMPLEX_REAL_FUNCTION(cos, cosf, cos)
WF_COMPLEX_REAL_FUNCTION(tan, tanf, tan)
WF_COMPLEX_REAL_FUNCTION(sinh, sinhf, sinh)
WF_COMPLEX_REAL_FUNCTION(cosh, coshf, cosh)
WF_COMPLEX_REAL_FUNCTION(exp, expf, exp)
WF_COMPLEX_REAL_FUNCTION(log, logf, log)
WF_COMPLEX_REAL_FUNCTION(log1p, log1pf, log1p)
WF_COMPLEX_REAL_FUNCTION(sqrt, sqrtf, sqrt)
WF_COMPLEX_REAL_FUNCTION(fabs, fabsf, fabs)
#undef WF_COMPLEX_REAL_FUNCTION
template <typename T> WF_COMPLEX_FN T wf_complex_real_hypot(T x, T y) {
  WF_COMPLEX_BY_PRECISION(hypotf(x, y), hypot(x, y));
}
template <typename T> WF_COMPLEX_FN T wf_complex_real_atan2(T y, T x) {
  WF_COMPLEX_BY_PRECISION(atan2f(y, x), atan2(y, x));
}
template <typename T> WF_COMPLEX_FN T wf_complex_real_copysign(T x, T y) {
  WF_COMPLEX_BY_PRECISION(copysignf(x, y), copysign(x, y));
}
/// The largest finite T; |x| <= it is false for infinities and NaNs, so the special cases of
/// C99's Annex G cost one comparison per part on finite values.
template <typename T> WF_COMPLEX_FN T wf_complex_real_max() {
  return T(sizeof(T) == 4 ? 0x1.fffffep+127 : 0x1.fffffffffffffp+1023);
}
template <typename T> WF_COMPLEX_FN bool wf_complex_real_isfinite(T x) {
  return wf_complex_real_fabs(x) <= wf_complex_real_max<T>();
}
template <typename T> WF_COMPLEX_FN bool wf_complex_real_isinf(T x) {
  return wf_complex_real_fabs(x) > wf_complex_real_max<T>();
}
template <typename T> WF_COMPLEX_FN T wf_complex_real_inf() {
  return T(1) / T(0);
}

/// x * y rounded on its own (never contracted into an fma). On the host an empty asm holds
/// the product in a register: GCC 12's vectorizer recognizes (ac - bd, ad + bc) as a complex
/// multiplication and emits vfmaddsub for it even under -ffp-contract=off, one rounding
/// fewer than the reference (found by the host backend's every-op test on c128).
template <typename T> WF_COMPLEX_FN T wf_complex_mul_rn(T x, T y) {
#ifdef __CUDA_ARCH__
  WF_COMPLEX_BY_PRECISION(__fmul_rn(x, y), __dmul_rn(x, y));
#else
  T product = x * y;
#if defined(__x86_64__)
  __asm__("" : "+x"(product));
#elif defined(__aarch64__)
  __asm__("" : "+w"(product));
#endif
  return product;
#endif
}
#undef WF_COMPLEX_BY_PRECISION

template <typename T> using wf_cx = wf_complex_number<T>;

// ---- construction, parts, classification ----------------------------------------------------

template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_make(T re, T im) {
  wf_cx<T> z;
  z.re = re;
  z.im = im;
  return z;
}
/// The magnitude, without intermediate overflow: hypot(re, im) (inf when a part is infinite,
/// even beside a NaN).
template <typename T> WF_COMPLEX_FN T wf_complex_abs(wf_cx<T> z) {
  return wf_complex_real_hypot(z.re, z.im);
}
template <typename T> WF_COMPLEX_FN bool wf_complex_isnan(wf_cx<T> z) {
  return z.re != z.re || z.im != z.im;
}
template <typename T> WF_COMPLEX_FN bool wf_complex_isinf(wf_cx<T> z) {
  return wf_complex_real_isinf(z.re) || wf_complex_real_isinf(z.im);
}
template <typename T> WF_COMPLEX_FN bool wf_complex_isfinite(wf_cx<T> z) {
  return wf_complex_real_isfinite(z.re) && wf_complex_real_isfinite(z.im);
}
/// The truth value of z (a condition, a cast to b8): true unless both parts are zero.
template <typename T> WF_COMPLEX_FN bool wf_complex_truth(wf_cx<T> z) {
  return z.re != T(0) || z.im != T(0);
}
template <typename T> WF_COMPLEX_FN bool wf_complex_eq(wf_cx<T> a, wf_cx<T> b) {
  return a.re == b.re && a.im == b.im;
}

// ---- arithmetic -------------------------------------------------------------------------------

template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_neg(wf_cx<T> z) {
  return wf_complex_make(-z.re, -z.im);
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_add(wf_cx<T> a, wf_cx<T> b) {
  return wf_complex_make(a.re + b.re, a.im + b.im);
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_sub(wf_cx<T> a, wf_cx<T> b) {
  return wf_complex_make(a.re - b.re, a.im - b.im);
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_mul(wf_cx<T> a, wf_cx<T> b) {
  return wf_complex_make(wf_complex_mul_rn(a.re, b.re) - wf_complex_mul_rn(a.im, b.im),
                         wf_complex_mul_rn(a.re, b.im) + wf_complex_mul_rn(a.im, b.re));
}
/// C99's product (Annex G, libgcc's __muldc3): the textbook one, except that where both of
/// its parts are NaN and a factor is infinite (or a product overflowed), the NaNs beside an
/// infinity become zeros, the infinities +-1, and the result is inf times that product:
/// (inf + inf i)(1 + 0i) = inf + inf i, not NaN + NaN i. Only pow uses it, as glibc's cpow does
/// (torch's mul has no such recovery; neither has ours, wf_complex_mul).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_mul_annex_g(wf_cx<T> x, wf_cx<T> y) {
  const wf_cx<T> product = wf_complex_mul(x, y);
  if (product.re == product.re || product.im == product.im)
    return product;
  T a = x.re, b = x.im, c = y.re, d = y.im;
  // An infinity becomes +-1 and a finite part +-0; a NaN becomes +-0 in the other factor.
  auto box = [](T& p, T& q) {
    p = wf_complex_real_copysign(wf_complex_real_isinf(p) ? T(1) : T(0), p);
    q = wf_complex_real_copysign(wf_complex_real_isinf(q) ? T(1) : T(0), q);
  };
  auto nan_to_zero = [](T& p) {
    if (p != p)
      p = wf_complex_real_copysign(T(0), p);
  };
  bool recompute = false;
  if (wf_complex_real_isinf(a) || wf_complex_real_isinf(b)) {
    box(a, b);
    nan_to_zero(c);
    nan_to_zero(d);
    recompute = true;
  }
  if (wf_complex_real_isinf(c) || wf_complex_real_isinf(d)) {
    box(c, d);
    nan_to_zero(a);
    nan_to_zero(b);
    recompute = true;
  }
  const bool overflowed = wf_complex_real_isinf(x.re * y.re) ||
                          wf_complex_real_isinf(x.im * y.im) ||
                          wf_complex_real_isinf(x.re * y.im) || wf_complex_real_isinf(x.im * y.re);
  if (!recompute && overflowed) {
    nan_to_zero(a);
    nan_to_zero(b);
    nan_to_zero(c);
    nan_to_zero(d);
    recompute = true;
  }
  if (!recompute)
    return product;
  const wf_cx<T> boxed = wf_complex_mul(wf_complex_make(a, b), wf_complex_make(c, d));
  const T inf = wf_complex_real_inf<T>();
  return wf_complex_make(inf * boxed.re, inf * boxed.im);
}
/// Smith's algorithm: divides by the larger of |c| and |d| first, so that c^2 + d^2 never
/// overflows. A zero divisor gives a / 0 and b / 0 part by part (infinities or NaNs).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_div(wf_cx<T> x, wf_cx<T> y) {
  const T a = x.re, b = x.im, c = y.re, d = y.im;
  const T abs_c = wf_complex_real_fabs(c), abs_d = wf_complex_real_fabs(d);
  if (abs_c >= abs_d) {
    if (abs_c == T(0) && abs_d == T(0))
      return wf_complex_make(a / abs_c, b / abs_d);
    const T ratio = d / c, scale = T(1) / (c + wf_complex_mul_rn(d, ratio));
    return wf_complex_make(wf_complex_mul_rn(a + wf_complex_mul_rn(b, ratio), scale),
                           wf_complex_mul_rn(b - wf_complex_mul_rn(a, ratio), scale));
  }
  const T ratio = c / d, scale = T(1) / (d + wf_complex_mul_rn(c, ratio));
  return wf_complex_make(wf_complex_mul_rn(wf_complex_mul_rn(a, ratio) + b, scale),
                         wf_complex_mul_rn(wf_complex_mul_rn(b, ratio) - a, scale));
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_reciprocal(wf_cx<T> z) {
  return wf_complex_div(wf_complex_make(T(1), T(0)), z);
}

// ---- elementary functions ---------------------------------------------------------------------

/// e^re (cos im + i sin im); a real argument (im == 0) gives exp(re) exactly, with im kept.
/// Annex G: an infinite re beside an infinite or NaN im gives inf + NaN i or 0 +- 0i, where
/// the product would be inf * NaN or 0 * NaN.
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_exp(wf_cx<T> z) {
  const T magnitude = wf_complex_real_exp(z.re);
  if (z.im == T(0))
    return wf_complex_make(magnitude, z.im);
  if (!wf_complex_real_isfinite(z.im) && wf_complex_real_isinf(z.re))
    return z.re > T(0) ? wf_complex_make(z.re, z.im - z.im)
                       : wf_complex_make(T(0), wf_complex_real_copysign(T(0), z.im));
  if (wf_complex_real_isinf(magnitude) && wf_complex_real_isfinite(z.re)) {
    // e^re overflows, e^re cos im need not (as glibc's cexp): multiply by e^(re/2) twice.
    const T half = wf_complex_real_exp(T(0.5) * z.re);
    return wf_complex_make(
        wf_complex_mul_rn(wf_complex_mul_rn(half, wf_complex_real_cos(z.im)), half),
        wf_complex_mul_rn(wf_complex_mul_rn(half, wf_complex_real_sin(z.im)), half));
  }
  return wf_complex_make(wf_complex_mul_rn(magnitude, wf_complex_real_cos(z.im)),
                         wf_complex_mul_rn(magnitude, wf_complex_real_sin(z.im)));
}
/// log|z| + i arg(z), arg in [-pi, pi] (the sign of a zero imaginary part picks the side).
/// Near |z| = 1, log|z| = log1p(|z|^2 - 1) / 2 with |z|^2 - 1 = (re - 1)(re + 1) + im^2, which
/// keeps the digits log(hypot) loses to the rounding of |z| (log(1 + 0.001i) in f32).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_log(wf_cx<T> z) {
  const T magnitude = wf_complex_abs(z);
  T log_magnitude;
  if (magnitude > T(0.75) && magnitude < T(1.25)) {
    const T excess = wf_complex_mul_rn(z.re - T(1), z.re + T(1)) + wf_complex_mul_rn(z.im, z.im);
    log_magnitude = wf_complex_mul_rn(T(0.5), wf_complex_real_log1p(excess));
  } else {
    log_magnitude = wf_complex_real_log(magnitude);
  }
  return wf_complex_make(log_magnitude, wf_complex_real_atan2(z.im, z.re));
}
/// log(z) / log(base), part by part.
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_log_base(wf_cx<T> z, T log_base) {
  const wf_cx<T> l = wf_complex_log(z);
  return wf_complex_make(l.re / log_base, l.im / log_base);
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_log10(wf_cx<T> z) {
  return wf_complex_log_base(z, T(2.30258509299404568401799145468436421));
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_log2(wf_cx<T> z) {
  return wf_complex_log_base(z, T(0.693147180559945309417232121458176568));
}
/// The principal square root (re >= 0; its imaginary part has the sign of z.im), computed
/// from sqrt((|re| + |z|) / 2), which cancels nothing.
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_sqrt(wf_cx<T> z) {
  if (z.re == T(0) && z.im == T(0))
    return wf_complex_make(T(0), z.im);
  if (wf_complex_real_isinf(z.im)) // sqrt(x +- i inf) = inf +- i inf, even for a NaN x
    return wf_complex_make(z.im > T(0) ? z.im : -z.im, z.im);
  const T t = wf_complex_real_sqrt(
      wf_complex_mul_rn(wf_complex_real_fabs(z.re) + wf_complex_abs(z), T(0.5)));
  if (z.re >= T(0))
    return wf_complex_make(t, z.im / (t + t));
  return wf_complex_make(wf_complex_real_fabs(z.im) / (t + t), wf_complex_real_copysign(t, z.im));
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_rsqrt(wf_cx<T> z) {
  return wf_complex_reciprocal(wf_complex_sqrt(z));
}
/// a^b = exp(b log a) with C99's product (wf_complex_mul_annex_g), as glibc's cpow, which
/// torch's CPU pow calls. A zero base meets log 0 = -inf: 0 when Re(b) > 0, inf + NaN i when
/// Re(b) < 0, NaN + NaN i otherwise (0^0 included).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_pow(wf_cx<T> a, wf_cx<T> b) {
  return wf_complex_exp(wf_complex_mul_annex_g(b, wf_complex_log(a)));
}
/// sinh re cos im + i cosh re sin im. A zero im gives sinh(re) + i im, also where cosh re
/// overflows (inf * 0 would be NaN); Annex G's cases for an infinite or NaN im beside a zero
/// or infinite re (+-0 + NaN i, inf + NaN i; glibc's csinh picks +inf) come before the product.
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_sinh(wf_cx<T> z) {
  if (z.im == T(0))
    return wf_complex_make(wf_complex_real_sinh(z.re), z.im);
  if (!wf_complex_real_isfinite(z.im) && (z.re == T(0) || wf_complex_real_isinf(z.re)))
    return wf_complex_make(z.re == T(0) ? z.re : wf_complex_real_inf<T>(), z.im - z.im);
  return wf_complex_make(wf_complex_mul_rn(wf_complex_real_sinh(z.re), wf_complex_real_cos(z.im)),
                         wf_complex_mul_rn(wf_complex_real_cosh(z.re), wf_complex_real_sin(z.im)));
}
/// cosh re cos im + i sinh re sin im. A zero im gives cosh(re) + i (+-0), the sign of sinh re
/// times im's (im itself for a NaN re), also where sinh re overflows; an infinite or NaN im
/// beside a zero re gives NaN + 0i, beside an infinite re inf + NaN i (Annex G, glibc's signs).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_cosh(wf_cx<T> z) {
  if (z.im == T(0))
    return wf_complex_make(
        wf_complex_real_cosh(z.re),
        z.re != z.re ? z.im : wf_complex_mul_rn(wf_complex_real_copysign(T(0), z.re), z.im));
  if (!wf_complex_real_isfinite(z.im) && (z.re == T(0) || wf_complex_real_isinf(z.re)))
    return z.re == T(0) ? wf_complex_make(z.im - z.im, T(0))
                        : wf_complex_make(wf_complex_real_inf<T>(), z.im - z.im);
  return wf_complex_make(wf_complex_mul_rn(wf_complex_real_cosh(z.re), wf_complex_real_cos(z.im)),
                         wf_complex_mul_rn(wf_complex_real_sinh(z.re), wf_complex_real_sin(z.im)));
}
/// sin z = -i sinh(iz), as Annex G defines it (the same products as sin re cosh im + i cos re
/// sinh im, as sinh is odd and cosh even). An infinite im beside an infinite or NaN re gives
/// NaN + inf i (the sign of the infinity is unspecified; glibc's csin, torch's, picks +).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_sin(wf_cx<T> z) {
  if (wf_complex_real_isinf(z.im) && !wf_complex_real_isfinite(z.re))
    return wf_complex_make(z.re - z.re, wf_complex_real_inf<T>());
  const wf_cx<T> s = wf_complex_sinh(wf_complex_make(-z.im, z.re));
  return wf_complex_make(s.im, -s.re);
}
/// cos z = cosh(iz).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_cos(wf_cx<T> z) {
  return wf_complex_cosh(wf_complex_make(-z.im, z.re));
}
/// tanh where im is infinite or NaN, or re is NaN (Annex G, as glibc's ctanh): +-1 +- 0i for an
/// infinite re, z for a NaN re beside a zero im, +-0 + NaN i for a zero re, else NaN + NaN i.
/// (An infinite re beside a finite im takes the large-|re| formula: +-1 + 0i sin(2 im).)
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_tanh_special(wf_cx<T> z) {
  const T nan = wf_complex_real_inf<T>() - wf_complex_real_inf<T>();
  if (wf_complex_real_isinf(z.re))
    return wf_complex_make(wf_complex_real_copysign(T(1), z.re),
                           wf_complex_real_copysign(T(0), z.im));
  if (z.im == T(0))
    return z;
  return wf_complex_make(z.re == T(0) ? z.re : nan, nan);
}
/// Kahan's tanh: with t = tan(im), s = sinh(re), beta = 1 + t^2 and rho = sqrt(1 + s^2),
/// tanh z = (beta rho s + i t) / (1 + beta s^2). Past |re| = 9 (f32) or 22 (f64), where
/// tanh(re) rounds to +-1, the real part is +-1 and the imaginary part 4 sin cos e^(-2|re|),
/// so that s^2 does not overflow.
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_tanh(wf_cx<T> z) {
  if (!wf_complex_real_isfinite(z.im) || z.re != z.re)
    return wf_complex_tanh_special(z);
  const T limit = T(sizeof(T) == 4 ? 9 : 22);
  if (wf_complex_real_fabs(z.re) > limit) {
    const T decay = wf_complex_real_exp(T(-2) * wf_complex_real_fabs(z.re));
    const T sin_cos = wf_complex_mul_rn(wf_complex_real_sin(z.im), wf_complex_real_cos(z.im));
    return wf_complex_make(wf_complex_real_copysign(T(1), z.re),
                           wf_complex_mul_rn(T(4) * sin_cos, decay));
  }
  const T t = wf_complex_real_tan(z.im), s = wf_complex_real_sinh(z.re);
  const T beta = T(1) + wf_complex_mul_rn(t, t);
  const T rho = wf_complex_real_sqrt(T(1) + wf_complex_mul_rn(s, s));
  const T denominator = T(1) + wf_complex_mul_rn(beta, wf_complex_mul_rn(s, s));
  return wf_complex_make(wf_complex_mul_rn(wf_complex_mul_rn(beta, rho), s) / denominator,
                         t / denominator);
}
/// tan z = -i tanh(i z).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_tan(wf_cx<T> z) {
  const wf_cx<T> t = wf_complex_tanh(wf_complex_make(-z.im, z.re));
  return wf_complex_make(t.im, -t.re);
}
/// 1 / (1 + e^-z).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_sigmoid(wf_cx<T> z) {
  const wf_cx<T> e = wf_complex_exp(wf_complex_neg(z));
  return wf_complex_reciprocal(wf_complex_make(T(1) + e.re, e.im));
}

// ---- inverse functions ------------------------------------------------------------------------
// Computed in f64 for both widths: the log of z + sqrt(z^2 + 1) and its kin loses digits near
// the branch points and for small |z|, which f64 leaves below an f32 ulp. Branch cuts follow
// C99 (Annex G, as torch): the sign of a zero part picks the side.

// Annex G's values where a part is infinite or NaN, with glibc's choices where it leaves a sign
// unspecified (torch's CPU kernels call glibc). The formulas below would give NaNs there.
#define WF_COMPLEX_PI_4 0.785398163397448309615660845819875721
#define WF_COMPLEX_PI_2 1.57079632679489661923132169163975144
#define WF_COMPLEX_PI 3.14159265358979323846264338327950288
/// asinh: inf + i(pi/2, pi/4 or NaN) for an infinite im (the real part has re's sign); re + 0i
/// for an infinite re beside a finite im, or a NaN re beside a zero im; otherwise NaNs.
WF_COMPLEX_FN wf_cx<double> wf_complex_asinh_special_f64(wf_cx<double> z) {
  const double inf = wf_complex_real_inf<double>(), nan = inf - inf;
  if (wf_complex_real_isinf(z.im)) {
    const double angle = wf_complex_real_isinf(z.re) ? WF_COMPLEX_PI_4 : WF_COMPLEX_PI_2;
    return wf_complex_make(wf_complex_real_copysign(inf, z.re),
                           z.re != z.re ? nan : wf_complex_real_copysign(angle, z.im));
  }
  if (wf_complex_real_isfinite(z.re))
    return wf_complex_make(nan, nan); // a NaN im
  const bool real = wf_complex_real_isinf(z.re) ? wf_complex_real_isfinite(z.im) : z.im == 0.0;
  return wf_complex_make(z.re, real ? wf_complex_real_copysign(0.0, z.im) : nan);
}
/// acosh: inf + i(pi/2, pi/4, 3pi/4 or NaN) for an infinite im; inf + i(0 or pi) for an
/// infinite re beside a finite im (pi for -inf), inf + NaN i beside a NaN; NaN + i pi/2 for
/// a zero re beside a NaN im; otherwise NaNs.
WF_COMPLEX_FN wf_cx<double> wf_complex_acosh_special_f64(wf_cx<double> z) {
  const double inf = wf_complex_real_inf<double>(), nan = inf - inf;
  if (wf_complex_real_isinf(z.im)) {
    const double angle = !wf_complex_real_isinf(z.re) ? WF_COMPLEX_PI_2
                         : z.re < 0.0                 ? 3 * WF_COMPLEX_PI_4
                                                      : WF_COMPLEX_PI_4;
    return wf_complex_make(inf, z.re != z.re ? nan : wf_complex_real_copysign(angle, z.im));
  }
  if (wf_complex_real_isinf(z.re)) {
    const double angle = z.re < 0.0 ? WF_COMPLEX_PI : 0.0;
    return wf_complex_make(inf, z.im != z.im ? nan : wf_complex_real_copysign(angle, z.im));
  }
  return wf_complex_make(nan, z.re == 0.0 ? WF_COMPLEX_PI_2 : nan);
}
/// atanh: +-0 + i(+-pi/2) for an infinite im, or an infinite re beside a finite im; +-0 + NaN i
/// for an infinite or zero re beside a NaN im; otherwise NaNs.
WF_COMPLEX_FN wf_cx<double> wf_complex_atanh_special_f64(wf_cx<double> z) {
  const double nan = wf_complex_real_inf<double>() - wf_complex_real_inf<double>();
  if (!wf_complex_real_isinf(z.im) && !wf_complex_real_isinf(z.re) && z.re != 0.0)
    return wf_complex_make(nan, nan);
  return wf_complex_make(wf_complex_real_copysign(0.0, z.re),
                         z.im != z.im ? nan : wf_complex_real_copysign(WF_COMPLEX_PI_2, z.im));
}

/// asinh z = log(z + sqrt(z^2 + 1)) for Re z >= +0; an odd function; log(2z) once z^2 + 1
/// rounds to z^2.
WF_COMPLEX_FN wf_cx<double> wf_complex_asinh_f64(wf_cx<double> z) {
  if (!wf_complex_isfinite(z))
    return wf_complex_asinh_special_f64(z);
  if (z.re < 0.0 || (z.re == 0.0 && wf_complex_real_copysign(1.0, z.re) < 0.0))
    return wf_complex_neg(wf_complex_asinh_f64(wf_complex_neg(z)));
  if (wf_complex_abs(z) > 0x1p27) {
    const wf_cx<double> l = wf_complex_log(z);
    return wf_complex_make(l.re + 0.693147180559945309417232121458176568, l.im);
  }
  const wf_cx<double> square = wf_complex_mul(z, z); // + 1 keeps the sign of a zero im
  const wf_cx<double> root = wf_complex_sqrt(wf_complex_make(square.re + 1.0, square.im));
  return wf_complex_log(wf_complex_add(z, root));
}
/// acosh z = log(z + sqrt(z + 1) sqrt(z - 1)); the real part is >= 0.
WF_COMPLEX_FN wf_cx<double> wf_complex_acosh_f64(wf_cx<double> z) {
  if (!wf_complex_isfinite(z))
    return wf_complex_acosh_special_f64(z);
  const wf_cx<double> plus = wf_complex_sqrt(wf_complex_make(z.re + 1.0, z.im));
  const wf_cx<double> minus = wf_complex_sqrt(wf_complex_make(z.re - 1.0, z.im));
  return wf_complex_log(wf_complex_add(z, wf_complex_mul(plus, minus)));
}
/// atanh z: Re = log(|1 + z|^2 / |1 - z|^2) / 4, through log1p(4x / |1 - z|^2) for |x| < 1/2
/// (where the quotient is near 1) and when a square overflows; Im = atan2(2y, (1 - x)(1 + x) -
/// y^2) / 2 (Kahan's).
WF_COMPLEX_FN wf_cx<double> wf_complex_atanh_f64(wf_cx<double> z) {
  if (!wf_complex_isfinite(z))
    return wf_complex_atanh_special_f64(z);
  const double x = z.re, y = z.im, one_minus = 1.0 - x, one_plus = 1.0 + x;
  const double y2 = wf_complex_mul_rn(y, y);
  const double denominator = wf_complex_mul_rn(one_minus, one_minus) + y2;
  const double numerator = wf_complex_mul_rn(one_plus, one_plus) + y2;
  const bool near_one =
      wf_complex_real_fabs(x) < 0.5 || numerator > 0x1p1000 || denominator > 0x1p1000;
  const double re = near_one ? 0.25 * wf_complex_real_log1p(4.0 * x / denominator)
                             : 0.25 * wf_complex_real_log(numerator / denominator);
  const double im =
      0.5 * wf_complex_real_atan2(2.0 * y, wf_complex_mul_rn(one_minus, one_plus) - y2);
  return wf_complex_make(re, im);
}

/// f(z) in f64, rounded once per part to T.
template <typename T, typename F> WF_COMPLEX_FN wf_cx<T> wf_complex_in_f64(wf_cx<T> z, F f) {
  const wf_cx<double> r = f(wf_complex_make(double(z.re), double(z.im)));
  return wf_complex_make(T(r.re), T(r.im));
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_asinh(wf_cx<T> z) {
  return wf_complex_in_f64(z, [](wf_cx<double> w) { return wf_complex_asinh_f64(w); });
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_acosh(wf_cx<T> z) {
  return wf_complex_in_f64(z, [](wf_cx<double> w) { return wf_complex_acosh_f64(w); });
}
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_atanh(wf_cx<T> z) {
  return wf_complex_in_f64(z, [](wf_cx<double> w) { return wf_complex_atanh_f64(w); });
}
/// asin z = -i asinh(iz).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_asin(wf_cx<T> z) {
  return wf_complex_in_f64(z, [](wf_cx<double> w) {
    const wf_cx<double> h = wf_complex_asinh_f64(wf_complex_make(-w.im, w.re));
    return wf_complex_make(h.im, -h.re);
  });
}
/// acos z = pi/2 - asin z.
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_acos(wf_cx<T> z) {
  return wf_complex_in_f64(z, [](wf_cx<double> w) {
    const wf_cx<double> h = wf_complex_asinh_f64(wf_complex_make(-w.im, w.re));
    return wf_complex_make(WF_COMPLEX_PI_2 - h.im, h.re);
  });
}
/// atan z = -i atanh(iz).
template <typename T> WF_COMPLEX_FN wf_cx<T> wf_complex_atan(wf_cx<T> z) {
  return wf_complex_in_f64(z, [](wf_cx<double> w) {
    const wf_cx<double> h = wf_complex_atanh_f64(wf_complex_make(-w.im, w.re));
    return wf_complex_make(h.im, -h.re);
  });
}

#undef WF_COMPLEX_PI_4
#undef WF_COMPLEX_PI_2
#undef WF_COMPLEX_PI

#endif // WIDEFUSE_COMPLEX_MATH
