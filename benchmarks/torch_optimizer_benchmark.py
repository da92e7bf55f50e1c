"""widefuse.optim.AdamW next to torch.optim.AdamW (fused=True and foreach=True) in the same run,
on CPU tensors:

- step_overhead/<optimizer>/N: one optimizer.step() over N parameters of 16 float32 elements
  with new grad tensors every step (zero_grad(set_to_none=True), torch's default): what a step
  costs besides the arithmetic.
- gpt2_step/<optimizer>: one step over the gpt2 preset's 148 parameters (124M elements), new
  grad tensors every step.

Prints Google Benchmark-style JSON (medians) for benchmarks/report.py.
Usage: PYTHONPATH=build/python .venv/bin/python benchmarks/torch_optimizer_benchmark.py
"""

import json
import os
import statistics
import sys
import time

import torch

import widefuse
import widefuse.optim

OPTIMIZERS = {
    "widefuse": lambda params: widefuse.optim.AdamW(params, lr=1e-3),
    "torch_fused": lambda params: torch.optim.AdamW(params, lr=1e-3, fused=True),
    "torch_foreach": lambda params: torch.optim.AdamW(params, lr=1e-3, foreach=True),
}


def median_step_microseconds(shapes, make_optimizer, steps, warmup=3):
    """Median time of optimizer.step() with a fresh set of grad tensors before each step."""
    generator = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(shape, generator=generator)) for shape in shapes]
    grad_sets = [[torch.randn(shape, generator=generator) for shape in shapes] for _ in range(2)]
    optimizer = make_optimizer(params)
    times = []
    for step in range(warmup + steps):
        for param, grad in zip(params, grad_sets[step % 2]):
            param.grad = grad  # other objects than the last step's
        start = time.perf_counter()
        optimizer.step()
        elapsed = time.perf_counter() - start
        if step >= warmup:
            times.append(elapsed * 1e6)
    launches = getattr(optimizer, "launches_per_step", None)
    return statistics.median(times), steps, launches


def row(name, microseconds, iterations, **counters):
    return dict(name=name, run_name=name, run_type="aggregate", aggregate_name="median",
                real_time=microseconds, cpu_time=microseconds, time_unit="us",
                iterations=iterations, **{k: v for k, v in counters.items() if v is not None})


def main():
    rows = []
    for count in (1, 100, 1000):
        for name, make in OPTIMIZERS.items():
            micros, steps, launches = median_step_microseconds([(16,)] * count, make, steps=200)
            rows.append(row(f"step_overhead/{name}/{count}", micros, steps, params=count,
                            launches=launches))
    gpt2 = [tuple(shape) for shape in widefuse.model_shapes("gpt2")]
    for name, make in OPTIMIZERS.items():
        micros, steps, launches = median_step_microseconds(gpt2, make, steps=5, warmup=2)
        rows.append(row(f"gpt2_step/{name}", micros, steps, params=len(gpt2),
                        launches=launches))
    context = dict(date=time.strftime("%Y-%m-%d"), num_cpus=os.cpu_count(),
                   load_avg=list(os.getloadavg()), library_build_type="release",
                   torch=torch.__version__, torch_threads=torch.get_num_threads())
    json.dump(dict(context=context, benchmarks=rows), sys.stdout, indent=1)


if __name__ == "__main__":
    main()
