"""Libraries that wrap an optimizer, with widefuse's next to torch's: Hugging Face's Trainer
(train, checkpoint, resume, optimizer.pt read by torch.optim.AdamW; the optimizer's
max_grad_norm in place of the Trainer's clip, docs/torch.md §10.6) and accelerate's
Accelerator.prepare (AcceleratedOptimizer, gradient accumulation, clip_grad_norm_). A tiny
randomly initialised GPT-2 and synthetic tokens: nothing is downloaded."""

import math
import os

import pytest

torch = pytest.importorskip("torch")
if os.environ.get("WIDEFUSE_REQUIRE_TORCH"):  # CI: the test requirements must be there
    import accelerate
    import transformers
else:
    transformers = pytest.importorskip("transformers")
    accelerate = pytest.importorskip("accelerate")

import widefuse.optim  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def tiny_gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2,
                                     n_head=2)
    return transformers.GPT2LMHeadModel(config)


class Tokens(torch.utils.data.Dataset):
    """Synthetic token sequences, the labels the inputs (causal LM)."""

    def __init__(self, count=16, length=12):
        generator = torch.Generator().manual_seed(1)
        self.tokens = torch.randint(0, 64, (count, length), generator=generator)

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, i):
        return {"input_ids": self.tokens[i], "labels": self.tokens[i]}


def make_optimizer(kind, model):
    optimizer_class = widefuse.optim.AdamW if kind == "widefuse" else torch.optim.AdamW
    options = {} if kind == "widefuse" else dict(foreach=False)
    optimizer = optimizer_class(model.parameters(), lr=1e-2, weight_decay=0.01, **options)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (1 + step))
    return optimizer, schedule


def trainer(kind, output_dir, max_steps=6):
    model = tiny_gpt2()
    arguments = transformers.TrainingArguments(
        output_dir=str(output_dir), max_steps=max_steps, per_device_train_batch_size=4,
        save_strategy="steps", save_steps=3, logging_strategy="no", report_to=[],
        use_cpu=True, disable_tqdm=True, dataloader_num_workers=0, seed=0,
        save_safetensors=True)
    return transformers.Trainer(model=model, args=arguments, train_dataset=Tokens(),
                                optimizers=make_optimizer(kind, model))


# widefuse's float32 Adam rounds where torch's CPU kernels fuse (docs/torch.md); GPT-2's key
# biases get grads that are rounding noise (softmax ignores them), for which Adam's
# m / sqrt(v) amplifies one rounding to a step of up to 1e-3 lr. Against torch: 1% of lr.
AGAINST_TORCH = dict(rtol=1e-4, atol=1e-4)


def parameters(model):
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_trainer_trains_checkpoints_and_resumes_as_torch(tmp_path):
    runs = {}
    for kind in ("widefuse", "torch"):
        straight = trainer(kind, tmp_path / kind)
        straight.train()
        resumed = trainer(kind, tmp_path / f"{kind}-resumed")
        resumed.train(resume_from_checkpoint=str(tmp_path / kind / "checkpoint-3"))
        runs[kind] = parameters(straight.model), parameters(resumed.model)
        for name, value in runs[kind][0].items():
            torch.testing.assert_close(runs[kind][1][name], value,
                                       msg=lambda m: f"{kind} resumed {name}: {m}")
    for name, value in runs["torch"][0].items():
        torch.testing.assert_close(runs["widefuse"][0][name], value, **AGAINST_TORCH,
                                   msg=lambda m: f"widefuse vs torch {name}: {m}")
    # widefuse's optimizer.pt loads into torch's AdamW, and back.
    saved = torch.load(tmp_path / "widefuse" / "checkpoint-3" / "optimizer.pt",
                       weights_only=True)
    model = tiny_gpt2()
    theirs, _ = make_optimizer("torch", model)
    theirs.load_state_dict(saved)
    ours, _ = make_optimizer("widefuse", tiny_gpt2())
    ours.load_state_dict(theirs.state_dict())
    for index, state in theirs.state_dict()["state"].items():
        for key, value in state.items():
            torch.testing.assert_close(ours.state_dict()["state"][index][key], value)


