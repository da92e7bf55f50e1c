"""Python frontend overheads: what a traced optimizer step costs on top of the kernel.

Runs the seed's `_single_tensor_adam` (tests/python_frontend/seed_adam.py) under
widefuse.trace for N parameters of 64 float32 elements, and prints Google Benchmark-style
JSON (medians) that benchmarks/report.py turns into a table:

- trace_and_compile/N: the first call (tracing, segmenting, codegen, host compile; the
  kernel cache starts empty when WIDEFUSE_CACHE_DIR points to a fresh directory).
- traced_step/N: a steady-state call on the host backend (argument flattening, signature
  lookup, array checks, the C++ executor and the tiny kernel).
- traced_dispatch/N: the same with backend="none": everything but running the kernel.
- execute_dispatch/N: FusionDefinition.execute alone with backend="none".
- prepared_step/N, prepared_dispatch/N: TracedFunction.prepare's step (arrays that stay in
  place: no signature, no checks) on the host backend and with backend="none".

Usage: PYTHONPATH=build/python .venv/bin/python benchmarks/python_dispatch_benchmark.py
"""

import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python_frontend"))
import widefuse  # noqa: E402
from seed_adam import _single_tensor_adam  # noqa: E402

HYPER = dict(amsgrad=False, has_complex=False, beta1=0.9, beta2=0.999, lr=0.001,
             weight_decay=0.0, eps=1e-8, maximize=False, capturable=False, differentiable=False)


def state(count):
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(64).astype(np.float32) for _ in range(count)]
    grads = [rng.standard_normal(64).astype(np.float32) for _ in range(count)]
    zeros = lambda: [np.zeros(64, np.float32) for _ in range(count)]  # noqa: E731
    steps = [np.array(0.0, np.float32) for _ in range(count)]
    return (params, grads, zeros(), zeros(), zeros(), steps, None, None)


def median_microseconds(function, repetitions=3, minimum_seconds=0.2):
    """Median over repetitions of the mean time per call, each repetition >= minimum_seconds."""
    results = []
    for _ in range(repetitions):
        calls, start = 0, time.perf_counter()
        while True:
            function()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= minimum_seconds:
                break
        results.append(elapsed / calls * 1e6)
    return statistics.median(results), calls


def row(name, microseconds, iterations, **counters):
    return dict(name=name, run_name=name, run_type="aggregate", aggregate_name="median",
                real_time=microseconds, cpu_time=microseconds, time_unit="us",
                iterations=iterations, **counters)


def main():
    rows = []
    for count in (1, 10, 100, 1000):
        arguments = state(count)
        traced = widefuse.trace(_single_tensor_adam, mode="batched", backend="host")
        start = time.perf_counter()
        traced(*arguments, **HYPER)
        rows.append(row(f"trace_and_compile/{count}", (time.perf_counter() - start) * 1e6, 1,
                        params=count))
        step, iterations = median_microseconds(lambda: traced(*arguments, **HYPER))
        rows.append(row(f"traced_step/{count}", step, iterations, params=count))
        dry = widefuse.trace(_single_tensor_adam, mode="batched", backend="none")
        dry(*arguments, **HYPER)
        dispatch, iterations = median_microseconds(lambda: dry(*arguments, **HYPER))
        rows.append(row(f"traced_dispatch/{count}", dispatch, iterations, params=count))
        fd = dry.last_definition
        flat = [array for group in arguments[:6] for array in group]
        ordered = [flat[i] for i in _input_order(arguments)]
        execute, iterations = median_microseconds(lambda: fd.execute(ordered, backend="none",
                                                                     mode="batched"))
        rows.append(row(f"execute_dispatch/{count}", execute, iterations, params=count))
        prepared_step = traced.prepare(*arguments, **HYPER)
        step, iterations = median_microseconds(prepared_step)
        rows.append(row(f"prepared_step/{count}", step, iterations, params=count))
        prepared_dispatch = dry.prepare(*arguments, **HYPER)
        dispatch, iterations = median_microseconds(prepared_dispatch)
        rows.append(row(f"prepared_dispatch/{count}", dispatch, iterations, params=count))
    context = dict(date=time.strftime("%Y-%m-%d"), num_cpus=os.cpu_count(),
                   load_avg=list(os.getloadavg()), library_build_type="release")
    json.dump(dict(context=context, benchmarks=rows), sys.stdout, indent=1)


def _input_order(arguments):
    """The tracer's inputs are the distinct arrays in argument order (lists flattened)."""
    count = len(arguments[0])
    return list(range(6 * count))


if __name__ == "__main__":
    main()
