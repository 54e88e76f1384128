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
    carry = gamma * lam * (1.0 - done)
    adv = torch.zeros_like(rewards)
    # the backward recursion is T small steps: on the CPU numpy views cost ~1 us a step, torch ~10
    on_cpu = deltas.device.type == "cpu" and not deltas.requires_grad
    d, c, a = (deltas.numpy(), carry.numpy(), adv.numpy()) if on_cpu else (deltas, carry, adv)
    if on_cpu and d.shape[1] == 1:  # one env: numpy scalars of the same dtype (the same arithmetic, ~4x faster)
        d, c, a = d[:, 0], c[:, 0], a[:, 0]
    last = 0.0 * d[0]
    for t in range(rewards.shape[0] - 1, -1, -1):
        last = d[t] + c[t] * last
        a[t] = last
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


def group_relative(rewards: torch.Tensor, alive: torch.Tensor, group_size: int, gamma: float = 1.0,
                   mode: str = "outcome", leave_one_out: bool = False, eps: float = 1e-8,
                   zero_threshold: float = 1e-6, scale: str = "group"):
    """Group-relative advantages for G rollouts per group that share a start state.

    Args:
        rewards: ``[T, N]`` raw rewards, N = K groups * G members laid out group-major
            (env i belongs to group i // G).
        alive: ``[T, N]`` bool, step t belongs to member i's rollout (a rollout is a
            prefix: once False it stays False).
        mode: ``outcome`` -> A_i = (R_i - mean_g R) / (std_g R + eps) with R_i the
            discounted return of the whole rollout, the same value at every step;
            ``per_step`` -> at each t the member's discounted reward-to-go normalised
            over the members of its group still alive at t.
        leave_one_out: baseline is the mean of the *other* members of the group.
        scale: ``group`` divides each centred value by the std of its group (at its t for
            ``per_step``), so every group and step gets unit spread however little its members'
            returns differ; ``batch`` divides them all by one root-mean-square of the centred
            values over every member step of the call, so the spread keeps its size (a step where
            members barely differ, e.g. late in a long rollout or far from a fall, carries a small
            advantage; Liu et al. 2025, "Dr. GRPO", on the bias of per-group std).

    Statistics are taken along the group axis only.  Where the spread is below
    ``zero_threshold`` (or fewer than 2 members are alive) the advantage is 0.

    Returns ``(adv [T, N], returns [K, G], zero_signal [K] bool)``: each member's discounted
    whole-rollout return R_i (for ``per_step`` too) and the groups whose spread of R_i is below
    ``zero_threshold``.
    """
    T, N = rewards.shape
    K, G = _groups(N, group_size)
    m = alive.to(rewards.dtype)
    rtg = discounted_returns(rewards * m, ~alive, gamma)  # reward-to-go inside each rollout, [T, N]
    ret = rtg[0].reshape(K, G)  # whole-rollout discounted return per member
    zero = ret.std(dim=1, unbiased=False) < zero_threshold
    if mode == "outcome":
        a = _normalise_groups(ret, torch.ones_like(ret), leave_one_out, eps, zero_threshold, scale)  # [K, G]
        adv = a.reshape(1, N) * m
    elif mode == "per_step":
        a = _normalise_groups(rtg.reshape(T, K, G), m.reshape(T, K, G), leave_one_out, eps, zero_threshold, scale)
        adv = a.reshape(T, N) * m
    else:
        raise ValueError(f"unknown group advantage mode {mode!r}; use outcome or per_step")
    return adv, ret, zero


def _normalise_groups(x: torch.Tensor, m: torch.Tensor, leave_one_out: bool, eps: float, thr: float,
                      scale: str = "group"):
    """x, m ``[..., G]`` (m = membership weights 0/1) -> centred along the last axis, divided by the
    std along it (``scale="group"``) or by one RMS of the centred values over all of ``x`` (``"batch"``)."""
    if scale not in ("group", "batch"):
        raise ValueError(f"unknown group advantage scale {scale!r}; use group or batch")
    n = m.sum(-1, keepdim=True)
    mean = (x * m).sum(-1, keepdim=True) / n.clamp(min=1)
    std = (((x - mean) ** 2 * m).sum(-1, keepdim=True) / n.clamp(min=1)).sqrt()
    if leave_one_out:
        base = ((x * m).sum(-1, keepdim=True) - x) / (n - 1).clamp(min=1)
    else:
        base = mean
    ok = (n >= 2) & (std >= thr)
    centred = torch.where(ok, x - base, torch.zeros_like(x)) * m
    if scale == "group":
        return centred / (std + eps)
    rms = ((centred ** 2).sum() / m.sum().clamp(min=1)).sqrt()  # one for every group and step
    return centred / (rms + eps)


def _groups(N: int, group_size: int):
    if N % group_size:
        raise ValueError(f"N={N} envs is not a multiple of group_size={group_size}")
    return N // group_size, group_size


def within_group_share(returns: torch.Tensor) -> float:
    """Share of the return variance that lies *within* groups, ``returns [K, G] -> float`` in [0, 1].

    By the law of total variance (equal group sizes, population variances),
    ``Var_all(R) = mean_k Var_i(R_ki) + Var_k(mean_i R_ki)``: the second term is the spread that the
    start states explain (what the group baseline removes), the first the spread between members
    of one group, i.e. what their actions explain.  The share is ``mean_k Var_i(R_ki) / Var_all(R)``
    (0 where all returns are equal).  With common random numbers, members of a group differ only in
    their first (branch) action and MuJoCo is deterministic, so this is the share of the return
    spread explained by the branch action (logged as ``grpo/branch_spread_share``); without CRN it
    is the share explained by all the actions of the rollouts.
    """
    total = returns.var(unbiased=False)
    if returns.numel() < 2 or float(total) == 0.0:
        return 0.0
    return float(returns.var(dim=1, unbiased=False).mean() / total)
