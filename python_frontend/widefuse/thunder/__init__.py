"""``widefuse.thunder.executor``: a Lightning Thunder fusion executor.

    import thunder, widefuse.thunder
    step = thunder.jit(optimizer_step, executors=[widefuse.thunder.executor])

The executor claims Thunder's pointwise prims (arithmetic, comparisons, ``where``, casts, math
functions, ``pow``, ``broadcast_in_dim``) and the in-place machinery (``copy_``,
``update_aliases``) on CPU and CUDA tensors; torch-level ops that decompose into those are
claimed through their decomposition. Consecutive claimed symbols form one region, connected or
not, so an optimizer step over N parameters is one region: one widefuse ``FusionDefinition``
and, batched, one kernel. Everything else (reductions, matmuls, views, randomness) is left to
the other executors. Regions are called ``widefuse0``, ``widefuse1``, ...; their callable's
``last_used`` is the FusionDefinition it last ran.

For a function that is one region over all its inputs (an optimizer step),
``widefuse.thunder.jit(fn)`` is ``thunder.jit`` with Thunder's per-call input checks done by
widefuse, once, in C++ (jit_function.py).

The modules: ``regions`` (the executor: claimed prims, the fusion pass, a region's callable),
``jit_function`` (``jit``: the gate over the prologue's checks) and ``steady_call`` (a call like
the last one without Thunder's dispatch).

Needs Thunder (``lightning-thunder``); the rest of widefuse does not.
"""

from .jit_function import jit
from .regions import WidefuseExecutor, WidefuseFusion, executor

__all__ = ["WidefuseExecutor", "WidefuseFusion", "executor", "jit"]
