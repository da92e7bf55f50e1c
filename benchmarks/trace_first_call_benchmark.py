"""Tracing at scale (issue 29): the first traced call of the seed's Adam, by phase.

Traces `_single_tensor_adam` (tests/python_frontend/seed_adam.py) over N parameters of 16
float32 elements, as NumPy arrays and as CPU torch tensors, and prints one line per case:

- recording: the first call minus finalize and execute: the trace key, the proxies, the
  seed's code running on them (every op recorded through the builder).
- finalize: the end of the `with` block (the C++ fusion verified, its components checked).
- segment+compile: the first execute() minus the run (segmentation, plans, CUDA text, the
  host compiler; the kernel cache starts empty: every case runs in a child process with
  WIDEFUSE_CACHE_DIR a fresh temporary directory).
- run: a second call on the same arrays (its checks, the bind and the kernel).

Beside it, torch.optim.Adam(fused=True)'s first step on the same shapes (CPU), for
reference. Usage (from the repository root):

    PYTHONPATH=build/python .venv/bin/python benchmarks/trace_first_call_benchmark.py [N ...]
"""

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HYPER = dict(amsgrad=False, has_complex=False, beta1=0.9, beta2=0.999, lr=1e-3,
             weight_decay=0.0, eps=1e-8, maximize=False, capturable=False,
             differentiable=False)


def _timed(owner, name, phases, phase):
    """Wraps owner.name so that its time adds to phases[phase]."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - start

    setattr(owner, name, wrapper)


def measure_widefuse(count, kind):
    """The phases of one first traced call (this process's kernel cache is empty)."""
    import numpy as np

    sys.path.insert(0, os.path.join(HERE, "..", "tests", "python_frontend"))
    import widefuse
    from widefuse.fusion_definition import FusionDefinition
    from seed_adam import _single_tensor_adam

    rng = np.random.default_rng(0)
    arrays = [[rng.standard_normal(16).astype(np.float32) for _ in range(count)]
              for _ in range(4)]
    steps = [np.zeros((), np.float32) for _ in range(count)]
    if kind == "torch":
        import torch
        arrays = [[torch.from_numpy(a) for a in group] for group in arrays]
        steps = [torch.from_numpy(s) for s in steps]
    params, grads, exp_avgs, exp_avg_sqs = arrays
    arguments = (params, grads, exp_avgs, exp_avg_sqs, [], steps, None, None)
    phases: dict = {}
    _timed(FusionDefinition, "finalize", phases, "finalize")
    _timed(FusionDefinition, "execute", phases, "execute")
    adam = widefuse.trace(_single_tensor_adam)
    start = time.perf_counter()
    adam(*arguments, **HYPER)
    first = time.perf_counter() - start
    execute = phases.pop("execute")
    start = time.perf_counter()
    adam(*arguments, **HYPER)
    run = time.perf_counter() - start
    text = adam.last_definition.to_text()
    ops = sum(1 for line in text.splitlines() if " = " in line)
    return {"first_call": first, "recording": first - phases["finalize"] - execute,
            "finalize": phases["finalize"], "segment+compile": execute - run, "run": run,
            "ops": ops}


def measure_torch_fused(count):
    """torch.optim.Adam(fused=True)'s first step over the same shapes on the CPU."""
    import torch

    params = [torch.randn(16, requires_grad=True) for _ in range(count)]
    for p in params:
        p.grad = torch.randn(16)
    optimizer = torch.optim.Adam(params, lr=1e-3, fused=True)
    start = time.perf_counter()
    optimizer.step()
    return {"first_call": time.perf_counter() - start}


def child(case):
    """Runs one case in this process and prints its result as JSON."""
    count, kind = int(case[0]), case[1]
    result = measure_torch_fused(count) if kind == "torch-fused" else \
        measure_widefuse(count, kind)
    print(json.dumps(result))


def run_case(count, kind):
    with tempfile.TemporaryDirectory(prefix="widefuse-cold-cache") as cache:
        environment = dict(os.environ, WIDEFUSE_CACHE_DIR=cache)
        output = subprocess.run([sys.executable, __file__, "--child", str(count), kind],
                                env=environment, check=True, capture_output=True, text=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def main(arguments):
    if arguments[:1] == ["--child"]:
        child(arguments[1:])
        return
    counts = [int(a) for a in arguments] or [1000, 10000, 50000]
    print(f"{'params':>7} {'arrays':>6} {'first':>7} {'record':>7} {'final':>6} "
          f"{'seg+cc':>7} {'run':>6} {'us/op':>6} {'torch fused':>11}")
    for count in counts:
        fused = run_case(count, "torch-fused")["first_call"]
        for kind in ("numpy", "torch"):
            r = run_case(count, kind)
            print(f"{count:>7} {kind:>6} {r['first_call']:7.3f} {r['recording']:7.3f} "
                  f"{r['finalize']:6.3f} {r['segment+compile']:7.3f} {r['run']:6.3f} "
                  f"{r['recording'] / r['ops'] * 1e6:6.2f} {fused:11.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
