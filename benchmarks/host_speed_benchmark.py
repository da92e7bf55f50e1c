"""The host backend's fast path next to torch's fastest CPU optimizer, in one run, with the same
number of threads (issue: the host backend at memory speed):

- triad: a = b + s * c over 2^25 float32 elements with torch (torch.add(b, c, alpha=s, out=a),
  torch's own vectorized, multi-threaded kernel), counted as STREAM does (12 bytes per
  element; the write-allocate read of `a` is not counted), and the in-place a += s * b
  (a.add_(b, alpha=s); 12 bytes, all of them moved), the access pattern of an optimizer step.
  "of the triad" compares with the faster of the two: the machine's streaming bandwidth.
- gpt2/<optimizer>: one Adam step over the gpt2 preset's 148 parameters (124M float32
  elements; 28 bytes per element: p, g, m, v read, p, m, v written), the same grads every step
  (the steady state of a training loop's step()).
- small1000/<optimizer>: one Adam step over 1000 parameters of 64 elements: dispatch and run.
- gpt2-<name>/widefuse: user-defined pointwise optimizers built on widefuse.optim's
  PointwiseOptimizer (RMSprop, Lion: 20 bytes per element) over the same shapes, in GB/s.
- gpt2-adamw/<optimizer>: AdamW (decoupled weight decay), widefuse.optim.AdamW against
  torch.optim.AdamW(fused=True), 28 bytes per element.
- gpt2-clip/<optimizer>: AdamW with the grads clipped by their global norm (max norm 1):
  widefuse.optim.AdamW(max_grad_norm=1.0) against clip_grad_norm_(foreach=True) then
  torch.optim.AdamW(fused=True).
- gpt2-bf16*/<optimizer>: bf16 parameters and grads. torch keeps its state in the
  parameters' dtype (its fused kernel refuses fp32 state for bf16 parameters: "expected
  scalar type BFloat16 but found Float"); widefuse with bf16 state (torch's configuration),
  with fp32 state, and with fp32 state and fp32 master weights.

Every figure is the median step time of `--steps` steps after 2 warm-up steps, the optimizers
of a comparison stepping in turn; GB/s is the bytes the step must move divided by that time.
With --processes N each figure is the median over N fresh processes run one after another, and
max/min says how far the slowest process's median is from the fastest's; --isa avx2 measures
torch and widefuse with AVX2 kernels on a machine that has AVX-512. Prints Google Benchmark-style JSON (medians)
for benchmarks/report.py, and with --markdown a table for docs/performance.md.
Usage: PYTHONPATH=build/python .venv/bin/python benchmarks/host_speed_benchmark.py
           [--threads N] [--steps N] [--only PREFIX,...] [--processes N] [--isa native|avx2]
           [--markdown]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import widefuse
import widefuse.optim


def median_seconds(function, steps, warmup=2):
    times = []
    for step in range(warmup + steps):
        start = time.perf_counter()
        function()
        if step >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def triads(steps):
    """(name, seconds, bytes) of the STREAM triad and the in-place one."""
    n = 1 << 25
    b, c = torch.rand(n), torch.rand(n)
    a = torch.empty(n)
    yield "triad", median_seconds(lambda: torch.add(b, c, alpha=3.0, out=a), steps), 12 * n
    yield ("triad-in-place", median_seconds(lambda: a.add_(b, alpha=1e-3), steps), 12 * n)


def parameters(shapes, dtype=torch.float32):
    generator = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(shape, generator=generator).to(dtype))
              for shape in shapes]
    for param in params:
        param.grad = torch.randn(param.shape, generator=generator).to(dtype)
    return params


class ClippedTorch:
    """What a torch user writes to clip: clip_grad_norm_(foreach=True), then the step."""

    def __init__(self, params, optimizer):
        self.params, self.optimizer = params, optimizer

    def step(self):
        torch.nn.utils.clip_grad_norm_(self.params, 1.0, foreach=True)
        self.optimizer.step()


def interleaved_step_seconds(group, steps, warmup=2):
    """Median step time of each optimizer of `group` ((name, shapes, dtype, make, bytes)
    entries), their steps taken in turn (A B C A B C ...) so that the machine's slow and fast
    spells (its memory bandwidth varies by up to 1.6x over seconds on this shared VM) fall on
    all of them alike."""
    optimizers = [make(parameters(shapes, dtype)) for _, shapes, dtype, make, _ in group]
    times = [[] for _ in group]
    for step in range(warmup + steps):
        for index, optimizer in enumerate(optimizers):
            start = time.perf_counter()
            optimizer.step()
            if step >= warmup:
                times[index].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def groups(threads):
    """Groups of (name, shapes, dtype, make_optimizer, bytes per element): the steps each
    group compares, measured side by side."""
    gpt2 = [tuple(shape) for shape in widefuse.model_shapes("gpt2")]
    small = [(64,)] * 1000
    adam = {
        "widefuse": lambda p: widefuse.optim.Adam(p, lr=1e-3, threads=threads),
        "torch_fused": lambda p: torch.optim.Adam(p, lr=1e-3, fused=True),
        "torch_foreach": lambda p: torch.optim.Adam(p, lr=1e-3, foreach=True),
    }
    for shapes, label in ((gpt2, "gpt2"), (small, "small1000")):
        yield [(f"{label}/{name}", shapes, torch.float32, make, 28)
               for name, make in adam.items()]
    # AdamW, what most training scripts step (the CPU line of issue 48).
    yield [("gpt2-adamw/widefuse", gpt2, torch.float32,
            lambda p: widefuse.optim.AdamW(p, lr=1e-3, threads=threads), 28),
           ("gpt2-adamw/torch_fused", gpt2, torch.float32,
            lambda p: torch.optim.AdamW(p, lr=1e-3, fused=True), 28)]
    yield [("gpt2-rmsprop/widefuse", gpt2, torch.float32,
            lambda p: widefuse.optim.RMSprop(p, lr=1e-3, threads=threads), 20),
           ("gpt2-rmsprop/torch_foreach", gpt2, torch.float32,
            lambda p: torch.optim.RMSprop(p, lr=1e-3, foreach=True), 20),
           ("gpt2-lion/widefuse", gpt2, torch.float32,
            lambda p: widefuse.optim.Lion(p, lr=1e-4, threads=threads), 20)]
    # Clipping by the global grad norm, then AdamW (issue 30). Bytes per element: widefuse
    # reads each grad once for the norm and once in the update (4 + 28); torch's
    # clip_grad_norm_ reads it for the norm, then reads and writes it to scale it (4 + 8),
    # before its fused step (28).
    yield [("gpt2-clip/widefuse", gpt2, torch.float32,
            lambda p: widefuse.optim.AdamW(p, lr=1e-3, threads=threads, max_grad_norm=1.0), 32),
           ("gpt2-clip/torch_fused", gpt2, torch.float32,
            lambda p: ClippedTorch(p, torch.optim.AdamW(p, lr=1e-3, fused=True)), 40)]
    # bf16 parameters and grads. Bytes per element: bf16 state 14 (p, m, v read and written,
    # g read); fp32 state 22 (p 4, g 2, m and v 16); fp32 state and master 28 (master 8, p
    # written 2, g 2, m and v 16).
    yield [("gpt2-bf16/torch_fused", gpt2, torch.bfloat16,
            lambda p: torch.optim.Adam(p, lr=1e-3, fused=True), 14),
           ("gpt2-bf16/widefuse", gpt2, torch.bfloat16,
            lambda p: widefuse.optim.Adam(p, lr=1e-3, threads=threads), 14),
           ("gpt2-bf16-fp32state/widefuse", gpt2, torch.bfloat16,
            lambda p: widefuse.optim.Adam(p, lr=1e-3, threads=threads,
                                          state_dtype=torch.float32), 22),
           ("gpt2-bf16-fp32master/widefuse", gpt2, torch.bfloat16,
            lambda p: widefuse.optim.Adam(p, lr=1e-3, threads=threads, master_weights=True),
            28)]


def row(name, seconds, steps, **counters):
    micros = seconds * 1e6
    return dict(name=name, run_name=name, run_type="aggregate", aggregate_name="median",
                real_time=micros, cpu_time=micros, time_unit="us", iterations=steps,
                **counters)


def markdown(rows, context):
    print(f"{context['date']}, {context['cpu']} ({context['num_cpus']} CPUs), "
          f"{context['threads']} threads for torch and widefuse, torch {context['torch']}, "
          f"load average {', '.join(f'{x:.2f}' for x in context['load_avg'])}; median of "
          f"{context['steps']} steps.\n")
    processes = rows[0].get("processes", 1)
    if processes > 1:
        print(f"Medians of {processes} processes ({context['isa']}); max/min: the slowest "
              f"process's median over the fastest's.\n")
    spread = " max/min |" if processes > 1 else ""
    print("| case | step time | GB/s | of the triad |" + spread)
    print("|---|---:|---:|---:|" + ("---:|" if processes > 1 else ""))
    triad_rate = max(r["GB_per_s"] for r in rows if r["name"].startswith("triad"))
    for r in rows:
        millis = r["real_time"] / 1e3
        print(f"| {r['name']} | {millis:.3g} ms | {r['GB_per_s']:.1f} | "
              f"{100 * r['GB_per_s'] / triad_rate:.0f}% |" +
              (f" {r['max_over_min']:.2f} |" if processes > 1 else ""))


# How each instruction set is built: torch's kernels by ATen's dispatch (ATEN_CPU_CAPABILITY),
# widefuse's host kernels by the host compiler (an explicit -mno-avx512f outranks the
# -march=native it adds; the command is part of the kernel cache's key).
ISAS = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "WIDEFUSE_HOST_CXX": "c++ -mno-avx512f"},
}


def in_processes(arguments):
    """The rows of `arguments.processes` child processes, one after another, each measuring
    every selected group with the instruction set `arguments.isa`: per case the median of the
    processes' medians, and max/min over the processes (how steady a fresh process is)."""
    environment = dict(os.environ, **ISAS[arguments.isa])
    command = [sys.executable, os.path.abspath(__file__), "--child", "--threads",
               str(arguments.threads), "--steps", str(arguments.steps), "--only", arguments.only]
    runs = []
    for process in range(arguments.processes):
        print(f"host_speed_benchmark: process {process + 1} of {arguments.processes} "
              f"({arguments.isa})", file=sys.stderr)
        done = subprocess.run(command, env=environment, check=True, stdout=subprocess.PIPE)
        runs.append(json.loads(done.stdout))
    rows = []
    for index, first in enumerate(runs[0]["benchmarks"]):
        times = [run["benchmarks"][index]["real_time"] for run in runs]
        median = statistics.median(times)
        rows.append(dict(first, real_time=median, cpu_time=median,
                         GB_per_s=first["GB_per_s"] * first["real_time"] / median,
                         processes=len(times), max_over_min=max(times) / min(times)))
    return rows, runs[0]["context"]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--only", default="",
                        help="run only the groups whose first case starts with one of these "
                             "comma-separated prefixes (gpt2-adamw,gpt2-clip)")
    parser.add_argument("--processes", type=int, default=1,
                        help="measure in this many fresh processes, one after another")
    parser.add_argument("--isa", choices=sorted(ISAS), default="native",
                        help="the instruction set torch's and widefuse's kernels use")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.processes < 1:
        parser.error("--processes must be at least 1")
    if not arguments.child and (arguments.processes > 1 or arguments.isa != "native"):
        rows, context = in_processes(arguments)
        context["isa"] = arguments.isa
        if arguments.markdown:
            markdown(rows, context)
        else:
            json.dump(dict(context=context, benchmarks=rows), sys.stdout, indent=1)
        return
    torch.set_num_threads(arguments.threads)
    prefixes = tuple(arguments.only.split(","))
    rows = []
    for name, seconds, moved in triads(arguments.steps * 3):
        rows.append(row(name, seconds, arguments.steps * 3, GB_per_s=moved / seconds / 1e9))
    for group in groups(arguments.threads):
        if not group[0][0].startswith(prefixes):
            continue
        print(f"host_speed_benchmark: {', '.join(entry[0] for entry in group)}", file=sys.stderr)
        medians = interleaved_step_seconds(group, arguments.steps)
        for (name, shapes, _, _, bytes_per_element), seconds in zip(group, medians):
            elements = sum(torch.Size(shape).numel() for shape in shapes)
            rows.append(row(name, seconds, arguments.steps, params=len(shapes),
                            GB_per_s=bytes_per_element * elements / seconds / 1e9))
    context = dict(date=time.strftime("%Y-%m-%d"), num_cpus=os.cpu_count(), cpu=cpu_model(),
                   load_avg=list(os.getloadavg()), library_build_type="release",
                   torch=torch.__version__, threads=arguments.threads, steps=arguments.steps,
                   isa=os.environ.get("ATEN_CPU_CAPABILITY", "native"))
    if arguments.markdown:
        markdown(rows, context)
    else:
        json.dump(dict(context=context, benchmarks=rows), sys.stdout, indent=1)


if __name__ == "__main__":
    main()
