"""widefuse.trace: proxies, torch-style methods, copy_ / out= semantics, the signature cache
and the errors for what cannot be traced."""

import numpy as np
import pytest
from conftest import assert_close, fma32

import widefuse


def test_methods_match_numpy(rng):
    def step(p, a, b, c, w):
        blended = p.lerp(a, 0.25)
        return (p.addcmul(a, b, value=0.5), p.addcdiv(a, c, value=-2.0), blended,
                widefuse.where(a > b, a, b.neg()), p.clamp(-0.5, 0.5), p.add(a, alpha=3),
                p.sub(b, alpha=0.5), widefuse.maximum(a, b), p.sqrt().mul(2).div(w))

    p, a, b = (rng.standard_normal(257).astype(np.float32) for _ in range(3))
    c = rng.uniform(1, 2, 257).astype(np.float32)
    w = np.float32(4.0) * np.ones((), np.float32)
    outputs = widefuse.trace(step)(np.abs(p), a, b, c, w)
    q = np.abs(p)
    f32 = np.float32
    # addcmul, lerp and add/sub with alpha as torch's kernels round them: the last multiply
    # and the add fused (torch_arithmetic.py); addcdiv is not fused.
    expected = (fma32(f32(0.5) * a, b, q), q + f32(-2.0) * a / c, fma32(f32(0.25), a - q, q),
                np.where(a > b, a, -b), np.clip(q, -0.5, 0.5), fma32(f32(3), a, q),
                fma32(f32(-0.5), b, q), np.maximum(a, b), np.sqrt(q) * 2 / w)
    assert len(outputs) == len(expected)
    for index, (actual, wanted) in enumerate(zip(outputs, expected)):
        assert actual.dtype == wanted.dtype, index
        np.testing.assert_array_equal(actual, wanted, err_msg=str(index))


def test_copy_is_deferred_and_returns_the_source(rng):
    def bump(x):
        new = widefuse.copy_(x + 1, x)
        return x * 1, new * 1  # x still reads its entry value

    x = rng.standard_normal(10).astype(np.float32)
    entry = x.copy()
    old, new = widefuse.trace(bump)(x)
    np.testing.assert_array_equal(old, entry)
    np.testing.assert_array_equal(new, entry + 1)
    np.testing.assert_array_equal(x, entry + 1)


def test_out_argument_updates_in_place_and_later_reads_see_it(rng):
    def running_max(m, v):
        widefuse.maximum(m, v, out=m)
        return m * 2

    m = rng.standard_normal(33).astype(np.float32)
    v = rng.standard_normal(33).astype(np.float32)
    expected = np.maximum(m, v)
    (doubled,) = [widefuse.trace(running_max)(m, v)]
    np.testing.assert_array_equal(m, expected)
    np.testing.assert_array_equal(doubled, expected * 2)


def test_python_scalars_stay_python_values_and_key_the_cache(rng):
    def scale(x, beta):
        return x * (1 - beta)  # 1 - beta is computed by Python: one literal in the fusion

    traced = widefuse.trace(scale)
    x = rng.standard_normal(8).astype(np.float32)
    np.testing.assert_array_equal(traced(x, 0.9), x * np.float32(1 - 0.9))
    assert "0.09999999999999998" in traced.last_definition.to_text()
    traced(x, 0.9)
    assert traced.cache_size == 1
    traced(x, np.float64(0.5))  # NumPy scalars are numbers too
    assert traced.cache_size == 2
    traced(np.ones(9, np.float32), 0.9)  # another shape
    traced(np.ones(9, np.float64), 0.9)  # another dtype
    assert traced.cache_size == 4


def test_float_constants_are_keyed_by_their_bits():
    traced = widefuse.trace(lambda x, c: x * c)
    x = np.ones(4, np.float32)
    assert np.signbit(traced(x, 0.0)).sum() == 0
    assert np.signbit(traced(x, -0.0)).all()  # not the 0.0 recording
    traced(x, float("nan"))
    traced(x, float("nan"))
    assert traced.cache_size == 3  # NaN arguments share one recording


