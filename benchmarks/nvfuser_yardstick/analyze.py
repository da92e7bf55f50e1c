#!/usr/bin/env python3
"""Summarises yardstick result files (JSON lines from conftest.py): totals, and failures
grouped by cause (rules below, first match wins; unmatched failures are grouped by their
normalised message so that new causes show up)."""
import collections
import json
import re
import sys

# (cause, category, regex on "message + longrepr tail"); categories: a = widefuse gap to fix,
# b = being added by the dtype / shape engineers, c = honest non-goal, d = harness artefact.
RULES = [
    # (cause, category, regex on message + traceback tail, optional regex on the test name)
    ("dtype: complex (ComplexFloat/ComplexDouble tensors, complex scalars, real/imag)", "b",
     r"no data type for torch\.complex|DataType\.Complex|ComplexFloat|ComplexDouble|"
     r"complex scalar|\(\S+j\) is not a number|\bcomplex\b.*(not supported|unsupported)|no op '(real|imag)'", None),
    ("dtype: FP8 / FP4 (Float8_e4m3fn, Float8_e5m2, ...)", "b",
     r"float8|Float8|float4|Float4", None),
    ("repr(fd) prints a value added as several plain outputs once (the printed definition "
     "returns fewer outputs)", "a", r"(?m)^>\s+captured_outputs\[idx\]", None),
    ("repr(fd): nvFuser's printout starts with a newline (line 1 is the def) and is only the "
     "def; the tests read the function name from line 1", "a",
     r"(?m)^>\s+func_name = re\.findall", None),
    ("nvFuser's user-schedule API: ops added in schedule() must raise 'Attempting to add to a "
     "completed definition'", "c", r"DID NOT RAISE|not raised", r"schedule"),
    ("symbolic extents: Tensor.shape() / size(i) / define_vector / fd.ops.size|shape|at", "b",
     r"'tuple' object is not callable|define_vector|no op '(size|shape|at)'|"
     r"holds the scalar value|has no shape vectors|Tensor\.size is not supported", None),
    ("implicit broadcast of extent-1 / broadcast dimensions", "b",
     r"pointwise ops need one shape|at run time '[^']*' has shape", None),
    ("nvFuser's error classes (NotImplementedError for an undefined FusionDefinition, ...)", "b",
     r"needs a finished definition", None),
    ("nvFuser's exact error-message wording (pytest.raises(match=...))", "c",
     r"Regex pattern did not match", None),
    ("nvfuser module-level helpers: compute_contiguity, compute_tensor_descriptor, version()",
     "a", r"widefuse has no nvfuser\.(compute_contiguity|compute_tensor_descriptor|version|"
     r"nvfuser_version)", None),
    ("nvFuser internals: debug_output(), profile(), FusionCache, clone, segment", "c",
     r"debug_output|profile|nvfuser\.(FusionCache|clone|enable_automatic_serialization)|"
     r"'segment'", None),
    ("CPU tensors: nvFuser's from_pytorch refuses them (ValueError); widefuse runs them", "c",
     r"should have raised an error for a CPU Tensor", None),
    ("1-ulp libm difference vs torch's CPU kernels at large magnitudes (tests use atol=1e-3, "
     "rtol=0; on CUDA both sides use libdevice)", "d",
     r"Tensor-likes are not close![\s\S]*Greatest relative difference: 1\.\d+e-(07|16)", None),
    ("torch's CPU integer division by zero raises ZeroDivisionError in the reference (CUDA "
     "does not)", "d", r"ZeroDivisionError", None),
    ("upstream test bug: `re` used without import (fails on nvFuser too)", "d",
     r"name 're' is not defined", None),
]


def cause_of(record):
    text = record.get("message", "") + "\n" + record.get("longrepr_tail", "")
    for cause, category, pattern, test_pattern in RULES:
        if test_pattern and not re.search(test_pattern, record["test"]):
            continue
        if re.search(pattern, text):
            return cause, category
    message = record.get("message", "").splitlines()[0] if record.get("message") else "?"
    message = re.sub(r"0x[0-9a-f]+|\d+", "N", message)[:160]
    return "UNCLASSIFIED: " + message, "?"


def main(paths):
    records = []
    for path in paths:
        with open(path) as f:
            records += [json.loads(line) for line in f if line.strip()]
    pointwise = [r for r in records if r.get("pointwise")]
    counts = collections.Counter(r["outcome"] for r in pointwise)
    print(f"collected {len(records)}  pointwise {len(pointwise)}  "
          f"not-pointwise (skipped) {len(records) - len(pointwise)}")
    print("pointwise outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    groups = collections.defaultdict(list)
    for r in pointwise:
        if r["outcome"] == "failed":
            groups[cause_of(r)].append(r["test"].split("::")[-1])
    print(f"\n{'count':>5}  cat  cause  (examples)")
    for (cause, category), tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(tests):>5}  ({category})  {cause}  [{', '.join(tests[:2])}]")
    skipped = collections.Counter(r["message"][:120] for r in pointwise if r["outcome"] == "skipped")
    if skipped:
        print("\npointwise skips:")
        for message, n in skipped.most_common():
            print(f"{n:>5}  {message}")


if __name__ == "__main__":
    main(sys.argv[1:])
