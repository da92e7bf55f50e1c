"""yardstick: classifies each nvFuser test by the ops it uses, skips the non-pointwise ones,
and records every outcome (JSON lines in $YARDSTICK_RESULTS) for analyze.py."""
import inspect
import json
import os
import re

import pytest

# nvFuser fd.ops that are not pointwise (widefuse's §9.2 "no" rows), plus the API-level
# markers that the elided bodies name.
NONPOINTWISE_OPS = {
    "sum", "prod", "max", "min", "var", "var_mean", "welford", "cumsum",
    "reshape", "permute", "squeeze", "slice", "pad", "cat", "expand", "stride_order",
    "gather", "take_along_axis", "index_select", "index_put_accumulate", "scatter",
    "argsort", "topk", "triu", "embedding_fwd",
    "matmul", "linear", "grouped_mm", "scaled_mm", "sdpfa_fwd", "sdpfa_bwd",
    "uniform", "normal", "rand_like", "randn_like",
    "full", "iota",
}
NONPOINTWISE_OPINFOS = {
    "var_mean", "cat", "scatter", "gather", "index_select", "argsort", "topk",
    "index_put_accumulate", "pad", "permute", "reshape_constant", "reshape_symbolic", "slice",
    "squeeze", "take_along_dim", "full", "iota", "normal", "uniform", "matmul", "grouped_mm",
    "scaled_grouped_mm", "scaled_mm", "linear", "triu",
}


def _classify(item):
    """(is_pointwise, detail): detail names the non-pointwise ops, or the opinfo."""
    function = getattr(item, "function", None)
    try:
        closure = inspect.getclosurevars(function).nonlocals
    except Exception:
        closure = {}
    opinfo = closure.get("opinfo")
    if opinfo is not None:  # an opinfo test: test_<template>_<op>_<dtype>
        item.user_properties.append(("opinfo", opinfo.name))
        item.user_properties.append(("dtype", str(closure.get("dtype"))))
        if opinfo.name in NONPOINTWISE_OPINFOS:
            return False, f"opinfo {opinfo.name}"
        return True, f"opinfo {opinfo.name}"
    try:
        source = inspect.getsource(function)
    except Exception:
        source = ""
    used = set(re.findall(r"\bops\.(\w+)", source))
    bad = sorted(used & NONPOINTWISE_OPS)
    if bad:
        return False, "ops " + " ".join(bad)
    return True, "ops " + " ".join(sorted(used))


def pytest_collection_modifyitems(config, items):
    for item in items:
        pointwise, detail = _classify(item)
        item.user_properties.append(("pointwise", pointwise))
        item.user_properties.append(("uses", detail))
        if not pointwise:
            item.add_marker(pytest.mark.skip(reason=f"yardstick: not pointwise ({detail})"))


def pytest_runtest_logreport(report):
    path = os.environ.get("YARDSTICK_RESULTS")
    if not path:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        props = dict(report.user_properties)
        message = ""
        if report.outcome == "failed":
            crash = getattr(report.longrepr, "reprcrash", None)
            message = crash.message if crash is not None else str(report.longrepr)[-2000:]
        elif report.outcome == "skipped":
            longrepr = report.longrepr
            message = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        if hasattr(report, "wasxfail"):
            outcome, message = "xfailed", report.wasxfail
        else:
            outcome = report.outcome
        record = {"test": report.nodeid, "outcome": outcome, "message": message[:3000],
                  "longrepr_tail": (str(report.longrepr)[-4000:]
                                    if report.outcome == "failed" else ""), **props}
        with open(path, "a") as f:
            f.write(json.dumps(record, default=str) + "\n")
