"""Gaussian policy and value network: plain ``nn.Module``s built from the config.

The Gaussian head (state-independent, clamped ``log_std``; ``Independent(Normal, 1)``) is
written once, in :class:`GaussianPolicy`, and used by training, collection and evaluation.
The mean network and the critic body can be any ``nn.Module``; :func:`mlp` builds the usual
ones (sizes per network, activation, optional LayerNorm).
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn
from torch.distributions import Independent, Normal

_LOG_2PI = math.log(2.0 * math.pi)
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "silu": nn.SiLU}


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int, activation: str = "tanh", out_gain: float = 1.0,
        layer_norm: bool = False) -> nn.Sequential:
    """``Linear[, LayerNorm], act, ..., Linear`` with orthogonal weights (gain sqrt(2) hidden,
    ``out_gain`` last) and zero biases.

    The small output gain of the policy head (0.01) starts every action mean near 0, which
    Andrychowicz et al. (2021, "What matters in on-policy RL") found important.
    """
    layers, d = [], in_dim
    for h in hidden:
        lin = nn.Linear(d, h)
        nn.init.orthogonal_(lin.weight, math.sqrt(2))
        nn.init.zeros_(lin.bias)
        layers += [lin] + ([nn.LayerNorm(h)] if layer_norm else []) + [ACTIVATIONS[activation]()]
        d = h
    out = nn.Linear(d, out_dim)
    nn.init.orthogonal_(out.weight, out_gain)
    nn.init.zeros_(out.bias)
    layers.append(out)
    return nn.Sequential(*layers)


class GaussianPolicy(nn.Module):
    """pi(a|s) = Independent(Normal(mean_net(s), exp(log_std)), 1).

    ``mean_net`` is any module mapping ``[B, obs_dim] -> [B, act_dim]``.  ``log_std`` is a
    learnable state-independent vector, clamped to ``[log_std_min, log_std_max]`` where it is
    used, so the std never underflows to 0 (and no gradient reaches it beyond the clamp).
    """

    def __init__(self, mean_net: nn.Module, act_dim: int, init_log_std: float = 0.0,
                 log_std_min: float = -5.0, log_std_max: float = 2.0):
        super().__init__()
        self.mean_net = mean_net
        self.log_std = nn.Parameter(torch.full((act_dim,), float(init_log_std)))
        self.log_std_min, self.log_std_max = float(log_std_min), float(log_std_max)

    def clamped_log_std(self) -> torch.Tensor:
        return self.log_std.clamp(self.log_std_min, self.log_std_max)

    def std(self) -> torch.Tensor:
        return self.clamped_log_std().exp()

    def dist(self, obs: torch.Tensor) -> Independent:
        """obs [B, obs_dim] -> distribution with batch shape [B], event shape [act_dim]."""
        mean = self.mean_net(obs)
        return Independent(Normal(mean, self.std().expand_as(mean), validate_args=False), 1, validate_args=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action (the mean), obs [B, obs_dim] -> [B, act_dim]."""
        return self.mean_net(obs)

    def log_prob_entropy(self, obs: torch.Tensor, actions: torch.Tensor):
        """obs [B, obs_dim], actions [B, act_dim] -> (log_prob [B], entropy [B]).

        The closed forms of ``self.dist(obs).log_prob/entropy`` (equal to float precision,
        tests/test_networks.py) without the distribution objects' overhead; the one log-prob
        that training, collection (old log-probs) and GRPO's reference policy all use.
        """
        mean = self.mean_net(obs)
        log_std = self.clamped_log_std()
        z = (actions - mean) * torch.exp(-log_std)
        k = mean.shape[-1]
        logp = -0.5 * (z * z).sum(-1) - log_std.sum() - 0.5 * k * _LOG_2PI
        ent = (0.5 + 0.5 * _LOG_2PI + log_std).sum().expand(mean.shape[0])
        return logp, ent


class ValueNet(nn.Module):
    """V(s) = net(s): obs [B, obs_dim] -> [B], for any ``net`` with one output.

    With ``normalize_targets`` the net's output lives in the space of returns normalised by their
    running mean/std (buffers, so they are checkpointed with the critic): ``forward`` gives
    ``out * std + mean``, the value in reward units; :meth:`normalize` maps returns and values
    into the net's space, where the value loss is taken.
    """

    def __init__(self, net: nn.Module, normalize_targets: bool = False):
        super().__init__()
        self.net = net
        self.normalize_targets = normalize_targets
        if normalize_targets:
            self.register_buffer("ret_mean", torch.zeros((), dtype=torch.float64))
            self.register_buffer("ret_var", torch.ones((), dtype=torch.float64))
            self.register_buffer("ret_count", torch.full((), 1e-4, dtype=torch.float64))

    def _moments(self):
        return self.ret_mean.float(), (self.ret_var.float() + 1e-8).sqrt()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        out = self.net(obs).squeeze(-1)
        if not self.normalize_targets:
            return out
        mean, std = self._moments()
        return out * std + mean

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """Returns or values ``[B]`` in reward units -> the space the net's output lives in."""
        if not self.normalize_targets:
            return x
        mean, std = self._moments()
        return (x - mean) / std

    @torch.no_grad()
    def update_target_stats(self, returns: torch.Tensor) -> None:
        """Fold a batch of value targets ``[...]`` into the running mean/var (parallel-variance update)."""
        x = returns.detach().reshape(-1).double()
        n = x.numel()
        delta = x.mean() - self.ret_mean
        tot = self.ret_count + n
        m2 = self.ret_var * self.ret_count + x.var(unbiased=False) * n + delta * delta * self.ret_count * n / tot
        self.ret_mean += delta * n / tot
        self.ret_var.copy_(m2 / tot)
        self.ret_count.copy_(tot)


def make_policy(cfg, obs_dim: int, act_dim: int) -> GaussianPolicy:
    """The policy a ``Config`` describes (``actor_hidden_sizes``, ``activation``, ``layer_norm``)."""
    body = mlp(obs_dim, cfg.actor_sizes, act_dim, cfg.activation, out_gain=0.01,
               layer_norm=cfg.layer_norm in ("actor", "both"))
    return GaussianPolicy(body, act_dim, cfg.init_log_std, cfg.log_std_min, cfg.log_std_max)


def make_critic(cfg, obs_dim: int) -> ValueNet:
    """The critic a ``Config`` describes (``critic_hidden_sizes``, ``activation``, ``layer_norm``)."""
    return ValueNet(mlp(obs_dim, cfg.critic_sizes, 1, cfg.activation, out_gain=1.0,
                        layer_norm=cfg.layer_norm in ("critic", "both")), normalize_targets=cfg.value_norm)
