"""PyTorch Lightning's Trainer with a widefuse optimizer, against the same Trainer with torch's
default AdamW, in the same test: mixed precision (bf16-mixed; 16-mixed, float16 autocast with
torch's GradScaler) with Lightning's own gradient clipping, gradient accumulation, a scheduler, and
a checkpoint resumed by a second Trainer."""

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")

import widefuse.optim  # noqa: E402
from torch_models import SmallModel, batches  # noqa: E402

STEPS, SPLIT = 8, 5  # optimizer steps in all; the first Trainer stops and saves after SPLIT


class Module(pl.LightningModule):
    def __init__(self, library: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.model = SmallModel(with_empty=False)
        self.library = library

    def training_step(self, batch, index):
        tokens, targets = batch
        logits = self.model(tokens)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 targets.reshape(-1))

    def configure_optimizers(self):
        if self.library == "torch":
            optimizer = torch.optim.AdamW(self.parameters(), lr=1e-2, foreach=False)
        else:
            optimizer = widefuse.optim.AdamW(self.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def data():
    pairs = [(tokens[i], targets[i]) for tokens, targets in batches(2 * STEPS)
             for i in range(tokens.shape[0])]
    return torch.utils.data.DataLoader(pairs, batch_size=4, shuffle=False)


def precision_of(name: str) -> dict:
    # On the CPU Lightning turns precision="16-mixed" into bf16-mixed; the plugin keeps float16
    # autocast and a GradScaler (torch's, as Lightning makes it on the GPU).
    if name != "16-mixed":
        return dict(precision=name)
    from lightning.pytorch.plugins.precision import MixedPrecision
    return dict(plugins=[MixedPrecision("16-mixed", "cpu",
                                        torch.amp.GradScaler("cpu", init_scale=2.0**12))])


def fit(library: str, precision: str, steps: int, checkpoint=None, save=None) -> Module:
    module = Module(library)
    trainer = pl.Trainer(accelerator="cpu", devices=1, **precision_of(precision), max_steps=steps,
                         gradient_clip_val=0.5, accumulate_grad_batches=2, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)
    trainer.fit(module, data(), ckpt_path=checkpoint)
    scaler = getattr(trainer.precision_plugin, "scaler", None)
    assert (scaler is not None and scaler.is_enabled()) == (precision == "16-mixed")
    if save is not None:
        trainer.save_checkpoint(save)
    return module


@pytest.mark.parametrize("precision", ["bf16-mixed", "16-mixed"])
def test_lightning_clips_and_resumes_a_widefuse_optimizer_as_torchs(precision, tmp_path):
    results = {}
    for library in ("torch", "widefuse"):
        whole = fit(library, precision, STEPS)
        saved = tmp_path / f"{library}.ckpt"
        fit(library, precision, SPLIT, save=saved)
        resumed = fit(library, precision, STEPS, checkpoint=saved)
        results[library] = (whole, resumed)
    for which in (0, 1):
        expected, actual = results["torch"][which], results["widefuse"][which]
        for (name, a), b in zip(actual.named_parameters(), expected.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6,
                                       msg=lambda m: f"{precision} run {which} {name}: {m}")
    # The clip acted and the scheduler halved the rate.
    optimizer = results["widefuse"][1].optimizers().optimizer
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-2 * 0.5 ** (STEPS // 3))
