// widefuse prelude, part three: the element ops on complex values (c64, c128). Each wf_<op>
// here is an overload of its real namesake, more specialized, so the generated call is the
// same text for every type; the arithmetic itself is ir/complex_math.h, the reference's own.
// codegen/prelude.cuh includes it after its other element ops, and the embedded prelude text
// has it inlined (codegen/CMakeLists.txt).
#ifndef WIDEFUSE_PRELUDE_COMPLEX
#define WIDEFUSE_PRELUDE_COMPLEX

#define WF_COMPLEX_UNARY(op)                                                                       \
  template <typename T> WF_DEVICE wf_complex_number<T> wf_##op(wf_complex_number<T> z) {           \
    return wf_complex_##op(z);                                                                     \
  }
WF_COMPLEX_UNARY(neg)
WF_COMPLEX_UNARY(reciprocal)
WF_COMPLEX_UNARY(sqrt)
WF_COMPLEX_UNARY(rsqrt)
WF_COMPLEX_UNARY(exp)
WF_COMPLEX_UNARY(log)
WF_COMPLEX_UNARY(log2)
WF_COMPLEX_UNARY(log10)
WF_COMPLEX_UNARY(sin)
WF_COMPLEX_UNARY(cos)
WF_COMPLEX_UNARY(tan)
WF_COMPLEX_UNARY(sinh)
WF_COMPLEX_UNARY(cosh)
WF_COMPLEX_UNARY(tanh)
WF_COMPLEX_UNARY(sigmoid)
WF_COMPLEX_UNARY(asin)
WF_COMPLEX_UNARY(acos)
WF_COMPLEX_UNARY(atan)
WF_COMPLEX_UNARY(asinh)
WF_COMPLEX_UNARY(acosh)
WF_COMPLEX_UNARY(atanh)
#undef WF_COMPLEX_UNARY

#define WF_COMPLEX_BINARY(op, function)                                                            \
  template <typename T>                                                                            \
  WF_DEVICE wf_complex_number<T> wf_##op(wf_complex_number<T> a, wf_complex_number<T> b) {         \
    return function(a, b);                                                                         \
  }
WF_COMPLEX_BINARY(add, wf_complex_add)
WF_COMPLEX_BINARY(sub, wf_complex_sub)
WF_COMPLEX_BINARY(mul, wf_complex_mul)
WF_COMPLEX_BINARY(div, wf_complex_div)
WF_COMPLEX_BINARY(truediv, wf_complex_div)
WF_COMPLEX_BINARY(pow, wf_complex_pow)
#undef WF_COMPLEX_BINARY

/// The magnitude, a real value.
template <typename T> WF_DEVICE T wf_abs(wf_complex_number<T> z) {
  return wf_complex_abs(z);
}

#define WF_COMPLEX_PREDICATE(op, expression)                                                       \
  template <typename T> WF_DEVICE b8 wf_##op(wf_complex_number<T> z) {                             \
    return expression;                                                                             \
  }
WF_COMPLEX_PREDICATE(isnan, wf_complex_isnan(z))
WF_COMPLEX_PREDICATE(isinf, wf_complex_isinf(z))
WF_COMPLEX_PREDICATE(isfinite, wf_complex_isfinite(z))
WF_COMPLEX_PREDICATE(isreal, z.im == T(0))
#undef WF_COMPLEX_PREDICATE

template <typename T> WF_DEVICE b8 wf_eq(wf_complex_number<T> a, wf_complex_number<T> b) {
  return wf_complex_eq(a, b);
}
template <typename T> WF_DEVICE b8 wf_ne(wf_complex_number<T> a, wf_complex_number<T> b) {
  return !wf_complex_eq(a, b);
}

/// The parts. real of a real value is the value (imag takes complex operands only).
template <typename T> WF_DEVICE T wf_real(wf_complex_number<T> z) {
  return z.re;
}
template <typename T> WF_DEVICE T wf_real(T a) {
  return a;
}
template <typename T> WF_DEVICE T wf_imag(wf_complex_number<T> z) {
  return z.im;
}
/// complex(re, im) of f32 or f64 parts.
template <typename T> WF_DEVICE wf_complex_number<T> wf_complex(T re, T im) {
  WF_REQUIRE(wf_is_floating, "complex");
  return wf_complex_make(re, im);
}

#endif // WIDEFUSE_PRELUDE_COMPLEX
