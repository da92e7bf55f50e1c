"""Optimizers for PyTorch whose step is one widefuse fusion: drop-in ``Adam`` and ``AdamW``,
their low-bit forms (``AdamW8bit``, ``AdamWFp8``, ...), the ``PointwiseOptimizer`` base class for your own, and examples built on it (``SGD``,
``RMSprop``, ``Adagrad``, ``Adafactor``, ``Lion``, ``LAMB``), ``clip_grad_norm_``, torch's,
whose scaling folds into the next step of the widefuse optimizer owning the grads, and
``GradScaler``, torch's, whose inf check is that step's (it hands the step a ``StepScaling``).
Needs torch (``pip install widefuse[torch]``); the rest of widefuse does not."""

try:
    import torch  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised only without torch
    raise ImportError("widefuse.optim needs torch: pip install 'widefuse[torch]'") from error

from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .clip import clip_grad_norm_
from .grad_scaler import GradScaler
from .lamb import LAMB
from .lion import Lion
from .low_bit import Adam4bit, Adam8bit, AdamFp8, AdamW4bit, AdamW8bit, AdamWFp8
from .pointwise_optimizer import PointwiseOptimizer
from .rmsprop import RMSprop
from .scaling import StepScaling
from .sgd import SGD

__all__ = ["Adafactor", "Adagrad", "Adam", "Adam4bit", "Adam8bit", "AdamFp8", "AdamW",
           "AdamW4bit", "AdamW8bit", "AdamWFp8", "GradScaler", "LAMB", "Lion",
           "PointwiseOptimizer", "RMSprop", "SGD", "StepScaling", "clip_grad_norm_"]
