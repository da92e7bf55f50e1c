"""benchmarks/gpu/report.py on small results in the formats the GPU check writes (cases.json from
`cuda_benchmark --list-cases`, Google Benchmark's JSON, torch_adam.py's JSON): the columns, the
cells computed from the inputs (time per step, bytes per step / time), and which rows it skips.
Then the table kept from the first GPU run, rebuilt from the JSON kept beside it."""

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
REPORT = REPOSITORY / "benchmarks" / "gpu" / "report.py"
FIRST_RUN = REPOSITORY / "docs" / "gpu_runs" / "2026-12-01-first"

# bytes_per_step = 7 accesses x element size x elements (28 in f32, 14 in bf16).
CASES = [
    {"name": "big-f32", "dtype": "f32", "elements": 1_000_000, "bytes_per_step": 28_000_000,
     "shapes": [[1000, 1000]]},
    {"name": "three-bf16", "dtype": "bf16", "elements": 3000, "bytes_per_step": 42_000,
     "shapes": [[1000], [1000], [1000]]},
    {"name": "unrun-f32", "dtype": "f32", "elements": 4, "bytes_per_step": 112,
     "shapes": [[4]]},
]


def row(run_name, aggregate, real_time, unit="us", **counters):
    """One row of cuda_benchmark's --benchmark_out with --benchmark_report_aggregates_only."""
    return {"name": f"{run_name}_{aggregate}", "run_name": run_name, "run_type": "aggregate",
            "aggregate_name": aggregate, "real_time": real_time, "time_unit": unit, **counters}


BENCHMARKS = [
    # Only the median counts: the mean and the standard deviation beside it are ignored.
    row("adam/big-f32/batched/manual_time", "mean", 999.0, launches=1),
    row("adam/big-f32/batched/manual_time", "median", 10.0, launches=1, registers=40,
        blocks_per_sm=4),
    row("adam/big-f32/batched/manual_time", "stddev", 0.5, launches=1),
    # Milliseconds: 0.02 ms is 20 us.
    row("adam/big-f32/per-component/manual_time", "median", 0.02, "ms", launches=1),
    # The first run's counter was "kernels" (docs/gpu_runs): still read.
    row("adam/three-bf16/batched/manual_time", "median", 7.0, kernels=1),
    # A benchmark that failed leaves its cell empty.
    dict(row("adam/three-bf16/per-component/manual_time", "median", 1.0, launches=3),
         error_occurred=True),
    row("schedule/big-f32/prefetch/manual_time", "median", 8.0, launches=1, registers=78,
        blocks_per_sm=3),
]

TORCH = {"torch": "2.11.0+cu130", "device": "NVIDIA H200",
         "cases": {"big-f32": {"copy": 8e-6, "fused": 14e-6, "foreach": 28e-6},
                   "three-bf16": {"not_measured": "torch has no CUDA device here"}}}

# big-f32 moves 28 MB a step: 10 us is 2,800 GB/s, 20 us 1,400, 14 us 2,000, 28 us 1,000,
# 8 us 3,500. three-bf16 moves 42 kB: 7 us is 6 GB/s.
EXPECTED = """torch 2.11.0+cu130 on NVIDIA H200

| case | params | elements | bytes/step | widefuse batched | widefuse per-component | torch Adam fused | torch Adam foreach | device copy of the same bytes |
|---|---|---|---|---|---|---|---|---|
| big-f32 | 1 | 1,000,000 | 0.03 GB | 10 us, 2,800 GB/s (1 launches) | 20 us, 1,400 GB/s (1 launches) | 14 us, 2,000 GB/s | 28 us, 1,000 GB/s | 8 us, 3,500 GB/s |
| three-bf16 | 3 | 3,000 | 0.00 GB | 7 us, 6 GB/s (1 launches) | — | — | — | — |
| unrun-f32 | 1 | 4 | 0.00 GB | — | — | — | — | — |

| case | default | prefetch |
|---|---|---|
| big-f32 | 10 us, 2,800 GB/s, 40 regs, 4 blocks/SM | 8 us, 3,500 GB/s, 78 regs, 3 blocks/SM |
| three-bf16 | 7 us, 6 GB/s, 0 regs, 0 blocks/SM | — |
| unrun-f32 | — | — |
"""


def report(directory, cases, benchmarks, torch):
    paths = []
    for name, content in (("cases.json", cases), ("cuda_benchmark.json", benchmarks),
                          ("torch.json", torch)):
        paths.append(directory / name)
        paths[-1].write_text(json.dumps(content))
    result = subprocess.run([sys.executable, str(REPORT), *map(str, paths)], capture_output=True,
                            text=True, check=True)
    return result.stdout


def test_the_cells_are_the_medians_and_bandwidths_the_inputs_give(tmp_path):
    assert report(tmp_path, CASES, {"benchmarks": BENCHMARKS}, TORCH) == EXPECTED


def test_without_schedule_rows_there_is_no_second_table(tmp_path):
    benchmarks = [b for b in BENCHMARKS if not b["run_name"].startswith("schedule/")]
    table = report(tmp_path, CASES, {"benchmarks": benchmarks}, TORCH)
    assert table == EXPECTED[:EXPECTED.index("\n| case | default")]


def test_the_first_gpu_runs_table_is_rebuilt_from_its_json(tmp_path):
    # The kept table says "kernels" where report.py now says "launches" (the same counter).
    kept = (FIRST_RUN / "table.md").read_text().replace(" kernels)", " launches)")
    rebuilt = subprocess.run([sys.executable, str(REPORT)] + [
        str(FIRST_RUN / name) for name in ("cases.json", "cuda_benchmark.json", "torch.json")],
        capture_output=True, text=True, check=True).stdout
    assert rebuilt == kept
