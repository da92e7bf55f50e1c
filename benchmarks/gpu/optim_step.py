"""One optimizer step from Python on the GPU, host time and device time, beside torch's fused
Adam in the same run (issue 29): torch.optim.Adam(fused=True), widefuse.optim.Adam, and, where
Lightning Thunder is installed, the seed's step under thunder.jit with widefuse's executor and
under widefuse.thunder.jit. Then the clipped step (issue 30): torch's clip_grad_norm_(foreach)
+ AdamW(fused) against widefuse.optim.AdamW(max_grad_norm=1.0) and a device copy of the bytes
widefuse's step moves; and Adafactor: torch.optim.Adafactor(foreach=True) against
widefuse.optim.Adafactor; and AdamW with 8-bit and FP8 moments beside a device copy of their
bytes. Parameters of a model preset (gpt2 by default), f32 and bf16 (Adafactor f32).

- host: the median time step() takes to return, without a synchronisation (what the Python
  side costs when the GPU keeps up).
- device: the median of (10 steps and one synchronisation) / 10.

    python3 optim_step.py OUT.json [--device=cuda|cpu] [--model=gpt2]

Needs torch and the widefuse package (run.sh puts gpu-bundle/python on PYTHONPATH); prints why,
writes OUT.json with the reason and no rows, and exits 0 when widefuse does not import (another
Python version than the bundle's).
`--device=cpu` checks the script on a machine without a GPU.
"""

import json
import statistics
import sys
import time

import torch

STEPS = 10
REPETITIONS = 7


def median_seconds(step, device):
    """(host, device) medians of `step`, after three warm-up steps."""
    for _ in range(3):
        step()
    synchronize(device)
    host, whole = [], []
    for _ in range(REPETITIONS):
        start = time.perf_counter()
        for _ in range(STEPS):
            begin = time.perf_counter()
            step()
            host.append(time.perf_counter() - begin)
        synchronize(device)
        whole.append((time.perf_counter() - start) / STEPS)
    return statistics.median(host), statistics.median(whole)


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def parameters(shapes, dtype, device):
    generator = torch.Generator().manual_seed(0)
    params = []
    for shape in shapes:
        p = torch.nn.Parameter(torch.randn(shape, generator=generator).to(device, dtype))
        p.grad = torch.randn(shape, generator=generator).to(device, dtype)
        params.append(p)
    return params


def runners(shapes, dtype, device):
    import widefuse.optim

    yield "torch fused", torch.optim.Adam(parameters(shapes, dtype, device), fused=True).step
    yield "widefuse.optim", widefuse.optim.Adam(parameters(shapes, dtype, device)).step
    try:
        import thunder
        import widefuse.thunder
        sys.path.insert(0, "tests/python_frontend")
        from thunder_seed_adam import _single_tensor_adam, jit_state, jit_step
    except ImportError as error:
        print(f"optim_step: Thunder rows skipped ({error})", file=sys.stderr)
        return
    for name, jit in (("thunder.jit + widefuse", lambda f: thunder.jit(
            f, executors=[widefuse.thunder.executor])), ("widefuse.thunder.jit",
                                                          widefuse.thunder.jit)):
        params = [p.detach() for p in parameters(shapes, dtype, device)]
        for p in params:
            p.grad = torch.randn_like(p)
        jitted, state = jit(_single_tensor_adam), jit_state(params)
        yield name, lambda jitted=jitted, params=params, state=state: jit_step(jitted, params,
                                                                               state)


