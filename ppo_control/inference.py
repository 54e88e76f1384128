"""Action selection during collection, and the frozen networks' outputs for a whole rollout.

Per step only the policy mean is needed (log-probs and values of the rollout are computed
afterwards in one batched torch call, :func:`policy_outputs`).  On the CPU a small MLP called
once per env step costs more in torch's dispatch than in arithmetic, so the mean network is
*compiled* into numpy from the torch module (:func:`numpy_forward`): the layers are read from the
module, so there is no second hand-kept copy of the network, and a module it cannot translate
falls back to torch (with a log line).  tests/test_inference.py checks both paths agree.
"""
from __future__ import annotations

import logging
from typing import Callable, List, Optional

import numpy as np
import torch
from torch import nn

from .networks import GaussianPolicy, ValueNet

log = logging.getLogger(__name__)


def _layer(m: nn.Module) -> Optional[Callable[[np.ndarray], np.ndarray]]:
    """One torch layer as a numpy function (weights copied now), or None if not translatable."""
    if isinstance(m, nn.Linear):
        w = m.weight.detach().cpu().numpy().T.copy()
        b = m.bias.detach().cpu().numpy().copy() if m.bias is not None else 0.0
        return lambda x: x @ w + b
    if isinstance(m, nn.LayerNorm) and len(m.normalized_shape) == 1:
        g = m.weight.detach().cpu().numpy().copy() if m.weight is not None else 1.0
        b = m.bias.detach().cpu().numpy().copy() if m.bias is not None else 0.0
        eps = m.eps

        def layer_norm(x):
            mu = x.mean(-1, keepdims=True)
            d = x - mu
            return d / np.sqrt((d * d).mean(-1, keepdims=True) + eps) * g + b
        return layer_norm
    if isinstance(m, nn.Tanh):
        return np.tanh
    if isinstance(m, nn.ReLU):
        return lambda x: np.maximum(x, 0.0)
    if isinstance(m, nn.ELU):
        a = m.alpha
        return lambda x: np.where(x > 0, x, a * np.expm1(np.minimum(x, 0.0)))
    if isinstance(m, nn.SiLU):
        return lambda x: x / (1.0 + np.exp(-x))
    if isinstance(m, nn.Identity):
        return lambda x: x
    return None


def numpy_forward(module: nn.Module) -> Optional[Callable[[np.ndarray], np.ndarray]]:
    """A numpy function computing ``module`` (an ``nn.Sequential`` tree of Linear, LayerNorm,
    Tanh/ReLU/ELU/SiLU, Identity) with its current weights; None for anything else."""
    leaves: List[nn.Module] = []
    stack = [module]
    while stack:
        m = stack.pop(0)
        if isinstance(m, nn.Sequential):
            stack[:0] = list(m)
        else:
            leaves.append(m)
    fns = [_layer(m) for m in leaves]
    if any(f is None for f in fns):
        return None

    def forward(x: np.ndarray) -> np.ndarray:
        for f in fns:
            x = f(x)
        return x
    return forward


class Actor:
    """``sample(obs [N, D] float32) -> action [N, A] float32``, a draw from ``policy.dist(obs)``.

    numpy (CPU, translatable mean network): mean + std * eps with eps from ``rng``;
    otherwise the torch distribution on the policy's device.
    """

    _warned: set = set()

    def __init__(self, policy: GaussianPolicy, device: torch.device, rng: np.random.Generator):
        self.policy, self.device, self.rng = policy, device, rng
        self.mean = numpy_forward(policy.mean_net) if device.type == "cpu" else None
        if self.mean is None and device.type == "cpu" and type(policy.mean_net) not in Actor._warned:
            Actor._warned.add(type(policy.mean_net))
            log.warning("collection uses torch for %s (no numpy translation); slower per step, same result",
                        type(policy.mean_net).__name__)
        if self.mean is not None:
            self.std = policy.std().detach().cpu().numpy()

    # no torch.no_grad decorators here: they cost ~10 us per call, more than the numpy path's arithmetic
    def sample(self, obs: np.ndarray, eps: Optional[np.ndarray] = None) -> np.ndarray:
        """``eps [N, A]`` float32: the standard-normal noise to use (GRPO's common random numbers
        pass one row per group, repeated); None draws it here."""
        if self.mean is not None:
            mean = self.mean(obs)
            if eps is None:
                eps = self.rng.standard_normal(mean.shape, dtype=np.float32)
            return (mean + self.std * eps).astype(np.float32, copy=False)
        with torch.no_grad():
            d = self.policy.dist(torch.from_numpy(obs).to(self.device))
            if eps is None:
                return d.sample().cpu().numpy()
            return (d.mean + d.stddev * torch.from_numpy(eps).to(d.mean)).cpu().numpy()


@torch.no_grad()
def policy_outputs(policy: GaussianPolicy, obs: torch.Tensor, actions: torch.Tensor,
                   chunk: int = 1 << 16) -> torch.Tensor:
    """Log-probs ``[B]`` of ``actions [B, A]`` at ``obs [B, D]`` (no graph), in chunks."""
    return torch.cat([policy.log_prob_entropy(o, a)[0] for o, a in zip(obs.split(chunk), actions.split(chunk))]) \
        if obs.shape[0] else obs.new_zeros(0)


@torch.no_grad()
def values_of(critic: ValueNet, obs: torch.Tensor, chunk: int = 1 << 16) -> torch.Tensor:
    """V ``[B]`` of ``obs [B, D]`` (no graph), in chunks."""
    return torch.cat([critic(o) for o in obs.split(chunk)]) if obs.shape[0] else obs.new_zeros(0)