def test_torch_dtype_names_and_reflected_operators():
    def f(t, n):
        return t.to(widefuse.float64), 1 << n, 256 >> n

    x = np.arange(3, dtype=np.float32)
    n = np.arange(3, dtype=np.int32)
    as_double, shifted_left, shifted_right = widefuse.trace(f)(x, n)
    assert as_double.dtype == np.float64
    np.testing.assert_array_equal(as_double, x.astype(np.float64))
    np.testing.assert_array_equal(shifted_left, 1 << n)
    np.testing.assert_array_equal(shifted_right, 256 >> n)
    with pytest.raises(widefuse.Error, match="floor division"):
        widefuse.trace(lambda t: t // 2)(x)


def test_zero_dim_arrays_stay_tensors_and_one_array_twice_is_one_input():
    def f(x, y, s):
        return x + y * s

    traced = widefuse.trace(f)
    x = np.arange(4, dtype=np.float32)
    s = np.array(2.0, dtype=np.float32)
    np.testing.assert_array_equal(traced(x, x, s), x + x * 2)
    text = traced.last_definition.to_text()
    assert "T0: f32[4]" in text and "f32[]" in text and "T2" not in text.split("{")[0]


def test_the_trace_key_follows_each_arrays_layout(rng):
    # A new recording for a new dtype or layout of any array, none for new arrays laid out as
    # before; the layouts of NumPy arrays and torch tensors are read in C++, other arrays'
    # from their views, and misaligned or negative-stride arrays are refused by name.
    def f(xs, y):
        return [x * 2 + y for x in xs]

    traced = widefuse.trace(f, backend="reference")
    xs = [rng.standard_normal(6).astype(np.float32) for _ in range(3)]
    y = rng.standard_normal(6).astype(np.float32)
    for result, x in zip(traced(xs, y), xs):
        np.testing.assert_array_equal(result, x * 2 + y)
    fresh = [x.copy() for x in xs]
    traced(fresh, y.copy())
    assert traced.cache_size == 1
    strided = rng.standard_normal(12).astype(np.float32)[::2]  # strides of 2 elements
    for result, x in zip(traced([xs[0], strided, xs[2]], y), [xs[0], strided, xs[2]]):
        np.testing.assert_array_equal(result, x * 2 + y)
    assert traced.cache_size == 2
    assert "T1: f32[6]{stride_order=[0], contiguity=[false]}" in traced.last_definition.to_text()
    doubles = [x.astype(np.float64) for x in xs]
    for result, x in zip(traced(doubles, y), doubles):
        np.testing.assert_array_equal(result, x * 2 + y)
    assert traced.cache_size == 3
    # An array that is not a NumPy array (a memoryview's exporter subclass) is described from
    # its view: the same layout, the same recording.
    class Sub(np.ndarray):
        pass

    traced([x.view(Sub) for x in xs], y)
    assert traced.cache_size == 3
    misaligned = np.frombuffer(bytearray(6 * 4 + 1), dtype=np.uint8)[1:].view(np.float32)
    with pytest.raises(widefuse.Error, match="argument 1.*not aligned"):
        traced([xs[0], misaligned, xs[2]], y)
    with pytest.raises(widefuse.Error, match="argument 0.*negative strides"):
        traced([xs[0][::-1], xs[1], xs[2]], y)


def test_torch_tensors_of_a_layout_share_its_recording(rng):
    torch = pytest.importorskip("torch")

    def f(xs, y):
        return [x * 2 + y for x in xs]

    traced = widefuse.trace(f, backend="reference")
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]
    y = rng.standard_normal((2, 3)).astype(np.float32)
    traced(xs, y)
    results = traced([torch.from_numpy(x) for x in xs], torch.from_numpy(y))
    assert traced.cache_size == 1  # the layouts are the NumPy arrays'
    for result, x in zip(results, xs):
        assert isinstance(result, torch.Tensor)
        np.testing.assert_array_equal(result.numpy(), x * 2 + y)
    transposed = torch.from_numpy(rng.standard_normal((3, 2)).astype(np.float32)).T
    results = traced([transposed, torch.from_numpy(xs[1])], torch.from_numpy(y))
    assert traced.cache_size == 2
    np.testing.assert_array_equal(results[0].numpy(), transposed.numpy() * 2 + y)
    assert "T0: f32[2, 3]{stride_order=[0, 1], contiguity=[true, true]}," in \
        traced.last_definition.to_text()


