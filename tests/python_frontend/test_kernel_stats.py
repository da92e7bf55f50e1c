"""Adafactor on GPT-2 as NVRTC compiles it for an H100/H200 (sm_90): no stack frame and no
spills in any kernel of the clipped step (docs/reductions.md §9-§10). The step is traced by
widefuse.optim.Adafactor over GPT-2's parameter shapes (uninitialized tensors: only the trace
is needed) and compiled by `widefuse compile --json` next to the package."""

import json
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402
from widefuse.optim import pointwise_optimizer  # noqa: E402


class _Traced(Exception):
    """Stops the step once its fusion is traced."""


def _traced_step_text(monkeypatch, optimizer) -> str:
    traced = []
    trace = pointwise_optimizer.trace_step

    def tracing(*arguments, **keywords):
        traced.append(trace(*arguments, **keywords).definition.to_text())
        raise _Traced()

    monkeypatch.setattr(pointwise_optimizer, "trace_step", tracing)
    with pytest.raises(_Traced):
        optimizer.step()
    return traced[0]


def test_adafactor_on_gpt2_keeps_no_stack_frame_and_spills_nothing(monkeypatch, tmp_path):
    cli = Path(widefuse.__file__).resolve().parents[2] / "bin" / "widefuse"
    if not cli.exists():
        pytest.skip("no build/bin/widefuse next to the package (an installed package)")
    params = [torch.nn.Parameter(torch.empty(shape)) for shape in widefuse.model_shapes("gpt2")]
    for param in params:
        param.grad = torch.empty_like(param)
    optimizer = widefuse.optim.Adafactor(params, max_grad_norm=1.0)
    text = _traced_step_text(monkeypatch, optimizer)
    assert "sum(" in text and ", [1])" in text  # norms, and rows: the row and column factors
    path = tmp_path / "adafactor_gpt2.wf"
    path.write_text(text)
    result = subprocess.run([str(cli), "compile", str(path), "--mode", "packed", "--arch",
                             "sm_90", "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    kernels = json.loads(result.stdout)["kernel_stats"]
    assert len(kernels) >= 2
    for kernel in kernels:
        assert kernel["registers"] > 0, kernel
        assert kernel["stack_bytes"] == 0, kernel
        assert kernel["spill_bytes"] == 0, kernel
