"""Time and memory of one optimizer step, in the format of the AOTAutograd seed's table
(model, dtype, name, time (s), mem (GB), time %, mem %), for torch.optim.AdamW (single-tensor,
foreach=True, fused=True) and widefuse.optim.AdamW (float32; bf16 parameters with float32
master weights; bf16 parameters with int16 remainders), on CPU tensors, each configuration in
a process of its own so that its peak resident memory (VmHWM) is its own.

Per configuration: parameters and grads of the model's shapes, two warm-up steps (the first
makes the state and, for widefuse, compiles the kernel), then timed steps with the same grads.
Reported: the median step time; `mem`, the process's peak resident memory over the whole run;
`step peak`, how far the resident memory rose above its level before the timed steps while
they ran (VmHWM reset through /proc/self/clear_refs): the temporaries one step allocates
(torch's foreach path allocates some the size of the parameters, PyTorch issue 97712);
`state B/elem`, the optimizer state's bytes per parameter element (every state tensor, the
0-d steps included). time % and mem % are against the single-tensor torch row of the model.

Usage: PYTHONPATH=build/python .venv/bin/python benchmarks/optimizer_memory_benchmark.py
         [--models gpt2,bert-base,small] [--steps 3] [--json]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CONFIGURATIONS = ["torch single-tensor", "torch foreach", "torch fused", "widefuse fp32",
                  "widefuse bf16 + fp32 master", "widefuse bf16 + remainders"]


def resident_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak():
    """Sets VmHWM to the current resident size (Linux 4.0 and later)."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def model_shapes(model):
    import widefuse
    if model == "small":
        return [(1024,)] * 1000
    return [tuple(shape) for shape in widefuse.model_shapes(model)]


def make_optimizer(configuration, params):
    import torch
    import widefuse.optim
    if configuration == "torch single-tensor":
        return torch.optim.AdamW(params, lr=1e-3, foreach=False)
    if configuration == "torch foreach":
        return torch.optim.AdamW(params, lr=1e-3, foreach=True)
    if configuration == "torch fused":
        return torch.optim.AdamW(params, lr=1e-3, fused=True)
    if configuration == "widefuse fp32":
        return widefuse.optim.AdamW(params, lr=1e-3)
    if configuration == "widefuse bf16 + fp32 master":
        return widefuse.optim.AdamW(params, lr=1e-3, master_weights=True)
    if configuration == "widefuse bf16 + remainders":
        return widefuse.optim.AdamW(params, lr=1e-3, master_weights=True,
                                    store_param_remainders=True)
    raise ValueError(configuration)


def worker(model, configuration, steps):
    """One configuration in this process; prints its JSON row."""
    import torch
    dtype = torch.bfloat16 if "bf16" in configuration else torch.float32
    generator = torch.Generator().manual_seed(0)
    params = []
    for shape in model_shapes(model):
        param = torch.nn.Parameter(torch.randn(shape, generator=generator).to(dtype))
        param.grad = torch.randn(shape, generator=generator).to(dtype)
        params.append(param)
    optimizer = make_optimizer(configuration, params)
    for _ in range(2):
        optimizer.step()
    before = resident_kib("VmRSS")
    peak_so_far = resident_kib("VmHWM")
    reset_peak()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        optimizer.step()
        times.append(time.perf_counter() - start)
    step_peak = resident_kib("VmHWM")
    elements = sum(p.numel() for p in params)
    state_bytes = sum(value.numel() * value.element_size()
                      for state in optimizer.state.values() for value in state.values()
                      if isinstance(value, torch.Tensor))
    print(json.dumps(dict(
        model=model, name=configuration, dtype=str(dtype).removeprefix("torch."),
        params=len(params), elements=elements, seconds=statistics.median(times), steps=steps,
        peak_gb=max(peak_so_far, step_peak) * 1024 / 1e9,
        step_peak_mb=(step_peak - before) * 1024 / 1e6,
        state_bytes_per_element=state_bytes / elements,
        launches=getattr(optimizer, "launches_per_step", None))))


def run_worker(model, configuration, steps):
    command = [sys.executable, __file__, "--worker", model, configuration, "--steps", str(steps)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{model} / {configuration} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def table(rows):
    lines = ["| model | dtype | name | time (s) | mem (GB) | time % | mem % | step peak (MB) | "
             "state B/elem |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        base = next(r for r in rows if r["model"] == row["model"] and
                    r["name"] == "torch single-tensor")
        time_percent = round(100 * (row["seconds"] / base["seconds"] - 1))
        memory_percent = round(100 * (row["peak_gb"] / base["peak_gb"] - 1))
        lines.append(f"| {row['model']} | {row['dtype']} | {row['name']} | "
                     f"{row['seconds']:.3f} | {row['peak_gb']:.3f} | {time_percent} | "
                     f"{memory_percent} | {row['step_peak_mb']:.1f} | "
                     f"{row['state_bytes_per_element']:.2f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="gpt2,bert-base,small")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", nargs=2, metavar=("MODEL", "CONFIGURATION"))
    arguments = parser.parse_args()
    if arguments.worker:
        return worker(*arguments.worker, arguments.steps)
    rows = []
    for model in arguments.models.split(","):
        for configuration in CONFIGURATIONS:
            print(f"optimizer_memory_benchmark: {model} / {configuration}", file=sys.stderr)
            rows.append(run_worker(model, configuration, arguments.steps))
    import torch
    context = dict(date=time.strftime("%Y-%m-%d"), num_cpus=os.cpu_count(),
                   load_avg=list(os.getloadavg()), torch=torch.__version__,
                   torch_threads=torch.get_num_threads())
    if arguments.json:
        json.dump(dict(context=context, rows=rows), sys.stdout, indent=1)
    else:
        print(f"{context}\n\n{table(rows)}")


if __name__ == "__main__":
    main()
