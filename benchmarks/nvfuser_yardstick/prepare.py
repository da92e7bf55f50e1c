#!/usr/bin/env python3
"""Copies the saved nvFuser tests (nvfuser_tests/) into a run directory, rewritten for CPU:
device strings "cuda[:N]" -> "cpu", .cuda() -> .cpu(), CUDA-only guards made true (the
tests think they run on an sm_90 device), and the one missing import upstream forgot."""
import os
import pathlib
import re
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
# nvFuser's test files are not in this repository (they are NVIDIA/Fuser's code): fetch them
# into a directory outside it, laid out as README.md lists, and point NVFUSER_TESTS there.
SRC = pathlib.Path(os.environ.get("NVFUSER_TESTS", HERE / "nvfuser_tests"))
DST = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "run"

REWRITES = [
    (re.compile(r"""device=(["'])cuda(:\d+)?\1"""), 'device="cpu"'),
    (re.compile(r"""\.cuda\(\)"""), ".cpu()"),
    (re.compile(r"RUN_NVFUSER = RUN_CUDA and not TEST_WITH_ROCM"),
     "RUN_NVFUSER = True  # yardstick: CPU run"),
    (re.compile(r"torch\.cuda\.get_device_properties\(torch\.cuda\.current_device\(\)\)"),
     'type("YardstickDeviceProperties", (), {"major": 9, "minor": 0})()'),
    (re.compile(r"^(from looseversion import LooseVersion)$", re.M),
     r"\1\nfrom contextlib import contextmanager  # yardstick: upstream omits it"),
]


if "skip_broadcast_samples" in os.environ.get("YARDSTICK_SIMULATE", ""):
    # simulation: drop the broadcast samples of the binary generators (implicit broadcast is
    # being added elsewhere) to see what the other samples say
    REWRITES.append((re.compile(r"enable_broadcast_testing: bool = True"),
                     "enable_broadcast_testing: bool = False"))

if DST.exists():
    shutil.rmtree(DST)
for path in SRC.rglob("*.py"):
    text = path.read_text()
    for pattern, replacement in REWRITES:
        text = pattern.sub(replacement, text)
    out = DST / path.relative_to(SRC)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
shutil.copy(HERE / "conftest.py", DST / "conftest.py")
(DST / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
print(f"prepared {DST}")
