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


def _silu_grad(pre: torch.Tensor, post: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(pre)                # d/dx x*sigmoid(x)
    return s * (1.0 + pre * (1.0 - s))


# activation type -> (forward, d post / d pre as a function of (pre-activation, post-activation))
_ACT = {
    nn.Tanh: (torch.tanh, lambda pre, post: 1.0 - post * post),
    nn.ReLU: (torch.relu, lambda pre, post: pre > 0),
    nn.ELU: (torch.nn.functional.elu, lambda pre, post: torch.where(pre > 0, 1.0, post + 1.0)),  # alpha = 1
    nn.SiLU: (torch.nn.functional.silu, _silu_grad),
}


class ManualMLP:
    """Forward without autograd and explicit backward for an ``nn.Sequential`` of
    ``Linear, act, Linear, act, ..., Linear`` (what :func:`networks.mlp` builds).

    ``grad_of`` maps each parameter to the tensor its gradient is written into (a view of
    the optimizer's flat gradient buffer), so no ``.grad`` is ever allocated.
    """

    def __init__(self, seq: nn.Sequential, grad_of: Dict[int, torch.Tensor]):
        mods = list(seq)
        self.linears: List[nn.Linear] = mods[0::2]
        acts = mods[1::2]
        if not all(isinstance(m, nn.Linear) for m in self.linears) or len(acts) != len(self.linears) - 1:
            raise TypeError("ManualMLP expects Linear, activation, ..., Linear")
        unknown = [type(a).__name__ for a in acts if type(a) not in _ACT]
        if unknown:
            raise TypeError(f"no hand-written derivative for activation {unknown[0]}; use one of {sorted(ACTIVATIONS)}")
        self.fns, self.derivs = zip(*(_ACT[type(a)] for a in acts)) if acts else ((), ())
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
            g = (g @ self.linears[i].weight) * self.derivs[i - 1](pre_in, h_in)
        self._tape = []