def test_nested_structures_and_non_tensor_results(rng):
    def f(state, options):
        return {"scaled": [t * options["k"] for t in state["tensors"]], "tag": options["tag"]}

    tensors = [rng.standard_normal(3).astype(np.float32) for _ in range(3)]
    result = widefuse.trace(f)({"tensors": tensors}, {"k": 3, "tag": "adam"})
    assert result["tag"] == "adam"
    for actual, source in zip(result["scaled"], tensors):
        np.testing.assert_array_equal(actual, source * 3)


def test_unsupported_operations_are_clear_errors():
    x = np.ones(4, np.float32)

    def scan(t):  # reductions trace (test_reductions.py); scans do not
        return t.cumsum(0)

    def in_place(t):
        t.exp_()

    def branch(t):
        if t > 0:
            return t

    def rounding(t):
        return t.div(2, rounding_mode="floor")

    def remainder(t):
        return t % 2

    def indexing(t):
        return t[0]

    def assignment(t):
        t[0] = 1

    def unknown_keyword(t):
        return t.add(1, beta=2)

    def method_out(t):
        return t.sqrt(out=t)

    for function, message in [(scan, "Tensor.cumsum is not supported"),
                              (unknown_keyword, r"Tensor.add\(\).*beta.*widefuse supports"),
                              (method_out, r"Tensor.sqrt\(\).*out"),
                              (indexing, "indexing"), (assignment, "copy_"),
                              (in_place, r"in-place method Tensor.exp_\(\) is not supported.*copy_"),
                              (branch, "truth value"),
                              (rounding, "rounding_mode"),
                              (remainder, "remainder")]:
        with pytest.raises(widefuse.Error, match=message):
            widefuse.trace(function)(x)

    def probe(t):
        assert not hasattr(t, "cumsum")  # UnsupportedOperationError is an AttributeError too
        return t

    widefuse.trace(probe)(x)
    with pytest.raises(widefuse.Error, match="set"):
        widefuse.trace(lambda t, s: t)(x, {1, 2})


def test_in_place_methods_follow_torch(rng):
    # Later reads see the written value; the input receives its last value when the fusion
    # ends, cast to its dtype; a temporary written in place is just rebound.
    p = rng.standard_normal(64).astype(np.float32)
    m = rng.standard_normal(64).astype(np.float32)
    g = rng.standard_normal(64).astype(np.float64)
    p0, m0 = p.copy(), m.copy()

    def step(p, m, g):
        m.mul_(0.9).add_(g, alpha=0.1)        # f64 result cast back to f32
        denom = m.abs()
        denom.add_(1.0)
        p.addcdiv_(m, denom, value=-0.5)
        p.clamp_(min=-1.0)
        return p * 2

    doubled = widefuse.trace(step)(p, m, g)
    m_expected = (m0 * np.float32(0.9) + g * 0.1).astype(np.float32)
    p_expected = np.maximum(p0 + np.float32(-0.5) * m_expected / (np.abs(m_expected) + 1), -1)
    assert_close(m, m_expected, "m")
    assert_close(p, p_expected, "p")
    assert_close(doubled, 2 * p_expected, "returned")


def test_numpy_scalars_on_the_left_are_numbers(rng):
    x = rng.standard_normal(16).astype(np.float32)
    result = widefuse.trace(lambda t: np.float32(0.5) * t + np.float64(1.0))(x)
    np.testing.assert_array_equal(result, x * np.float32(0.5) + np.float32(1.0))
    assert result.dtype == np.float32  # NumPy scalars promote as Python numbers do


def test_copy_into_a_non_input_is_refused():
    def bad(t):
        widefuse.copy_(t + 1, t * 2)

    with pytest.raises(widefuse.Error, match="copy_"):
        widefuse.trace(bad)(np.ones(3, np.float32))


def test_out_keeps_the_destination_dtype():
    def f(h, x):
        widefuse.mul(h, x, out=h)
        return h + 0

    h = np.array([1.0], np.float16)
    x = np.array([1.0001], np.float32)
    (result,) = [widefuse.trace(f)(h, x)]
    assert result.dtype == np.float16 and h.dtype == np.float16
    np.testing.assert_array_equal(result, np.float16(1.0001))
    np.testing.assert_array_equal(h, np.float16(1.0001))


def test_namedtuple_arguments_keep_their_fields():
    import collections

    Hyper = collections.namedtuple("Hyper", "lr beta")

    def f(x, hyper):
        return x * hyper.lr + hyper.beta

    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(widefuse.trace(f)(x, Hyper(0.5, 1.0)), x * 0.5 + 1.0)
