"""benchmarks/gpu/run.sh end to end on the CUDA driver double (its WIDEFUSE_GPU_DOUBLE mode),
with a bundle of the build's own executables: the exit status, every step in the log, and the
format of each file the script promises (what report.py and docs/performance.md read). It
checks that the script runs, not what it measures: the emulator's times mean nothing.

ctest gives the double's libraries and kernel cache (WIDEFUSE_DRIVER_DOUBLE_ENVIRONMENT) and
WIDEFUSE_BUILD_DIR; the results stay in <build>/gpu-run-on-double for a look afterwards."""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("WIDEFUSE_BUILD_DIR", REPOSITORY / "build"))
FILES = ["log.txt", "table.md", "cases.json", "cuda_benchmark.json", "torch.json",
         "optim_step.json", "adam.json", "ncu.txt"]
STEPS = ["gpu", "tests", "two ranks", "adam benchmark", "optimizer steps from Python",
         "widefuse adam", "profile", "done status 0"]
BYTES = {"f32": 4, "bf16": 2}


def make_bundle(directory):
    """bundle.sh's layout (executables, python/, lib/) as links into the build: nothing copied,
    and every executable the build has, so the bundle never lags bundle.sh's list."""
    directory.mkdir()
    (directory / "lib").mkdir()
    (directory / "python").symlink_to(BUILD / "python")
    for executable in (BUILD / "bin").iterdir():
        (directory / executable.name).symlink_to(executable)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    for variable in ("WIDEFUSE_CUDA_DRIVER_LIBRARY", "WIDEFUSE_NVRTC_LIBRARY"):
        assert os.environ.get(variable), f"{variable} is not set: run this test through ctest"
    bundle = tmp_path_factory.mktemp("gpu") / "bundle"
    make_bundle(bundle)
    out = BUILD / "gpu-run-on-double"
    shutil.rmtree(out, ignore_errors=True)
    # run.sh calls `python3`: this interpreter's, which has torch and the test requirements.
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    env = dict(os.environ, WIDEFUSE_GPU_DOUBLE="1", WIDEFUSE_GPU_BUNDLE=str(bundle), OUT=str(out),
               PATH=path)
    result = subprocess.run(["bash", str(REPOSITORY / "benchmarks/gpu/run.sh")], env=env,
                            capture_output=True, text=True, timeout=300)
    return result, out


def json_file(run, name):
    return json.loads((run[1] / name).read_text())


def test_the_script_succeeds_and_logs_every_step_in_order(run):
    result, out = run
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    log = (out / "log.txt").read_text()
    headers = [line[3:].rsplit(" (", 1)[0] for line in log.splitlines() if line.startswith("== ")]
    assert headers == STEPS
    # What cannot run on the double says so.
    assert "nvidia-smi not run: no GPU" in log
    assert "two-rank step not run: 0 GPU(s), it needs two" in log
    assert "ncu not run: Nsight Compute needs a GPU" in log
    assert (out / "ncu.txt").read_text().startswith("ncu not run")
    # The gpu-labelled tests passed on the double (gtest's brief output ends with its summary).
    assert log.count("[  PASSED  ]") == 3 and "[  FAILED  ]" not in log


def test_every_promised_file_is_written(run):
    assert sorted(path.name for path in run[1].iterdir()) == sorted(FILES)


def test_the_cases_are_consistent_with_their_shapes(run):
    cases = json_file(run, "cases.json")
    assert [case["dtype"] for case in cases] == ["f32", "bf16"]  # the tiny cases, both dtypes
    for case in cases:
        assert case["elements"] == sum(math.prod(shape) for shape in case["shapes"])
        assert case["bytes_per_step"] == 7 * BYTES[case["dtype"]] * case["elements"]


def medians(run):
    rows = json_file(run, "cuda_benchmark.json")["benchmarks"]
    assert rows and not any(row.get("error_occurred") for row in rows)
    return {row["run_name"].rsplit("/", 1)[0]: row for row in rows
            if row["aggregate_name"] == "median"}


def test_each_case_has_a_median_of_every_mode_and_schedule(run):
    measured = medians(run)
    variants = {name.split("/")[2] for name in measured if name.startswith("schedule/")}
    assert variants, "no schedule variants"
    for case in json_file(run, "cases.json"):
        expected = [f"adam/{case['name']}/{mode}" for mode in ("batched", "per-component")]
        expected += [f"schedule/{case['name']}/{variant}" for variant in sorted(variants)]
        for name in expected:
            row = measured[name]
            assert row["real_time"] > 0 and row["time_unit"] == "us", name
            assert row["params"] == len(case["shapes"]) and row["registers"] >= 0, name
            assert row["blocks_per_sm"] >= 1, name
        assert measured[expected[0]]["launches"] == 1  # batched: one kernel for every parameter
        assert measured[expected[1]]["launches"] > 1  # per-component: one per parameter


