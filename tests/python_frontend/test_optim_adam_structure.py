"""The two Adams build the same fusion: `optim::buildAdam` (the tools' frozen C++ workload,
tools/workloads/adam.h, here through `widefuse adam`, which writes its fusion's text form with
WIDEFUSE_DUMP=fusion) and widefuse.optim.Adam / AdamW (the library, which traces torch's own
update; the reference), over a matrix of options: Adam's L2 and AdamW's decoupled weight
decay, amsgrad, maximize, master weights (none, f32 masters, int16 remainders) with bf16 and
f16 parameters, bf16 state, block-quantized moments (state_format int8, int4 and fp8, their
block size), stochastic rounding of bf16 parameters, the clip (max_grad_norm with norm type 2
and inf), GradScaler's found_inf computed in the step (widefuse.optim.GradScaler's protocol:
grad_scale and a zeroed found_inf handed to the step), several param groups, and a 0-d
parameter.

"Structurally equal" means equal canonical forms (fusion_structure.canonical_form): the same
inputs, matched by role (param, grad, exp_avg, ..., each group's lr, betas, eps, weight decay,
grad_scale, found_inf) with the same dtypes and shapes; the same expressions (op, attributes,
literals with their types, operands), each computed as many times, up to the names of values
and the order of statements and inputs; the same copy_ destinations with the same sources;
the same plain outputs in order. The C++ fusion's inputs get their roles from the names
buildAdam gives them (p0, g0, m0, v0, vmax0, step0, master0, remainder0, lr0, beta1_0,
beta2_0, eps0, weight_decay0, grad_scale, found_inf; a quantized moment's m0_codes and
m0_scale; seed0), the Python fusion's from its StepFusion.sources.

Left out of the matrix, with the reason:
- capturable: widefuse.optim accepts it and changes nothing (its lr is always a runtime f64
  scalar, which a CUDA graph replays as captured), while buildAdam's capturable lr is a 0-d
  f32 tensor input; the C++ option has no Python counterpart to compare with.
- grads of another dtype than the parameters (buildAdam's gradDtype f32 with bf16
  parameters): widefuse.optim refuses a grad whose dtype is not its parameter's, as torch.
- a found_inf given to the step without computing it (torch's GradScaler): both sides build
  it, but `widefuse adam` has no option for it (its --grad-scale computes found_inf).
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402
from fusion_structure import canonical_form, parse  # noqa: E402

SHAPES = [(4, 3), (5,), (2, 2, 2), (1,)]
# Two parameters torchao's rule quantizes (4096 elements or more, a multiple of the block)
# and one it does not.
QUANTIZED_SHAPES = [(64, 128), (4096,), (5,)]

# The C++ inputs' names (tools/workloads/adam.h, buildAdam) and their roles.
_CPP_PARAMETER_ROLES = {"p": "param", "master": "master_param", "remainder": "param_remainder",
                        "g": "grad", "m": "exp_avg", "v": "exp_avg_sq", "vmax": "max_exp_avg_sq",
                        "step": "step", "seed": "rounding_seed"}
_CPP_GROUP_ROLES = {"lr": "lr", "beta1_": "beta1", "beta2_": "beta2", "eps": "eps",
                    "weight_decay": "weight_decay"}


def cli():
    """build/bin/widefuse next to the package under test, or None (an installed package)."""
    path = Path(widefuse.__file__).resolve().parents[2] / "bin" / "widefuse"
    return path if path.exists() else None


def cpp_role(name):
    """The role of a buildAdam input, by its name."""
    if name in ("grad_scale", "found_inf"):
        return name
    match = re.fullmatch(r"(.*?)(\d+)(_codes|_scale)?", name)
    assert match, f"an input buildAdam does not name: {name}"
    prefix, number, part = match.groups()
    if prefix in _CPP_PARAMETER_ROLES:
        return f"{_CPP_PARAMETER_ROLES[prefix]}{part or ''}[{number}]"
    assert prefix in _CPP_GROUP_ROLES, f"an input buildAdam does not name: {name}"
    return f"{_CPP_GROUP_ROLES[prefix]}[group {number}]"


def python_role(source):
    """The role of a widefuse.optim step input, by its Source (step_fusion.py)."""
    if source.kind in ("param", "grad"):
        return f"{source.kind}[{source.entry}]"
    if source.kind == "state":
        return f"{source.name}[{source.entry}]"
    if source.kind == "scalar":
        name = source.name if source.element is None else ("beta1", "beta2")[source.element]
        return f"{name}[group {source.group}]"
    return source.kind  # grad_scale, found_inf


def cpp_fusion_text(config, tmp_path):
    """The text form of the fusion `widefuse adam` builds for `config`: written by
    WIDEFUSE_DUMP=fusion while --emit cuda stops after codegen (no NVRTC, nothing runs)."""
    arguments = [
        str(cli()), "adam", "--shapes", ",".join("x".join(map(str, s)) if s else "scalar"
                                                 for s in config.get("shapes", SHAPES)),
        "--backend", "none", "--emit", "cuda", "--optimizer", config["optimizer"],
        "--weight-decay", str(config.get("weight_decay", 0.0)),
        "--param-dtype", config.get("dtype", "f32"),
        "--master-weights", config.get("master", "none"),
        "--param-groups", str(config.get("groups", 1))]
    arguments += ["--amsgrad"] if config.get("amsgrad") else []
    arguments += ["--maximize"] if config.get("maximize") else []
    if config.get("state"):
        arguments += ["--state-dtype", config["state"]]
    if config.get("clip"):
        arguments += ["--max-grad-norm", str(config["clip"][0]), "--norm-type", config["clip"][1]]
    if config.get("found_inf"):
        arguments += ["--grad-scale", "2"]
    if config.get("state_format"):
        arguments += ["--state-format", config["state_format"]]
    if config.get("block_size"):
        arguments += ["--block-size", str(config["block_size"])]
    if config.get("stochastic_round"):
        arguments += ["--stochastic-round"]
    dumps = tmp_path / "cpp"
    result = subprocess.run(arguments, capture_output=True, text=True,
                            env={**os.environ, "WIDEFUSE_DUMP": "fusion",
                                 "WIDEFUSE_DUMP_DIR": str(dumps)})
    assert result.returncode == 0, result.stderr
    return (dumps / "adam_step.wf").read_text()


_TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def python_step(config):
    """The step fusion widefuse.optim traces for `config` (one step on the reference
    evaluator: nothing is compiled), as a StepFusion (step_fusion.py)."""
    dtype = _TORCH_DTYPES[config.get("dtype", "f32")]
    params = [torch.nn.Parameter(torch.zeros(shape, dtype=dtype))
              for shape in config.get("shapes", SHAPES)]
    for param in params:
        param.grad = torch.ones_like(param)
    count = config.get("groups", 1)
    # As `widefuse adam --param-groups K`: group g takes every K-th parameter.
    groups = [{"params": params[g::count]} for g in range(count)]
    optimizer_class = {"adam": widefuse.optim.Adam, "adamw": widefuse.optim.AdamW}
    master = config.get("master", "none")
    options = dict(lr=1e-3, weight_decay=config.get("weight_decay", 0.0),
                   amsgrad=config.get("amsgrad", False), maximize=config.get("maximize", False),
                   master_weights=master != "none",
                   store_param_remainders=master == "remainders")
    if config.get("state"):
        options["state_dtype"] = _TORCH_DTYPES[config["state"]]
    if config.get("clip"):
        options.update(max_grad_norm=config["clip"][0], norm_type=float(config["clip"][1]))
    options.update(state_format=config.get("state_format"), block_size=config.get("block_size"),
                   bf16_stochastic_round=config.get("stochastic_round", False))
    optimizer = optimizer_class[config["optimizer"]](groups, **options)
    optimizer._options["backend"] = "reference"
    if config.get("found_inf"):  # widefuse.optim.GradScaler's handover: the step computes it
        handed = widefuse.optim.StepScaling(grad_scale=torch.tensor(2.0),
                                            found_inf=torch.tensor(0.0), computes_found_inf=True)
        with optimizer.scaled(handed):
            optimizer.step()
    else:
        optimizer.step()
    (step,) = optimizer._traced.values()
    return step


def canonical_cpp(config, tmp_path):
    text = cpp_fusion_text(config, tmp_path)
    return canonical_form(text, {name: cpp_role(name) for name, _ in parse(text)[0]})


def canonical_python(config):
    step = python_step(config)
    text = step.definition.to_text()
    names = [name for name, _ in parse(text)[0]]
    assert len(names) == len(step.sources)
    return canonical_form(text, {name: python_role(source)
                                 for name, source in zip(names, step.sources)})


MATRIX = {
    "adamw": dict(optimizer="adamw", weight_decay=0.01),
    "adam": dict(optimizer="adam"),
    "adam-l2": dict(optimizer="adam", weight_decay=0.01),
    "adamw-amsgrad": dict(optimizer="adamw", weight_decay=0.01, amsgrad=True),
    "adam-l2-amsgrad-maximize": dict(optimizer="adam", weight_decay=0.01, amsgrad=True,
                                     maximize=True),
    "adamw-bf16": dict(optimizer="adamw", weight_decay=0.01, dtype="bf16"),
    "adam-l2-bf16-amsgrad": dict(optimizer="adam", weight_decay=0.01, dtype="bf16",
                                 amsgrad=True),
    "adamw-bf16-fp32-masters": dict(optimizer="adamw", weight_decay=0.01, dtype="bf16",
                                    master="fp32"),
    "adam-l2-bf16-fp32-masters": dict(optimizer="adam", weight_decay=0.01, dtype="bf16",
                                      master="fp32"),
    "adamw-bf16-remainders-amsgrad": dict(optimizer="adamw", weight_decay=0.01, dtype="bf16",
                                          master="remainders", amsgrad=True),
    "adam-l2-bf16-remainders": dict(optimizer="adam", weight_decay=0.01, dtype="bf16",
                                    master="remainders"),
    "adamw-f16-fp32-masters-maximize": dict(optimizer="adamw", weight_decay=0.01, dtype="f16",
                                            master="fp32", maximize=True),
    "adamw-bf16-state": dict(optimizer="adamw", weight_decay=0.01, state="bf16"),
    "adam-l2-bf16-bf16-state": dict(optimizer="adam", weight_decay=0.01, dtype="bf16",
                                    master="fp32", state="bf16"),
    "adamw-clip-2": dict(optimizer="adamw", weight_decay=0.01, clip=(1.0, "2")),
    "adamw-clip-inf": dict(optimizer="adamw", weight_decay=0.01, clip=(0.5, "inf")),
    "adamw-bf16-fp32-masters-clip-2": dict(optimizer="adamw", weight_decay=0.01, dtype="bf16",
                                           master="fp32", clip=(1.0, "2")),
    "adam-bf16-clip-inf": dict(optimizer="adam", dtype="bf16", clip=(0.25, "inf")),
    "adamw-found-inf": dict(optimizer="adamw", weight_decay=0.01, found_inf=True),
    "adamw-bf16-remainders-amsgrad-found-inf-clip-2": dict(
        optimizer="adamw", weight_decay=0.01, dtype="bf16", master="remainders", amsgrad=True,
        found_inf=True, clip=(1.0, "2")),
    "adam-l2-found-inf-clip-inf": dict(optimizer="adam", weight_decay=0.01, found_inf=True,
                                       clip=(2.0, "inf")),
    "adamw-2-groups": dict(optimizer="adamw", weight_decay=0.01, groups=2),
    "adam-l2-3-groups-bf16-fp32-masters-found-inf": dict(
        optimizer="adam", weight_decay=0.01, groups=3, dtype="bf16", master="fp32",
        found_inf=True),
    "adamw-0-d-parameter": dict(optimizer="adamw", weight_decay=0.01, shapes=[(), (3, 2)]),
    "adamw-int8": dict(optimizer="adamw", weight_decay=0.01, state_format="int8",
                       shapes=QUANTIZED_SHAPES),
    "adam-l2-int4-amsgrad": dict(optimizer="adam", weight_decay=0.01, state_format="int4",
                                 amsgrad=True, shapes=QUANTIZED_SHAPES),
    "adamw-fp8-found-inf-clip-2": dict(optimizer="adamw", weight_decay=0.01, state_format="fp8",
                                       found_inf=True, clip=(1.0, "2"), shapes=QUANTIZED_SHAPES),
    "adamw-int4-block-64-found-inf-2-groups": dict(
        optimizer="adamw", weight_decay=0.01, state_format="int4", block_size=64,
        found_inf=True, groups=2, shapes=QUANTIZED_SHAPES),
    "adamw-bf16-fp32-masters-int8-amsgrad": dict(
        optimizer="adamw", weight_decay=0.01, dtype="bf16", master="fp32", state_format="int8",
        amsgrad=True, shapes=QUANTIZED_SHAPES),
    "adamw-bf16-stochastic-round": dict(optimizer="adamw", weight_decay=0.01, dtype="bf16",
                                        stochastic_round=True),
    "adam-l2-bf16-int8-stochastic-round-amsgrad": dict(
        optimizer="adam", weight_decay=0.01, dtype="bf16", state_format="int8",
        stochastic_round=True, amsgrad=True, shapes=QUANTIZED_SHAPES),
    "adamw-bf16-fp32-masters-fp8-stochastic-round-found-inf": dict(
        optimizer="adamw", weight_decay=0.01, dtype="bf16", master="fp32", state_format="fp8",
        stochastic_round=True, found_inf=True, shapes=QUANTIZED_SHAPES),
}


@pytest.fixture(autouse=True)
def _needs_the_tools():
    if cli() is None:
        pytest.skip("no build/bin/widefuse next to the package (an installed package)")


@pytest.mark.parametrize("name", list(MATRIX))
def test_the_two_adams_build_structurally_equal_fusions(name, tmp_path):
    config = MATRIX[name]
    cpp, python = canonical_cpp(config, tmp_path), canonical_python(config)
    assert cpp == python, f"{name}: the C++ (first) and Python fusions differ"
    # Not vacuous: every input is read or written, and the update is there.
    assert "copy_(" in cpp and "param[0]:" in cpp and "lr[group 0]:" in cpp


@pytest.mark.parametrize("cpp_changes, python_changes", [
    (dict(amsgrad=True), {}),
    ({}, dict(optimizer="adam")),
    (dict(maximize=True), {}),
    (dict(state="bf16"), {}),
    (dict(clip=(1.0, "2")), dict(clip=(1.0, "inf"))),
    (dict(clip=(1.0, "2")), dict(clip=(0.5, "2"))),
    (dict(optimizer="adam", weight_decay=0.01), dict(optimizer="adam", weight_decay=0.02)),
    (dict(state_format="int8", shapes=QUANTIZED_SHAPES),
     dict(state_format="fp8", shapes=QUANTIZED_SHAPES)),
    (dict(state_format="int4", shapes=QUANTIZED_SHAPES),
     dict(state_format="int4", block_size=64, shapes=QUANTIZED_SHAPES)),
    (dict(dtype="bf16", stochastic_round=True), dict(dtype="bf16")),
])
def test_the_comparison_tells_options_apart(cpp_changes, python_changes, tmp_path):
    # The comparison can fail: a fusion built with one option differs from one without it
    # (a clip's value, a constant, included).
    base = dict(optimizer="adamw", weight_decay=0.01)
    assert canonical_cpp({**base, **cpp_changes}, tmp_path) != \
        canonical_python({**base, **python_changes})
