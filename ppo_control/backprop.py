"""Hand-written forward/backward for the MLPs in the update loop ("autograd only at the heads").

PPO's classic setting takes 320 minibatch steps of 64 samples per 2048 env steps.  At that
size the arithmetic of two 64x64 MLPs is a few microseconds; what costs is autograd's
bookkeeping: recording every linear/tanh node, then walking the graph back, then copying each
parameter's ``.grad`` into the optimizer's flat buffer.  Here the MLP bodies run without
autograd and their backward pass is written out (three matrix products per layer), with every
weight gradient written straight into its slot of :class:`~ppo_control.optim.FlatAdam`'s flat
gradient buffer.  Autograd still differentiates everything after the MLP outputs — log-prob,
ratio, clipped/dual-clip surrogate, entropy, value loss (clipped or not), KL term, weights —
so those stay the pure functions of ``losses.py`` and every loss variant is covered.

The result equals ``loss.backward()`` to float rounding; tests/test_backprop.py checks
gradients and whole updates against the autograd path for every activation.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import torch
from torch import nn

from .networks import ACTIVATIONS


def _act_fn(act: nn.Module):
    if isinstance(act, nn.Tanh):
        return torch.tanh
    if isinstance(act, nn.ReLU):
        return torch.relu
    if isinstance(act, nn.ELU):
        return torch.nn.functional.elu
    if isinstance(act, nn.SiLU):
        return torch.nn.functional.silu
    raise TypeError(f"no hand-written derivative for activation {type(act).__name__}; "
                    f"use one of {sorted(ACTIVATIONS)}")


def _act_grad(act: nn.Module, pre: torch.Tensor, post: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """dL/d(pre-activation) from dL/d(post-activation) ``g`` (all ``[B, H]``)."""
    if isinstance(act, nn.Tanh):
        return g * (1.0 - post * post)
    if isinstance(act, nn.ReLU):
        return g * (pre > 0)
    if isinstance(act, nn.ELU):           # alpha = 1: d/dx = 1 for x > 0, exp(x) = y + 1 otherwise
        return torch.where(pre > 0, g, g * (post + 1.0))
    s = torch.sigmoid(pre)                # SiLU: x * sigmoid(x)
    return g * (s * (1.0 + pre * (1.0 - s)))


class ManualMLP:
    """Forward without autograd and explicit backward for an ``nn.Sequential`` of
    ``Linear, act, Linear, act, ..., Linear`` (what :func:`networks.mlp` builds).

    ``grad_of`` maps each parameter to the tensor its gradient is written into (a view of
    the optimizer's flat gradient buffer), so no ``.grad`` is ever allocated.
    """

    def __init__(self, seq: nn.Sequential, grad_of: Dict[int, torch.Tensor]):
        mods = list(seq)
        self.linears: List[nn.Linear] = mods[0::2]
        self.acts: List[nn.Module] = mods[1::2]
        if (not all(isinstance(m, nn.Linear) for m in self.linears)
                or len(self.acts) != len(self.linears) - 1):
            raise TypeError("ManualMLP expects Linear, activation, ..., Linear")
        self.fns = [_act_fn(a) for a in self.acts]
        self.grads: List[Tuple[torch.Tensor, torch.Tensor]] = [
            (grad_of[id(l.weight)], grad_of[id(l.bias)]) for l in self.linears]
        self._tape: list = []

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x ``[B, in]`` -> output ``[B, out]`` (no autograd history); keeps what backward needs."""
        tape = [(None, x)]
        h = x
        for lin, fn in zip(self.linears[:-1], self.fns):
            pre = torch.addmm(lin.bias, h, lin.weight.t())
            h = fn(pre)
            tape.append((pre, h))
        self._tape = tape
        last = self.linears[-1]
        return torch.addmm(last.bias, h, last.weight.t())

    @torch.no_grad()
    def backward(self, g_out: torch.Tensor) -> None:
        """Write dL/dW, dL/db of every layer into the gradient buffer; ``g_out`` = dL/d output ``[B, out]``."""
        g = g_out
        for i in range(len(self.linears) - 1, -1, -1):
            pre_in, h_in = self._tape[i]          # input of linear i (and the pre-activation it came from)
            gw, gb = self.grads[i]
            torch.mm(g.t(), h_in, out=gw)
            torch.sum(g, 0, out=gb)
            if i == 0:
                break
            g = _act_grad(self.acts[i - 1], pre_in, h_in, g @ self.linears[i].weight)
        self._tape = []
