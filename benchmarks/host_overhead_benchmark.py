"""Host cost per step of every way into widefuse, on torch CPU tensors, beside torch's own
Adam in the same run (issue 29): parameters of 16 float32 elements, so that what is measured
is the cost per tensor, not the arithmetic.

Rows, per parameter count N (each the median of 3 repetitions of >= 0.2 s):
- torch fused / torch foreach=False: torch.optim.Adam(fused=True) and (foreach=False).step().
- widefuse.optim: widefuse.optim.Adam.step() (its prepared step).
- traced call: widefuse.trace(seed's _single_tensor_adam)(...) with the same lists each step.
- traced, new grads: the same with a new list of new grad tensors each step (as a training
  loop's backward makes them), the grads made outside the timed region.
- execute(): the traced definition's FusionDefinition.execute on the same tensors.
- prepared: TracedFunction.prepare's step (no comparison at all).
- execute(), backend none: execute()'s host cost alone, no kernel.

torch and widefuse use the same number of threads (torch.get_num_threads()).
Usage: PYTHONPATH=build/python .venv/bin/python benchmarks/host_overhead_benchmark.py [N ...]
"""

import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python_frontend"))
import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402
from seed_adam import _single_tensor_adam  # noqa: E402

ELEMENTS = 16
HYPER = dict(amsgrad=False, has_complex=False, beta1=0.9, beta2=0.999, lr=0.001,
             weight_decay=0.0, eps=1e-8, maximize=False, capturable=False, differentiable=False)


def median_seconds(function, repetitions=3, minimum_seconds=0.2, setup=None):
    """Median over repetitions of the mean time per call; `setup` runs untimed before each."""
    results = []
    for _ in range(repetitions):
        calls, spent = 0, 0.0
        while spent < minimum_seconds:
            argument = setup() if setup else None
            start = time.perf_counter()
            function(argument) if setup else function()
            spent += time.perf_counter() - start
            calls += 1
        results.append(spent / calls)
    return statistics.median(results)


def torch_step(count, **options):
    generator = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(ELEMENTS, generator=generator))
              for _ in range(count)]
    for p in params:
        p.grad = torch.randn(ELEMENTS, generator=generator)
    optimizer = options.pop("optimizer", torch.optim.Adam)(params, lr=1e-3, **options)
    optimizer.step()
    return optimizer.step


def seed_arguments(count):
    generator = torch.Generator().manual_seed(0)
    tensors = lambda: [torch.randn(ELEMENTS, generator=generator)  # noqa: E731
                       for _ in range(count)]
    zeros = lambda: [torch.zeros(ELEMENTS) for _ in range(count)]  # noqa: E731
    steps = [torch.tensor(0.0) for _ in range(count)]
    return [tensors(), tensors(), zeros(), zeros(), zeros(), steps, None, None]


def rows_for(count, threads):
    rows = {}
    rows["torch fused"] = median_seconds(torch_step(count, fused=True))
    rows["torch foreach=False"] = median_seconds(torch_step(count, foreach=False))
    rows["widefuse.optim"] = median_seconds(
        torch_step(count, optimizer=widefuse.optim.Adam, threads=threads))
    arguments = seed_arguments(count)
    traced = widefuse.trace(_single_tensor_adam, mode="batched", threads=threads)
    with torch.no_grad():
        start = time.perf_counter()
        traced(*arguments, **HYPER)
        first = time.perf_counter() - start
        rows["traced call"] = median_seconds(lambda: traced(*arguments, **HYPER))

        def new_grads():
            fresh = list(arguments)
            fresh[1] = [torch.randn(ELEMENTS) for _ in range(count)]
            return fresh

        rows["traced, new grads"] = median_seconds(lambda fresh: traced(*fresh, **HYPER),
                                                   setup=new_grads)
        fd = traced.last_definition
        flat = [tensor for group in arguments[:6] for tensor in group]
        rows["execute()"] = median_seconds(
            lambda: fd.execute(flat, mode="batched", threads=threads))
        prepared = traced.prepare(*arguments, **HYPER)
        rows["prepared"] = median_seconds(prepared)
        fd.execute(flat, mode="batched", backend="none")
        rows["execute(), backend none"] = median_seconds(
            lambda: fd.execute(flat, mode="batched", backend="none"))
    return rows, first


def main():
    counts = [int(n) for n in sys.argv[1:]] or [10, 100, 1000, 10000]
    threads = torch.get_num_threads()
    table = {count: rows_for(count, threads) for count in counts}
    names = list(next(iter(table.values()))[0])
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {threads} threads for torch "
          f"and widefuse, load {os.getloadavg()[0]:.2f}; microseconds per step "
          f"(per parameter in parentheses), parameters of {ELEMENTS} float32 elements\n")
    print("| way in | " + " | ".join(f"{count} params" for count in counts) + " |")
    print("|---|" + "---:|" * len(counts))
    for name in names:
        cells = [f"{table[c][0][name] * 1e6:.0f} ({table[c][0][name] * 1e6 / c:.2f})"
                 for c in counts]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| first traced call (s) | " + " | ".join(f"{table[c][1]:.2f}" for c in counts) +
          " |")


if __name__ == "__main__":
    main()
