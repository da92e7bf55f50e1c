"""Low-bit optimizer state on the CPU, all in one run: widefuse.optim.AdamW (float32 moments),
AdamW8bit, AdamW4bit and AdamWFp8 beside torchao's AdamW8bit, over the gpt2 preset's 148 parameters
(124M elements), on the host backend; and AdamW8bit on bf16 parameters with 24-bit masters
(``master_weight_bits=24``: its state counts the int8 correction).

For each optimizer: the first step (state creation, trace, compile, run), the median of the
steady steps (interleaved rounds, new grad tensors every step, as zero_grad(set_to_none=True)
leaves them), the state's bytes per parameter, and the peak extra resident memory of a
steady step (VmHWM after the step minus VmRSS before it; /proc/self/clear_refs resets the
peak). torchao compiles one graph per parameter shape at its first step.

Usage: PYTHONPATH=build/python .venv/bin/python benchmarks/low_bit_benchmark.py [--rounds N]
       [--preset gpt2] [--no-torchao]
Prints a Markdown table.
"""

import argparse
import statistics
import time

import torch

import widefuse.optim
from widefuse.model_presets import model_shapes


def optimizers(with_torchao):
    made = {
        "widefuse AdamW (fp32 state)": lambda ps: widefuse.optim.AdamW(ps, lr=1e-3),
        "widefuse AdamW8bit": lambda ps: widefuse.optim.AdamW8bit(ps, lr=1e-3),
        "widefuse AdamW4bit": lambda ps: widefuse.optim.AdamW4bit(ps, lr=1e-3),
        "widefuse AdamWFp8": lambda ps: widefuse.optim.AdamWFp8(ps, lr=1e-3),
        "widefuse AdamW8bit, bf16 + 24-bit masters": lambda ps: widefuse.optim.AdamW8bit(
            ps, lr=1e-3, master_weights=True, master_weight_bits=24),
    }
    if with_torchao:
        import torchao.optim
        made["torchao AdamW8bit"] = lambda ps: torchao.optim.AdamW8bit(ps, lr=1e-3)
    return made


def memory_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak():
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def state_bytes(optimizer):
    total = 0
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                inner = [getattr(value, name) for name in ("codes", "scale")
                         if isinstance(getattr(value, name, None), torch.Tensor)]
                for tensor in inner or [value]:
                    total += tensor.numel() * tensor.element_size()
    return total


class Run:
    def __init__(self, name, make, shapes, generator):
        self.name = name
        dtype = torch.bfloat16 if "bf16" in name else torch.float32
        self.params = [torch.nn.Parameter((torch.randn(s, generator=generator) * 0.02).to(dtype))
                       for s in shapes]
        self.elements = sum(p.numel() for p in self.params)
        self.grads = [[(torch.randn(s, generator=generator) * 1e-3).to(dtype) for s in shapes]
                      for _ in range(2)]
        self.optimizer = make(self.params)
        self.times, self.peaks, self.count = [], [], 0
        self.first = self.step()

    def step(self):
        for param, grad in zip(self.params, self.grads[self.count % 2]):
            param.grad = grad
        self.count += 1
        reset_peak()
        before = memory_kib("VmRSS")
        start = time.perf_counter()
        self.optimizer.step()
        elapsed = time.perf_counter() - start
        self.peaks.append(max(0, memory_kib("VmHWM") - before))
        return elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--preset", default="gpt2")
    parser.add_argument("--no-torchao", action="store_true")
    arguments = parser.parse_args()
    shapes = model_shapes(arguments.preset)
    generator = torch.Generator().manual_seed(0)
    runs = [Run(name, make, shapes, generator)
            for name, make in optimizers(not arguments.no_torchao).items()]
    for run in runs:
        run.step()  # a second step: prepared bindings, warm caches
        run.peaks.clear()
    for _ in range(arguments.rounds):  # interleaved: the machine's noise falls on all alike
        for run in runs:
            run.times.append(run.step())
    baseline = statistics.median(runs[0].times)
    print(f"{arguments.preset}: {len(shapes)} parameters, {runs[0].elements / 1e6:.1f}M "
          f"elements, {torch.get_num_threads()} threads, {arguments.rounds} interleaved rounds\n")
    print("| optimizer | first step | steady step (median) | vs widefuse fp32 | state bytes "
          "per parameter | peak extra memory of a step |")
    print("|---|---:|---:|---:|---:|---:|")
    for run in runs:
        steady = statistics.median(run.times)
        print(f"| {run.name} | {run.first:.2f} s | {steady * 1e3:.1f} ms | "
              f"{steady / baseline:.2f}x | {state_bytes(run.optimizer) / run.elements:.3f} | "
              f"{max(run.peaks) / 1024:.1f} MiB |")


if __name__ == "__main__":
    main()
