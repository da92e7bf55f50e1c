"""The seed issue's timing on the CPU: torch.optim.Adam's step() (foreach=False, and
fused=True) next to the Thunder-jitted seed step (tests/python_frontend/thunder_seed_adam.py)
with widefuse's executor, with widefuse.thunder.jit (the same with the prologue's tensor checks
done by widefuse) and with Thunder's default executors (its torch executor on the CPU),
in the same run, for 2, 50 and 1000 parameters of 64x64 float32 (or the counts given).

- seed_step/<runner>/N: median time of one step (after warm-up: traced and compiled);
  first_3_steps_s: the warm-up's three steps.

Prints Google Benchmark-style JSON (medians) for benchmarks/report.py.
Usage: PYTHONPATH=build/python .venv/bin/python benchmarks/thunder_benchmark.py
[--threads=N|default] [COUNT ...] (default: one thread for torch and for widefuse's host
backend, counts 2 50 1000). The first calls' time (Thunder's trace, widefuse's compile) goes to
stderr: at 1000 parameters Thunder 0.2.6 traces the seed for about 6 minutes on 2 cores with
either executor, so the whole run takes about 15 minutes.
"""

import json
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python_frontend"))
warnings.filterwarnings("ignore")
import thunder  # noqa: E402

import widefuse.thunder  # noqa: E402
from thunder_seed_adam import _single_tensor_adam, jit_state, jit_step  # noqa: E402


def parameters(count):
    generator = torch.Generator().manual_seed(0)
    params = [torch.randn(64, 64, generator=generator) for _ in range(count)]
    for p in params:
        p.grad = torch.randn(64, 64, generator=generator)
    return params


def median_microseconds(step, steps):
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def runners(count, threads):
    adam = torch.optim.Adam(parameters(count), foreach=False)
    yield "torch_adam", adam.step
    fused = torch.optim.Adam(parameters(count), fused=True)
    yield "torch_adam_fused", fused.step
    ours = widefuse.thunder.WidefuseExecutor(f"widefuse_{threads}_threads", threads=threads)
    for name, executors in (("thunder_widefuse", [ours]), ("widefuse_thunder_jit", "jit"),
                            ("thunder_default", None)):
        params = parameters(count)
        jitted = (widefuse.thunder.jit(_single_tensor_adam, threads=threads) if executors == "jit"
                  else thunder.jit(_single_tensor_adam, executors=executors))
        state = jit_state(params)
        yield name, lambda: jit_step(jitted, params, state)


def main():
    # One CPU thread for torch and for widefuse's host backend unless --threads=default (both
    # libraries' own default: one per core). On a 2-core machine shared with other work, two
    # threads made the steps bimodal: torch's 2-parameter step took 65 us or 16-24 ms,
    # depending on whether its second OpenMP thread got a core.
    options = [a for a in sys.argv[1:] if a.startswith("--")]
    threads = 1
    for option in options:
        if option == "--threads=default":
            threads = None
        elif option.startswith("--threads="):
            threads = int(option.split("=", 1)[1])
        else:
            sys.exit(f"thunder_benchmark: unknown option {option}")
    if threads is not None:
        torch.set_num_threads(threads)
    rows = []
    counts = [int(a) for a in sys.argv[1:] if not a.startswith("--")] or [2, 50, 1000]
    for count in counts:
        for name, step in runners(count, threads):
            start = time.perf_counter()
            for _ in range(3):  # warm-up: trace and compile
                step()
            first_calls = time.perf_counter() - start
            print(f"thunder_benchmark: {name}/{count}: first 3 steps {first_calls:.1f} s",
                  file=sys.stderr, flush=True)
            steps = 20 if count < 1000 else 5
            micros = median_microseconds(step, steps)
            rows.append(dict(name=f"seed_step/{name}/{count}", run_name=f"seed_step/{name}/{count}",
                             run_type="aggregate", aggregate_name="median", real_time=micros,
                             cpu_time=micros, time_unit="us", iterations=steps, params=count,
                             first_3_steps_s=round(first_calls, 1)))
    context = dict(date=time.strftime("%Y-%m-%d"), num_cpus=os.cpu_count(),
                   load_avg=list(os.getloadavg()), library_build_type="release",
                   threads=threads or "default", torch_threads=torch.get_num_threads(),
                   torch=torch.__version__, thunder=thunder.__version__)
    json.dump(dict(context=context, benchmarks=rows), sys.stdout, indent=1)


if __name__ == "__main__":
    main()