def accelerated_run(kind):
    accelerator = accelerate.Accelerator(cpu=True, gradient_accumulation_steps=2)
    model = tiny_gpt2()
    optimizer, _ = make_optimizer(kind, model)
    loader = torch.utils.data.DataLoader(Tokens(), batch_size=2, shuffle=False)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    assert isinstance(optimizer, accelerate.optimizer.AcceleratedOptimizer)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            optimizer.zero_grad()
    return parameters(accelerator.unwrap_model(model)), optimizer.state_dict()


def test_accelerate_prepare_accumulate_and_clip_as_torch():
    ours, ours_state = accelerated_run("widefuse")
    theirs, theirs_state = accelerated_run("torch")
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value, **AGAINST_TORCH,
                                   msg=lambda m: f"{name}: {m}")
    for index, state in theirs_state["state"].items():
        torch.testing.assert_close(ours_state["state"][index]["exp_avg"], state["exp_avg"],
                                   **AGAINST_TORCH)
        assert float(ours_state["state"][index]["step"]) == float(state["step"]) == 4


class GradNormTrainer(transformers.Trainer):
    """docs/torch.md §10.6: the optimizer clips (the Trainer's max_grad_norm=0 skips its own
    clip, and with it its grad_norm log), and the logs get the optimizer's grad_norm."""

    def log(self, logs, start_time=None):
        optimizer = getattr(self.optimizer, "optimizer", self.optimizer)  # AcceleratedOptimizer
        if "loss" in logs and getattr(optimizer, "grad_norm", None) is not None:
            logs.setdefault("grad_norm", optimizer.grad_norm.item())
        super().log(logs, start_time)


def clipping_run(kind, output_dir, max_steps=6):
    """Trains with clipping at 1.0: by the widefuse optimizer (max_grad_norm=1.0, the Trainer's
    off) or by the Trainer (accelerate's clip_grad_norm_, torch's) before torch's AdamW."""
    model = tiny_gpt2()
    if kind == "widefuse":
        optimizer = widefuse.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01,
                                         max_grad_norm=1.0)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01,
                                      foreach=False)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (1 + step))
    arguments = transformers.TrainingArguments(
        output_dir=str(output_dir), max_steps=max_steps, per_device_train_batch_size=4,
        max_grad_norm=0.0 if kind == "widefuse" else 1.0, logging_strategy="steps",
        logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True,
        dataloader_num_workers=0, seed=0)
    trainer_class = GradNormTrainer if kind == "widefuse" else transformers.Trainer
    run = trainer_class(model=model, args=arguments, train_dataset=Tokens(),
                        optimizers=(optimizer, schedule))
    run.train()
    logged = [entry for entry in run.state.log_history if "loss" in entry]
    return parameters(run.model), logged, optimizer


def test_trainer_with_the_optimizers_clip_logs_grad_norm_and_ends_as_the_trainers_clip(tmp_path):
    ours, ours_logs, optimizer = clipping_run("widefuse", tmp_path / "widefuse")
    theirs, theirs_logs, _ = clipping_run("torch", tmp_path / "torch")
    assert optimizer.launches_per_step == 2  # the norm, then the update
    assert len(ours_logs) == len(theirs_logs) == 6
    for mine, reference in zip(ours_logs, theirs_logs):
        assert mine["step"] == reference["step"]
        assert math.isclose(mine["loss"], reference["loss"], rel_tol=1e-4)
        assert math.isclose(mine["grad_norm"], reference["grad_norm"], rel_tol=1e-4)
    # The clip mattered: some norms were above the limit.
    assert max(entry["grad_norm"] for entry in theirs_logs) > 1.0
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value, **AGAINST_TORCH,
                                   msg=lambda m: f"widefuse vs torch {name}: {m}")
