"""Batched action selection for collection, without per-step torch overhead on the CPU.

During collection the networks are frozen, so on the CPU their weights are copied once
per rollout into numpy and each step costs a few small matmuls (tens of microseconds)
instead of a torch dispatch chain (hundreds, measured in benchmarks/speed.py).  The
sample comes from the same distribution as ``GaussianPolicy.dist``:
a = mean + std * eps, log-prob of Independent(Normal(mean, std), 1); on CUDA the torch
networks are used directly.  tests/test_inference.py checks both paths agree.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch
from torch import nn

from .networks import GaussianPolicy, ValueNet

_LOG_2PI = math.log(2.0 * math.pi)
_ACT = {
    nn.Tanh: np.tanh,
    nn.ReLU: lambda x: np.maximum(x, 0.0),
    nn.ELU: lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
    nn.SiLU: lambda x: x / (1.0 + np.exp(-x)),
}


class NumpyMLP:
    """A frozen copy of an ``nn.Sequential`` of Linear + activation layers."""

    def __init__(self, seq: nn.Sequential):
        self.layers = []
        for m in seq:
            if isinstance(m, nn.Linear):
                self.layers.append(("lin", m.weight.detach().cpu().numpy().T.copy(),
                                    m.bias.detach().cpu().numpy().copy()))
            else:
                self.layers.append(("act", _ACT[type(m)], None))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        for kind, a, b in self.layers:
            x = x @ a + b if kind == "lin" else a(x)
        return x


def numpy_supported(seq: nn.Sequential) -> bool:
    return all(isinstance(m, nn.Linear) or type(m) in _ACT for m in seq)


class Actor:
    """``sample(obs [N, D] float32) -> (action [N, A], logp [N], value [N] or None)``, all float32."""

    def __init__(self, policy: GaussianPolicy, critic: Optional[ValueNet], device: torch.device,
                 rng: np.random.Generator):
        self.device, self.rng = device, rng
        self.use_numpy = device.type == "cpu" and numpy_supported(policy.mean_net) and (
            critic is None or numpy_supported(critic.net))
        self.policy, self.critic = policy, critic
        if self.use_numpy:
            self.mean = NumpyMLP(policy.mean_net)
            self.vf = NumpyMLP(critic.net) if critic is not None else None
            log_std = policy.log_std.detach().clamp(policy.log_std_min, policy.log_std_max).cpu().numpy()
            self.std = np.exp(log_std)
            self.logp_const = -float(log_std.astype(np.float64).sum()) - 0.5 * len(log_std) * _LOG_2PI

    # no torch.no_grad decorators here: they cost ~10 us per call, more than the numpy path's
    # arithmetic; the torch path opens its own no_grad block
    def sample(self, obs: np.ndarray):
        if self.use_numpy:
            mean = self.mean(obs)
            eps = self.rng.standard_normal(mean.shape, dtype=np.float32)
            act = mean + self.std * eps
            logp = (-0.5 * np.square(eps, dtype=np.float64).sum(-1) + self.logp_const).astype(np.float32)
            val = self.vf(obs)[:, 0] if self.vf is not None else None
            return act.astype(np.float32), logp, val
        with torch.no_grad():
            o = torch.from_numpy(obs).to(self.device)
            d = self.policy.dist(o)
            a = d.sample()
            val = self.critic(o).cpu().numpy() if self.critic is not None else None
            return a.cpu().numpy(), d.log_prob(a).cpu().numpy(), val

    def value(self, obs: np.ndarray) -> np.ndarray:
        if self.use_numpy:
            return self.vf(obs)[:, 0]
        with torch.no_grad():
            return self.critic(torch.from_numpy(obs).to(self.device)).cpu().numpy()

    def log_prob(self, obs: np.ndarray, act: np.ndarray) -> np.ndarray:
        """Log-prob of given actions [N, A] (used for the reference policy)."""
        if self.use_numpy:
            z = (act - self.mean(obs)) / self.std
            return (-0.5 * np.square(z, dtype=np.float64).sum(-1) + self.logp_const).astype(np.float32)
        with torch.no_grad():
            o, a = torch.from_numpy(obs).to(self.device), torch.from_numpy(act).to(self.device)
            return self.policy.dist(o).log_prob(a).cpu().numpy()
