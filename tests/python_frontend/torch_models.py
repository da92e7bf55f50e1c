"""A small real torch model and training loop for the optimizer tests: embedding, linear,
layer norm and bias-free layers, plus a 0-element and a 1-element parameter."""

import torch
from torch import nn


class SmallModel(nn.Module):
    def __init__(self, vocabulary: int = 32, width: int = 16, classes: int = 4,
                 with_empty: bool = True) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, width)
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes, bias=False)
        # FSDP2 cannot shard a 0-element parameter (torch._chunk_cat refuses it).
        self.empty = nn.Parameter(torch.zeros(0)) if with_empty else None
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.linear(self.embedding(tokens)))
        logits = self.head(self.norm(hidden)) * self.scale
        return logits if self.empty is None else logits + self.empty.sum()


def small_model(seed: int = 0, with_empty: bool = True) -> SmallModel:
    """The same initial weights for the same seed."""
    torch.manual_seed(seed)
    return SmallModel(with_empty=with_empty)


def batches(steps: int, seed: int = 1, vocabulary: int = 32, classes: int = 4):
    """`steps` (tokens, targets) batches, the same for the same seed."""
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, vocabulary, (8, 6), generator=generator),
             torch.randint(0, classes, (8, 6), generator=generator)) for _ in range(steps)]


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch, scheduler=None,
               set_to_none: bool = True) -> torch.Tensor:
    """One ordinary training step: zero_grad, forward, backward, step, schedule. An optimizer
    that maximizes gets the negated loss, so that training converges either way."""
    tokens, targets = batch
    optimizer.zero_grad(set_to_none=set_to_none)
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    (-loss if optimizer.param_groups[0].get("maximize") else loss).backward()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


def assert_same_parameters(actual: nn.Module, expected: nn.Module, what: str = "") -> None:
    for (name, a), b in zip(actual.named_parameters(), expected.parameters()):
        torch.testing.assert_close(a, b, msg=lambda m: f"{what} {name}: {m}")
