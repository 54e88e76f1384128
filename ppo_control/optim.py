"""Adam and gradient-norm clipping over one flat parameter buffer.

PPO's classic setting takes 320 optimizer steps of 64 samples per 2048 env steps, so the
optimizer's fixed cost matters more than its arithmetic.  ``torch.optim.Adam`` (even with
``foreach``) launches a dozen kernels *per parameter tensor* on the CPU; here every
parameter is a view into one contiguous buffer, so a step is a dozen kernels in all and the
per-network gradient clip is one norm per network.  The update rule is exactly Adam's
(Kingma & Ba, with PyTorch's bias-correction order); tests/test_optim.py checks it against
``torch.optim.Adam`` and ``clip_grad_norm_``.
"""
from __future__ import annotations

import math
from typing import List, Sequence

import torch
from torch import nn


def _offsets(params) -> List[int]:
    out, o = [], 0
    for p in params:
        out.append(o)
        o += p.numel()
    return out


class FlatAdam:
    """Adam for the parameters of ``modules`` (a list of networks, each clipped separately).

    After construction each parameter's ``.data`` is a view of ``self.flat``; build it after
    the modules are on their final device.  ``param_groups[0]["lr"]`` is read at every step,
    so LR schedules set it as with a torch optimizer.
    """

    def __init__(self, modules: Sequence[nn.Module], lr: float, eps: float = 1e-8,
                 betas=(0.9, 0.999)):
        self.params: List[nn.Parameter] = [p for m in modules for p in m.parameters()]
        p0 = self.params[0]
        self.flat = torch.cat([p.detach().reshape(-1) for p in self.params])
        self.segments, offset, start = [], 0, 0
        for m in modules:
            for p in m.parameters():
                n = p.numel()
                p.data = self.flat[offset:offset + n].view_as(p)
                offset += n
            self.segments.append((start, offset))
            start = offset
        self.grad = torch.zeros_like(self.flat)
        # id(param) -> its slot in self.grad, for code that writes gradients directly (backprop.py)
        self.grad_of = {id(p): self.grad[o:o + p.numel()].view_as(p)
                        for p, o in zip(self.params, _offsets(self.params))}
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)
        self.step_count = 0
        self.betas, self.eps = betas, eps
        self.param_groups = [{"lr": lr}]
        assert self.flat.device == p0.device

    def clip_grad_norm_(self, max_norm: float) -> List[torch.Tensor]:
        """Scale each network's gradient to norm <= max_norm (as ``nn.utils.clip_grad_norm_``)."""
        norms = []
        for s, e in self.segments:
            g = self.grad[s:e]
            norm = torch.linalg.vector_norm(g)
            g.mul_(torch.clamp(max_norm / (norm + 1e-6), max=1.0))
            norms.append(norm)
        return norms

    @torch.no_grad()
    def step(self) -> None:
        """One Adam step from ``self.grad`` (filled through ``grad_of``, optionally clipped first)."""
        b1, b2 = self.betas
        self.step_count += 1
        lr = self.param_groups[0]["lr"]
        self.exp_avg.lerp_(self.grad, 1 - b1)
        self.exp_avg_sq.mul_(b2).addcmul_(self.grad, self.grad, value=1 - b2)
        bc1 = 1 - b1 ** self.step_count
        bc2_sqrt = math.sqrt(1 - b2 ** self.step_count)
        denom = (self.exp_avg_sq.sqrt() / bc2_sqrt).add_(self.eps)
        self.flat.addcdiv_(self.exp_avg, denom, value=-lr / bc1)

    def state_dict(self) -> dict:
        return {"step": self.step_count, "exp_avg": self.exp_avg.clone(), "exp_avg_sq": self.exp_avg_sq.clone(),
                "lr": self.param_groups[0]["lr"], "betas": list(self.betas), "eps": self.eps}

    def load_state_dict(self, d: dict) -> None:
        if not isinstance(d, dict) or "exp_avg" not in d:
            raise ValueError("optimizer state is not a FlatAdam state")
        if d["exp_avg"].shape != self.exp_avg.shape:
            raise ValueError(f"optimizer state for {d['exp_avg'].numel()} parameters does not fit "
                             f"{self.exp_avg.numel()}")
        self.step_count = int(d["step"])
        self.exp_avg.copy_(d["exp_avg"])
        self.exp_avg_sq.copy_(d["exp_avg_sq"])
        self.param_groups[0]["lr"] = float(d["lr"])
