"""torch's Adam on the GPU over the cases of `cuda_benchmark --list-cases`, timed as
cuda_benchmark times widefuse (wall clock of 10 steps and one synchronisation, the median of
several repetitions): torch.optim.Adam with fused=True and with foreach=True, and a plain
device-to-device copy that moves the same bytes as one Adam step (half read, half written).

    python3 torch_adam.py CASES.json OUT.json

Runs on the GPU machine with its own torch; the results are joined with widefuse's by
report.py. Only the standard library and torch are needed. Where torch.cuda is unavailable (run.sh
on the CUDA driver double) each case is written as {"not_measured": reason}, so the file keeps
its format and report.py leaves those cells empty."""

import json
import statistics
import sys
import time

import torch

STEPS = 10
REPETITIONS = 7


def timed(step) -> float:
    """Median seconds per call of `step`, after two warm-up calls."""
    step()
    step()
    torch.cuda.synchronize()
    samples = []
    for _ in range(REPETITIONS):
        start = time.perf_counter()
        for _ in range(STEPS):
            step()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / STEPS)
    return statistics.median(samples)


def adam_seconds(case: dict, dtype: torch.dtype, **options) -> float:
    params = [torch.full(shape, 0.0115, dtype=dtype, device="cuda") for shape in case["shapes"]]
    for param in params:
        param.grad = torch.full_like(param, 0.0115)
    optimizer = torch.optim.Adam(params, lr=1e-3, **options)
    seconds = timed(optimizer.step)
    del optimizer, params
    torch.cuda.empty_cache()
    return seconds


def copy_seconds(case: dict) -> float:
    half = case["bytes_per_step"] // 2
    source = torch.full((half,), 0x3C, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    seconds = timed(lambda: target.copy_(source))
    del source, target
    torch.cuda.empty_cache()
    return seconds


def main() -> None:
    cases = json.load(open(sys.argv[1]))
    if not torch.cuda.is_available():
        reason = f"torch {torch.__version__} has no CUDA device here"
        print(f"torch_adam: not measured, {reason}", flush=True)
        results = {"torch": torch.__version__, "device": f"none ({reason})",
                   "cases": {case["name"]: {"not_measured": reason} for case in cases}}
        json.dump(results, open(sys.argv[2], "w"), indent=1)
        return
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16}
    results = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "cases": {}}
    for case in cases:
        dtype = dtypes[case["dtype"]]
        row = {"copy": copy_seconds(case),
               "fused": adam_seconds(case, dtype, fused=True),
               "foreach": adam_seconds(case, dtype, foreach=True)}
        results["cases"][case["name"]] = row
        print(case["name"], {k: f"{v * 1e6:.1f} us" for k, v in row.items()}, flush=True)
    json.dump(results, open(sys.argv[2], "w"), indent=1)


if __name__ == "__main__":
    main()
