"""Joins the GPU check's results into the Markdown table of docs/performance.md:

    python3 report.py CASES.json CUDA_BENCHMARK.json TORCH.json

CASES.json from `cuda_benchmark --list-cases`, CUDA_BENCHMARK.json from cuda_benchmark's
--benchmark_out (median aggregates), TORCH.json from torch_adam.py. Each cell is the time per
step and the achieved bandwidth (bytes an Adam step must move / time)."""

import json
import sys


def cell(seconds: float, bytes_per_step: int) -> str:
    return f"{seconds * 1e6:,.0f} us, {bytes_per_step / seconds / 1e9:,.0f} GB/s"


def main() -> None:
    cases = json.load(open(sys.argv[1]))
    widefuse, variants = {}, {}
    for row in json.load(open(sys.argv[2]))["benchmarks"]:
        if row.get("aggregate_name", "median") != "median" or row.get("error_occurred"):
            continue
        kind, case, name = row["run_name"].split("/")[:3]
        unit = {"us": 1e-6, "ms": 1e-3, "ns": 1e-9, "s": 1.0}[row["time_unit"]]
        measured = (row["real_time"] * unit, int(row.get("launches", row.get("kernels", 0))),
                    int(row.get("registers", 0)), int(row.get("blocks_per_sm", 0)))
        (widefuse if kind == "adam" else variants)[(case, name)] = measured
    torch = json.load(open(sys.argv[3]))
    print(f"torch {torch['torch']} on {torch['device']}\n")
    print("| case | params | elements | bytes/step | widefuse batched | widefuse per-component "
          "| torch Adam fused | torch Adam foreach | device copy of the same bytes |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        name, size = case["name"], case["bytes_per_step"]
        cells = []
        for mode in ("batched", "per-component"):
            if (name, mode) in widefuse:
                seconds, launches, _, _ = widefuse[(name, mode)]
                cells.append(f"{cell(seconds, size)} ({launches} launches)")
            else:
                cells.append("—")
        measured = torch["cases"].get(name, {})
        for key in ("fused", "foreach", "copy"):
            cells.append(cell(measured[key], size) if key in measured else "—")
        print(f"| {name} | {len(case['shapes'])} | {case['elements']:,} | {size / 1e9:.2f} GB | "
              + " | ".join(cells) + " |")
    print_variants(cases, widefuse, variants)


def print_variants(cases: list, widefuse: dict, variants: dict) -> None:
    """The second table: the batched kernel under each schedule, with its registers and the
    blocks per multiprocessor it was compiled for."""
    names = sorted({name for _, name in variants})
    if not names:
        return
    print("\n| case | default | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for case in cases:
        size = case["bytes_per_step"]
        row = [("default", widefuse.get((case["name"], "batched")))]
        row += [(name, variants.get((case["name"], name))) for name in names]
        cells = [f"{cell(m[0], size)}, {m[2]} regs, {m[3]} blocks/SM" if m else "—"
                 for _, m in row]
        print(f"| {case['name']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
