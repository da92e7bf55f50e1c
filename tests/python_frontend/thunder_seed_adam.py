"""The seed issue's Adam step for Thunder ("Adam Optimizer Code from a Thunder example segments
with >2 Parameters"), as jjsjann123 rewrote it to be in-place safe: every new value computed
first, the in-place updates last. Thunder 0.2.6 spells them ``param.copy_(param_)``;
``copy_spelling="prims"`` uses ``thunder.prims.copy_(param_, param, grad_enabled=False)`` instead
(``grad_enabled=True`` makes Thunder's torch executor refuse leaves that require grad).
Two additions for the variants the tests check: decoupled weight decay (AdamW), and amsgrad's
``torch.maximum(..., out=)`` written as a maximum and a copy_, because Thunder 0.2.6's
``torch.maximum`` has no ``out=``."""

import math

import thunder
import torch
from torch import Tensor


def _dispatch_sqrt(x):
    if isinstance(x, Tensor):
        return x.sqrt()
    return math.sqrt(x)


def _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                        grad_scale, found_inf, *, amsgrad, has_complex, beta1, beta2, lr,
                        weight_decay, eps, maximize, capturable, differentiable,
                        decoupled_weight_decay=False, copy_spelling="method"):
    def copy_(source, destination):
        if copy_spelling == "method":
            destination.copy_(source)
        else:
            thunder.prims.copy_(source, destination, grad_enabled=False)

    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        step_t = state_steps[i]

        step_t_ = step_t + 1

        param_decayed = param
        if weight_decay != 0:
            if decoupled_weight_decay:
                param_decayed = param * (1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)

        exp_avg_ = exp_avg * (beta1) + grad * (1 - beta1)
        exp_avg_sq_ = (exp_avg_sq * beta2) + (1 - beta2) * grad * grad

        step = step_t_
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step

        step_size = lr / bias_correction1

        bias_correction2_sqrt = _dispatch_sqrt(bias_correction2)

        if amsgrad:
            max_exp_avg_sq_ = torch.maximum(max_exp_avg_sqs[i], exp_avg_sq_)
            copy_(max_exp_avg_sq_, max_exp_avg_sqs[i])
            denom = (max_exp_avg_sq_.sqrt() / bias_correction2_sqrt) + (eps)
        else:
            denom = (exp_avg_sq_.sqrt() / bias_correction2_sqrt) + (eps)

        param_ = param_decayed + (-step_size) * exp_avg_ / denom
        copy_(param_, param)
        copy_(exp_avg_, exp_avg)
        copy_(exp_avg_sq_, exp_avg_sq)
        copy_(step_t_, step_t)


def zeros_like(tensor):
    """torch.zeros_like, except that a 0-element tensor gets a storage of its own: Thunder
    0.2.6's alias analysis mistakes 0-element tensors without storage (null data pointers) for
    aliases of other inputs and fails (with its own executors too)."""
    if tensor.numel() == 0:
        return torch.zeros(1, dtype=tensor.dtype, device=tensor.device)[:0].view(tensor.shape)
    return torch.zeros_like(tensor, memory_format=torch.preserve_format)


def jit_state(params, amsgrad=False):
    """The seed's get_jit_state: zero state and a 0-d float32 step per parameter."""
    steps = [torch.tensor(0.0, dtype=torch.float, device=p.device) for p in params]
    exp_avgs = [zeros_like(p) for p in params]
    exp_avg_sqs = [zeros_like(p) for p in params]
    max_exp_avg_sqs = [zeros_like(p) if amsgrad else None for p in params]
    return steps, exp_avgs, exp_avg_sqs, max_exp_avg_sqs


def jit_step(optim_func, params, state, **hyperparameters):
    """The seed's jit_step: one call of the jitted step on the parameters' grads, under
    torch.no_grad() as an optimizer step runs (the seed has it commented out; Thunder 0.2.6's
    torch executor refuses the in-place copies into leaves that require grad without it)."""
    steps, exp_avgs, exp_avg_sqs, max_exp_avg_sqs = state
    options = dict(amsgrad=False, has_complex=False, beta1=0.9, beta2=0.999, lr=0.001,
                   weight_decay=0, eps=1e-8, maximize=False, capturable=False,
                   differentiable=False)
    options.update(hyperparameters)
    with torch.no_grad():
        optim_func(params, [p.grad for p in params], exp_avgs=exp_avgs,
                   exp_avg_sqs=exp_avg_sqs, max_exp_avg_sqs=max_exp_avg_sqs, state_steps=steps,
                   grad_scale=None, found_inf=None, **options)
