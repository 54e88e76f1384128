"""Advantage estimators as pure tensor functions."""
from __future__ import annotations

import torch


def gae(rewards: torch.Tensor, values: torch.Tensor, next_values: torch.Tensor,
        terminated: torch.Tensor, truncated: torch.Tensor, gamma: float, lam: float):
    """Generalised advantage estimation over a rollout of shape ``[T, N]``.

    Args (all ``[T, N]``):
        rewards: r_t.
        values: V(s_t).
        next_values: V of the observation that followed step t *in the same
            episode*: V(s_{t+1}) normally, V(final observation) where the episode
            ended at t (the observation before the reset), V(s_T) at t = T-1.
        terminated: the episode reached a terminal state at t -> no bootstrap.
        truncated: the episode was cut by a time limit at t -> bootstrap from
            next_values, but the GAE recursion stops there.

    Returns ``(advantages, returns)``, both ``[T, N]``; returns = advantages + values.
    """
    term = terminated.to(rewards.dtype)
    done = torch.logical_or(terminated, truncated).to(rewards.dtype)
    deltas = rewards + gamma * next_values * (1.0 - term) - values
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in range(rewards.shape[0] - 1, -1, -1):
        last = deltas[t] + gamma * lam * (1.0 - done[t]) * last
        adv[t] = last
    return adv, adv + values


def discounted_returns(rewards: torch.Tensor, dones: torch.Tensor, gamma: float) -> torch.Tensor:
    """Reward-to-go sum_k gamma^k r_{t+k} within each episode; rewards, dones ``[T, N]`` -> ``[T, N]``."""
    out = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    done = dones.to(rewards.dtype)
    for t in range(rewards.shape[0] - 1, -1, -1):
        running = rewards[t] + gamma * (1.0 - done[t]) * running
        out[t] = running
    return out
