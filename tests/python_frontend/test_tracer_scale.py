"""Tracing at scale (issue 29): the first traced call of the seed's Adam does work linear in
the number of parameters. Pinned by counting, not timing: the Python-level calls (functions
and builtins, as sys.setprofile sees them) of a first call at N, 2N and 4N parameters grow by
the same amount per parameter, so no step anywhere in the Python frontend (recording,
finalize, the trace key, execute's checks) revisits what earlier parameters recorded."""

import sys

import numpy as np

import widefuse
from seed_adam import _single_tensor_adam

HYPER = dict(amsgrad=False, has_complex=False, beta1=0.9, beta2=0.999, lr=1e-3,
             weight_decay=0.0, eps=1e-8, maximize=False, capturable=False,
             differentiable=False)


def seed_arguments(count, *, amsgrad=False):
    """The seed's list arguments for `count` parameters of 16 elements."""
    def arrays():
        return [np.zeros(16, np.float32) for _ in range(count)]

    steps = [np.zeros((), np.float32) for _ in range(count)]
    return (arrays(), arrays(), arrays(), arrays(), arrays() if amsgrad else [], steps, None,
            None)


def calls_of_first_call(function, arguments, keywords):
    """The Python-level calls (Python functions and builtins) one first traced call makes."""
    traced = widefuse.trace(function, backend="reference")
    count = 0

    def profile(frame, event, argument):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        traced(*arguments, **keywords)
    finally:
        sys.setprofile(None)
    assert traced.cache_size == 1
    return count


def growth(function, sizes, **keywords):
    """The calls a first call makes at each size in `sizes`, after one first call of one
    parameter (so that imports and caches filled once are not counted)."""
    calls_of_first_call(function, seed_arguments(1, amsgrad=keywords.get("amsgrad", False)),
                        keywords)
    return [calls_of_first_call(function, seed_arguments(size, amsgrad=keywords.get(
        "amsgrad", False)), keywords) for size in sizes]


def assert_linear(counts, step, most_per_parameter):
    """Each doubling of the size adds twice the calls the previous doubling added: the count
    is affine in the size (a quadratic term would make the later step grow faster). And the
    calls per parameter stay under `most_per_parameter`, a little above today's count
    (per-op argument checks or conversions in Python would show here first)."""
    small, medium, large = counts
    first, second = medium - small, large - medium
    assert first > 0
    assert abs(second - 2 * first) <= 0.01 * second, (counts, first, second)
    assert first / step <= most_per_parameter, first / step


def test_first_call_of_the_seed_is_linear_in_the_parameters():
    counts = growth(_single_tensor_adam, (100, 200, 400), **HYPER)
    # 89: the 21 ops (a Python operator each; its C++ record call and the traced value it
    # makes are no Python call), 6 argument checks of torch-style methods, 4 copy_ (3 calls
    # each, and finalize's look for plain outputs), the seed's own calls (isinstance, append,
    # zeros, ...); the 5 arrays are read in C++.
    assert_linear(counts, 100, 100)


def test_first_call_with_amsgrad_and_weight_decay_is_linear():
    # amsgrad's out= (in-place writes, applied when the definition ends) and weight decay's
    # grad.add(param, alpha=...) are paths of their own.
    counts = growth(_single_tensor_adam, (100, 200, 400),
                    **dict(HYPER, amsgrad=True, weight_decay=0.01))
    assert_linear(counts, 100, 150)  # 137: add's alpha fused as torch's (torch_arithmetic.py)


def test_a_traced_function_returning_every_parameter_is_linear():
    # Plain outputs: finalize's output bookkeeping (which outputs return an input's array)
    # sees every one.
    def scaled_copies(params, grads, *_unused, **__unused):
        return [p * 2 + g for p, g in zip(params, grads)]

    counts = growth(scaled_copies, (100, 200, 400))
    assert_linear(counts, 100, 70)  # 60
