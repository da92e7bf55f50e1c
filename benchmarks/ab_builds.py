"""Two builds of widefuse side by side, before and after a change, in one run: every case runs
in a child process of one build, then of the other, round after round with the order
alternating, so that both meet the same load of this shared machine. Prints one markdown row
per figure: the median of each build over the rounds, and the ratio new / old (below 1:
faster).

Cases (all on the CPU, the host backend where a backend runs):
- gpt2 AdamW step, gpt2 clip + AdamW step: widefuse.optim.AdamW (max_grad_norm=1.0 for the
  clip) over the gpt2 preset's float32 parameters, the same grads every step: the median of
  10 steps after 2 warm-up steps.
- dispatch of 1000 parameters: benchmarks/dispatch_benchmark.cpp's `dispatch/1000`.
- compile of 1 and 1000 parameters: compile_benchmark.cpp's `coldCompile` (NVRTC, a cold
  in-memory cache).
- first traced call at 10,000 parameters: trace_first_call_benchmark.py's NumPy case, in a
  fresh kernel cache.
- host cost per step: host_overhead_benchmark.py's rows at 10, 100, 1000 and 10,000
  parameters.

Each build runs its own benchmark programs and scripts. Usage (REPO: a checkout built by
scripts/setup.sh --test, with REPO/build/bin and REPO/build/python):

    .venv/bin/python benchmarks/ab_builds.py OLD_REPO NEW_REPO [--rounds 3]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

STEPS, WARMUP = 10, 2


def gpt2_step_seconds(clip):
    """The median step time of widefuse.optim.AdamW over gpt2's parameters (this process)."""
    import torch

    import widefuse
    import widefuse.optim

    torch.manual_seed(0)
    params = [torch.randn(shape) for shape in widefuse.model_shapes("gpt2")]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    options = dict(lr=1e-3, threads=torch.get_num_threads())
    if clip:
        options["max_grad_norm"] = 1.0
    optimizer = widefuse.optim.AdamW(params, **options)
    times = []
    for step in range(WARMUP + STEPS):
        start = time.perf_counter()
        optimizer.step()
        if step >= WARMUP:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def child(case):
    """Runs one in-process case and prints its figure as JSON."""
    print(json.dumps({case: gpt2_step_seconds(clip=case == "gpt2 clip + AdamW step (ms)")}))


def run(command, repo, environment=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(repo, "build", "python"), **(environment or {}))
    return subprocess.run(command, cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout


def google_benchmark(repo, program, pattern):
    """Google Benchmark's real time per iteration, by name (milliseconds)."""
    output = run([os.path.join(repo, "build", "bin", program), f"--benchmark_filter={pattern}",
                  "--benchmark_format=json"], repo)
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    return {b["name"]: b["real_time"] * scale[b["time_unit"]]
            for b in json.loads(output)["benchmarks"]}


def measure(repo, python):
    """Every figure of one build, in its own processes."""
    figures = {}
    for case in ("gpt2 AdamW step (ms)", "gpt2 clip + AdamW step (ms)"):
        output = run([python, os.path.abspath(__file__), "--child", case], repo)
        figures[case] = json.loads(output.strip().splitlines()[-1])[case] * 1e3
    dispatch = google_benchmark(repo, "dispatch_benchmark", "^dispatch/1000$")
    figures["dispatch, 1000 params (ms)"] = dispatch["dispatch/1000"]
    compiled = google_benchmark(repo, "compile_benchmark", "^coldCompile/(1|1000)/")
    for name, value in compiled.items():
        count = name.split("/")[1]
        figures[f"cold compile, {count} params (ms)"] = value
    with tempfile.TemporaryDirectory(prefix="widefuse-ab-cache") as cache:
        output = run([python, "benchmarks/trace_first_call_benchmark.py", "--child", "10000",
                      "numpy"], repo, {"WIDEFUSE_CACHE_DIR": cache})
    figures["first traced call, 10000 params (s)"] = json.loads(
        output.strip().splitlines()[-1])["first_call"]
    output = run([python, "benchmarks/host_overhead_benchmark.py", "10", "100", "1000", "10000"],
                 repo)
    counts = [10, 100, 1000, 10000]
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != len(counts) + 1 or not re.match(r"^[\d.]+ \(", cells[1]):
            continue
        for count, cell in zip(counts, cells[1:]):
            figures[f"host cost: {cells[0]}, {count} params (us)"] = float(cell.split()[0])
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    arguments = parser.parse_args()
    repos = {"old": os.path.abspath(arguments.old), "new": os.path.abspath(arguments.new)}
    results = {"old": [], "new": []}
    for round_index in range(arguments.rounds):
        order = ("old", "new") if round_index % 2 == 0 else ("new", "old")
        for side in order:
            print(f"ab_builds: round {round_index + 1}, {side}", file=sys.stderr, flush=True)
            results[side].append(measure(repos[side], arguments.python))
    commits = {side: run(["git", "rev-parse", "--short", "HEAD"], repo).strip()
               for side, repo in repos.items()}
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.2f}; old {commits['old']}, new {commits['new']}; median of "
          f"{arguments.rounds} rounds, the builds in turn\n")
    print("| figure | old | new | new / old |")
    print("|---|---:|---:|---:|")
    for name in results["old"][0]:
        old = statistics.median(r[name] for r in results["old"])
        new = statistics.median(r[name] for r in results["new"] if name in r)
        print(f"| {name} | {old:.4g} | {new:.4g} | {new / old:.2f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main()