def test_torch_json_marks_each_case_measured_or_not(run):
    torch = json_file(run, "torch.json")
    assert torch["torch"] and torch["device"]
    names = [case["name"] for case in json_file(run, "cases.json")]
    assert list(torch["cases"]) == names
    for measured in torch["cases"].values():
        if "not_measured" in measured:
            assert measured == {"not_measured": measured["not_measured"]}
            assert torch["device"].startswith("none (")
        else:
            assert sorted(measured) == ["copy", "foreach", "fused"]
            assert all(seconds > 0 for seconds in measured.values())


def table_rows(lines):
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_the_tables_have_a_row_per_case_with_the_benchmarks_launches(run):
    torch, cases = json_file(run, "torch.json"), json_file(run, "cases.json")
    lines = (run[1] / "table.md").read_text().splitlines()
    assert lines[0] == f"torch {torch['torch']} on {torch['device']}"
    first, second = "\n".join(lines[2:]).split("\n\n")
    header, rule, *rows = table_rows(first.splitlines())
    assert header == ["case", "params", "elements", "bytes/step", "widefuse batched",
                      "widefuse per-component", "torch Adam fused", "torch Adam foreach",
                      "device copy of the same bytes"]
    assert rule == ["---"] * len(header)
    measured = medians(run)
    assert [row[0] for row in rows] == [case["name"] for case in cases]
    for row, case in zip(rows, cases):
        assert row[1:4] == [str(len(case["shapes"])), f"{case['elements']:,}",
                            f"{case['bytes_per_step'] / 1e9:.2f} GB"]
        for cell, mode in zip(row[4:6], ("batched", "per-component")):
            launches = measured[f"adam/{case['name']}/{mode}"]["launches"]
            assert cell.endswith(f" GB/s ({launches:.0f} launches)"), cell
        unmeasured = "not_measured" in torch["cases"][case["name"]]
        assert all((cell == "—") == unmeasured for cell in row[6:]), row
    header, _, *rows = table_rows(second.splitlines())
    variants = sorted({name.split("/")[2] for name in measured if name.startswith("schedule/")})
    assert header == ["case", "default"] + variants
    assert [row[0] for row in rows] == [case["name"] for case in cases]
    assert all(cell.endswith(" blocks/SM") for row in rows for cell in row[1:]), rows


def test_the_python_steps_have_a_row_per_group_dtype_and_runner(run):
    steps = json_file(run, "optim_step.json")
    assert steps["device"] == "cpu" and "skipped" not in steps
    rows = steps["rows"]
    assert {(row["group"], row["dtype"]) for row in rows} == {
        ("adam", "float32"), ("adam", "bfloat16"), ("clip + adamw", "float32"),
        ("clip + adamw", "bfloat16"), ("adafactor", "float32"), ("low-bit adamw", "float32"),
        ("low-bit adamw", "bfloat16")}
    expected = {"torch fused", "widefuse.optim", "widefuse.optim.AdamW(max_grad_norm=1.0)",
                "widefuse.optim.Adafactor", "widefuse.optim.AdamW8bit",
                "widefuse.optim.AdamW4bit", "widefuse.optim.AdamWFp8"}
    assert expected <= {row["runner"] for row in rows}
    for row in rows:
        assert row["model"] == "tiny" and row["params"] >= 1
        assert row["host_ms"] > 0 and row["step_ms"] > 0


def json_documents(text):
    """The documents of a file that several commands appended to, one after the other."""
    decoder, documents, position = json.JSONDecoder(), [], 0
    while (position := re.compile(r"\s*").match(text, position).end()) < len(text):
        document, position = decoder.raw_decode(text, position)
        documents.append(document)
    return documents


def test_widefuse_adam_wrote_three_verified_steps(run):
    steps = json_documents((run[1] / "adam.json").read_text())
    assert [(step["backend"], step["params"]) for step in steps] == [
        ("cuda", 2), ("cuda", 6), ("cuda", 6)]  # seed, tiny, tiny clipped
    assert all(0 <= step["max_abs_error_vs_oracle"] < 1e-5 for step in steps)
    assert [step["launches"] for step in steps] == [1, 1, 2]
    clipped = steps[2]
    assert clipped["max_grad_norm"] == 1.0 and clipped["phases"] == 2
    assert all(not step["found_inf"] and step["grad_norm"] > 0 for step in clipped["per_step"])
