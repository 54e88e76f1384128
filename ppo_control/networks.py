"""Gaussian policy and value network (separate MLPs, orthogonal init)."""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn
from torch.distributions import Independent, Normal

_LOG_2PI = math.log(2.0 * math.pi)
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "silu": nn.SiLU}


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int, activation: str, out_gain: float) -> nn.Sequential:
    """MLP with orthogonal weights (gain sqrt(2) hidden, ``out_gain`` last) and zero biases.

    The small output gain of the policy head (0.01) starts every action mean near 0,
    which Andrychowicz et al. (2021, "What matters in on-policy RL") found important.
    """
    layers, d = [], in_dim
    for h in hidden:
        lin = nn.Linear(d, h)
        nn.init.orthogonal_(lin.weight, math.sqrt(2))
        nn.init.zeros_(lin.bias)
        layers += [lin, ACTIVATIONS[activation]()]
        d = h
    out = nn.Linear(d, out_dim)
    nn.init.orthogonal_(out.weight, out_gain)
    nn.init.zeros_(out.bias)
    layers.append(out)
    return nn.Sequential(*layers)


class GaussianPolicy(nn.Module):
    """pi(a|s) = Independent(Normal(mu(s), exp(log_std)), 1).

    ``log_std`` is a learnable state-independent vector, clamped to
    ``[log_std_min, log_std_max]`` when used so the std never underflows to 0.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int] = (64, 64),
                 activation: str = "tanh", init_log_std: float = 0.0,
                 log_std_min: float = -5.0, log_std_max: float = 2.0):
        super().__init__()
        self.mean_net = mlp(obs_dim, hidden, act_dim, activation, out_gain=0.01)
        self.log_std = nn.Parameter(torch.full((act_dim,), float(init_log_std)))
        self.log_std_min, self.log_std_max = float(log_std_min), float(log_std_max)

    def std(self) -> torch.Tensor:
        return self.log_std.clamp(self.log_std_min, self.log_std_max).exp()

    def dist(self, obs: torch.Tensor) -> Independent:
        """obs [B, obs_dim] -> distribution with batch shape [B], event shape [act_dim]."""
        mean = self.mean_net(obs)
        std = self.std().expand_as(mean)
        return Independent(Normal(mean, std, validate_args=False), 1, validate_args=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action (the mean), obs [B, obs_dim] -> [B, act_dim]."""
        return self.mean_net(obs)

    def log_prob_entropy(self, obs: torch.Tensor, actions: torch.Tensor):
        """obs [B, obs_dim], actions [B, act_dim] -> (log_prob [B], entropy [B]).

        The closed forms of ``self.dist(obs).log_prob/entropy`` (equal to float precision,
        tested), without the distribution objects' overhead in the hot update loop.
        """
        mean = self.mean_net(obs)
        log_std = self.log_std.clamp(self.log_std_min, self.log_std_max)
        z = (actions - mean) * torch.exp(-log_std)
        k = mean.shape[-1]
        logp = -0.5 * (z * z).sum(-1) - log_std.sum() - 0.5 * k * _LOG_2PI
        ent = (0.5 + 0.5 * _LOG_2PI + log_std).sum().expand(mean.shape[0])
        return logp, ent

    @torch.no_grad()
    def head_log_prob_grads(self, mean: torch.Tensor, actions: torch.Tensor):
        """``log_prob_entropy`` from the mean net's output, with its derivatives, for the update
        loop's hand-written backward (``backprop.py``).

        mean, actions ``[B, act_dim]`` -> ``(logp [B], entropy (scalar, the same for every
        sample), dlogp/dmean [B, act_dim], dlogp/dlog_std [B, act_dim], clamp mask [act_dim])``,
        where the mask is 1 where ``log_std`` lies inside its clamp range (autograd's rule).
        """
        ls = self.log_std
        log_std = ls.clamp(self.log_std_min, self.log_std_max)
        inv_std = torch.exp(-log_std)
        z = (actions - mean) * inv_std
        k = mean.shape[-1]
        logp = -0.5 * (z * z).sum(-1) - (log_std.sum() + 0.5 * k * _LOG_2PI)
        ent = (0.5 + 0.5 * _LOG_2PI + log_std).sum()
        mask = (ls >= self.log_std_min) & (ls <= self.log_std_max)
        return logp, ent, z * inv_std, z * z - 1.0, mask


class ValueNet(nn.Module):
    """V(s): obs [B, obs_dim] -> [B]."""

    def __init__(self, obs_dim: int, hidden: Sequence[int] = (64, 64), activation: str = "tanh"):
        super().__init__()
        self.net = mlp(obs_dim, hidden, 1, activation, out_gain=1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)