def clip_runners(shapes, dtype, device):
    """Issue 30's whole step: gradient clipping by the total norm, then AdamW, as torch users
    write it and as one widefuse step (two phases), beside a device copy of the bytes the
    widefuse step moves (phase 1 reads every grad; phase 2 reads param, grad and both moments and
    writes param and both moments: 8 tensor accesses, state in the parameters' dtype)."""
    import widefuse.optim

    params = parameters(shapes, dtype, device)
    adamw = torch.optim.AdamW(params, fused=True)

    def torch_step():
        torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        adamw.step()

    yield "torch clip_grad_norm_(foreach) + AdamW(fused)", torch_step
    yield "widefuse.optim.AdamW(max_grad_norm=1.0)", widefuse.optim.AdamW(
        parameters(shapes, dtype, device), max_grad_norm=1.0).step
    elements = sum(torch.Size(shape).numel() for shape in shapes)
    moved = 8 * elements * torch.empty((), dtype=dtype).element_size()
    source = torch.empty(moved // 2, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    yield "device copy of the same bytes", lambda: target.copy_(source)


def adafactor_runners(shapes, dtype, device):
    """Adafactor (factored second moments: row and column mean squares of every matrix's grad,
    a rows reduction each) as torch.optim.Adafactor(foreach=True) and widefuse.optim.Adafactor,
    same hyperparameters."""
    import widefuse.optim

    shapes = [shape for shape in shapes if torch.Size(shape).numel() > 0]  # torch divides by it
    yield "torch Adafactor(foreach)", torch.optim.Adafactor(parameters(shapes, dtype, device),
                                                            foreach=True).step
    yield "widefuse.optim.Adafactor", widefuse.optim.Adafactor(
        parameters(shapes, dtype, device)).step


def low_bit_runners(shapes, dtype, device):
    """AdamW with 8-bit, 4-bit and FP8 moments (widefuse.optim.AdamW8bit, AdamW4bit,
    AdamWFp8: one launch), torchao's AdamW8bit and AdamW4bit on the GPU where torchao is
    installed (a compiled graph per parameter), and a device copy of the bytes the 8-bit and
    the 4-bit steps move (param and grad read, param written; each moment's codes read and
    written; the scales, 4 bytes per block)."""
    import widefuse.optim

    yield "widefuse.optim.AdamW8bit", widefuse.optim.AdamW8bit(
        parameters(shapes, dtype, device)).step
    yield "widefuse.optim.AdamW4bit", widefuse.optim.AdamW4bit(
        parameters(shapes, dtype, device)).step
    yield "widefuse.optim.AdamWFp8", widefuse.optim.AdamWFp8(
        parameters(shapes, dtype, device)).step
    if device == "cuda":
        try:
            import torchao.optim
        except ImportError:
            pass
        else:
            yield "torchao AdamW8bit", torchao.optim.AdamW8bit(
                parameters(shapes, dtype, device)).step
            yield "torchao AdamW4bit", torchao.optim.AdamW4bit(
                parameters(shapes, dtype, device)).step
    elements = sum(torch.Size(shape).numel() for shape in shapes)
    for bits, block in ((8, 256), (4, 128)):
        moved = elements * (3 * torch.empty((), dtype=dtype).element_size() + bits / 2 +
                            16 / block)
        source = torch.empty(int(moved) // 2, dtype=torch.uint8, device=device)
        target = torch.empty_like(source)
        yield f"device copy of the {bits}-bit step's bytes", \
            lambda target=target, source=source: target.copy_(source)


# (group, runners, dtypes): Adafactor keeps f32 state and is compared in f32 only.
GROUPS = (("adam", runners, (torch.float32, torch.bfloat16)),
          ("clip + adamw", clip_runners, (torch.float32, torch.bfloat16)),
          ("adafactor", adafactor_runners, (torch.float32,)),
          ("low-bit adamw", low_bit_runners, (torch.float32, torch.bfloat16)))


def main():
    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    options = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    device, model = options.get("device", "cuda"), options.get("model", "gpt2")
    out = arguments[0] if arguments else "optim_step.json"
    try:
        import widefuse
    except ImportError as error:
        reason = f"widefuse does not import here ({error})"
        print(f"optim_step: skipped, {reason}")
        with open(out, "w") as file:
            json.dump(dict(device=device, skipped=reason, rows=[]), file, indent=1)
        return
    shapes = [tuple(shape) for shape in widefuse.model_shapes(model)]
    rows = []
    for group, make, dtypes in GROUPS:
        for dtype in dtypes:
            for name, step in make(shapes, dtype, device):
                host, whole = median_seconds(step, device)
                rows.append(dict(group=group, runner=name, dtype=str(dtype).replace("torch.", ""),
                                 model=model, params=len(shapes), host_ms=host * 1e3,
                                 step_ms=whole * 1e3))
                print(f"| {group} | {model} | {rows[-1]['dtype']} | {name} | {host * 1e3:.3f} | "
                      f"{whole * 1e3:.3f} |", flush=True)
    with open(out, "w") as file:
        json.dump(dict(device=device, rows=rows), file, indent=1)


if __name__ == "__main__":
    main()
