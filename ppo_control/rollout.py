"""Experience collection: ``collect_steps`` (PPO) -> ``Batch`` of ``[T, N]`` tensors."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np
import torch

from .envs import VecEnv
from .inference import Actor, policy_outputs, values_of
from .networks import GaussianPolicy, ValueNet
from .normalize import ObsNormalizer, RewardScaler


# the per-step tensors ``update`` reads (those a variant lacks are None)
FLAT_FIELDS = ("obs", "actions", "logprobs", "values", "advantages", "returns", "weights", "ref_logprobs")


@dataclass
class Batch:
    """One iteration's data. Shapes: ``[T, N, ...]`` (time, env) until ``flat()``.

    ``logprobs`` are the behaviour policy's log-probs, stored at collection time
    under ``no_grad`` and so never part of any graph.  ``actions`` are the
    raw Gaussian samples (before clipping to the action bounds).
    """
    obs: torch.Tensor            # [T, N, obs_dim] normalised float32
    actions: torch.Tensor        # [T, N, act_dim]
    logprobs: torch.Tensor       # [T, N]
    rewards: torch.Tensor        # [T, N] (scaled, as trained on)
    terminated: torch.Tensor     # [T, N] bool
    truncated: torch.Tensor      # [T, N] bool
    values: Optional[torch.Tensor] = None       # [T, N] V(s_t)
    next_values: Optional[torch.Tensor] = None  # [T, N] V of the next obs of the same episode
    advantages: Optional[torch.Tensor] = None   # [T, N]
    returns: Optional[torch.Tensor] = None      # [T, N]
    weights: Optional[torch.Tensor] = None      # [T, N] per-step loss weights (GRPO 1/(G*len))
    ref_logprobs: Optional[torch.Tensor] = None  # [T, N] reference policy log-probs (GRPO KL)
    mask: Optional[torch.Tensor] = None         # [T, N] bool, steps that belong to the batch
    last_obs: Optional[torch.Tensor] = None     # [N, obs_dim] normalised obs after the last step (bootstrap)
    final_obs: Optional[torch.Tensor] = None    # [M, obs_dim] normalised final obs of time-limit truncations
    final_at: Optional[torch.Tensor] = None     # [M, 2] long, the (t, env) of each of them

    def flat(self) -> dict:
        """Tensors needed by ``update``, flattened to ``[B]`` (masked steps dropped)."""
        out = {}
        for n in FLAT_FIELDS:
            x = getattr(self, n)
            if x is None:
                out[n] = None
            elif self.mask is not None:
                out[n] = x[self.mask]
            else:
                out[n] = x.reshape(-1, *x.shape[2:])
        return out


@dataclass
class RolloutState:
    """What collection carries across iterations (saved in checkpoints)."""
    obs: np.ndarray                      # [N, obs_dim] raw current observation
    ep_return: np.ndarray                # [N] undiscounted raw return so far
    ep_length: np.ndarray                # [N]
    global_step: int = 0
    episodes: List[Tuple[float, int]] = field(default_factory=list)  # finished since last drain

    def drain_episodes(self) -> List[Tuple[float, int]]:
        eps, self.episodes = self.episodes, []
        return eps


def clipped_share(actions: torch.Tensor, low: np.ndarray, high: np.ndarray) -> float:
    """Share of the action components in ``actions [..., act_dim]`` (raw Gaussian samples) outside
    ``[low, high]``, i.e. changed by the clipping before ``envs.step``. The log-probs are those of the raw
    samples, so where this share is large the policy's std no longer matches what the env receives
    (logged as ``policy/action_clip_frac``)."""
    if actions.numel() == 0:
        return 0.0
    lo = torch.as_tensor(low, dtype=actions.dtype, device=actions.device)
    hi = torch.as_tensor(high, dtype=actions.dtype, device=actions.device)
    return float(((actions < lo) | (actions > hi)).float().mean())


def record_step(rs: RolloutState, reward: np.ndarray, done: np.ndarray, any_done: Optional[bool] = None) -> None:
    """Accumulate raw rewards [N]; finished episodes go to ``rs.episodes``. ``any_done``: ``done.any()``, where
    the caller has it."""
    if reward.shape == (1,):  # one env: the same float64 additions on the elements, without two array ops
        rs.ep_return[0] += reward[0]
        rs.ep_length[0] += 1
    else:
        rs.ep_return += reward
        rs.ep_length += 1
    if done.any() if any_done is None else any_done:  # the bookkeeping of an ending only where one ended
        for i in np.flatnonzero(done):
            rs.episodes.append((float(rs.ep_return[i]), int(rs.ep_length[i])))
        rs.ep_return[done] = 0.0
        rs.ep_length[done] = 0


def collect_steps(envs: VecEnv, policy: GaussianPolicy, critic: ValueNet, obs_norm: ObsNormalizer,
                  rew_scaler: RewardScaler, rs: RolloutState, num_steps: int,
                  device: torch.device, rng: Optional[np.random.Generator] = None) -> Batch:
    """Run ``num_steps`` steps in each of the N envs with the stochastic policy.

    Per step only the action is computed (``inference.Actor``; ``rng`` drives its noise on the
    CPU fast path); the behaviour log-probs and the values of the whole rollout, including
    V(final obs) of time-limit truncations, come afterwards from one batched torch call each.
    """
    T, N = num_steps, envs.num_envs
    actor = Actor(policy, device, rng if rng is not None else np.random.default_rng())
    obs_buf = np.empty((T, N, envs.obs_dim), np.float32)
    act_buf = np.empty((T, N, envs.act_dim), np.float32)
    rew_buf = np.empty((T, N), np.float32)
    term_buf = np.empty((T, N), bool)
    trunc_buf = np.empty((T, N), bool)
    boot_at, boot_obs = [], []  # (t, envs) cut by a time limit at t, and their normalised final obs
    # the numpy path's noise for the whole rollout in one draw: the same numbers in the same order as one
    # draw per step (numpy's generators fill an array draw by draw), without a call per step
    noise = actor.rng.standard_normal((T, N, envs.act_dim), dtype=np.float32) if actor.mean is not None else None
    for t in range(T):
        o = obs_norm(rs.obs, update=True)
        obs_buf[t] = o
        act_buf[t] = actor.sample(o, None if noise is None else noise[t])
        next_obs, r, term, trunc, final_obs = envs.step(envs.clip_actions(act_buf[t]))
        done = term | trunc
        any_done = done.any()
        record_step(rs, r, done, any_done)
        rew_buf[t] = rew_scaler(r, done)
        term_buf[t], trunc_buf[t] = term, trunc
        if any_done and trunc.any() and (cut := np.flatnonzero(trunc & ~term)).size:  # most steps end no episode
            boot_at.append((t, cut))
            boot_obs.append(obs_norm(final_obs[cut]))
        rs.obs = next_obs
        rs.global_step += N
    tt = lambda x: torch.from_numpy(x).to(device)  # noqa: E731
    obs, actions = tt(obs_buf), tt(act_buf)
    final_at = [(t, i) for t, cut in boot_at for i in cut]
    batch = Batch(obs=obs, actions=actions, rewards=tt(rew_buf), terminated=tt(term_buf), truncated=tt(trunc_buf),
                  logprobs=policy_outputs(policy, obs.reshape(T * N, -1), actions.reshape(T * N, -1)).reshape(T, N),
                  last_obs=tt(obs_norm(rs.obs)),
                  final_obs=tt(np.concatenate(boot_obs) if boot_obs else np.empty((0, envs.obs_dim), np.float32)),
                  final_at=torch.tensor(final_at, dtype=torch.long, device=device).reshape(-1, 2))
    batch.values, batch.next_values = rollout_values(critic, batch)
    return batch


def rollout_values(critic: ValueNet, batch: Batch):
    """``(V(s_t) [T, N], V(next obs of the same episode) [T, N])`` from one batched critic call:
    V(s_{t+1}) normally, V(final obs) where a time limit cut the episode at t, V(last_obs) at t = T-1."""
    T, N = batch.rewards.shape
    v = values_of(critic, torch.cat([batch.obs.reshape(T * N, -1), batch.last_obs, batch.final_obs]))
    values = v[:T * N].reshape(T, N)
    next_values = torch.cat([values[1:], v[T * N:(T + 1) * N][None]])
    if batch.final_at.shape[0]:
        next_values[batch.final_at[:, 0], batch.final_at[:, 1]] = v[(T + 1) * N:]
    return values, next_values


@dataclass
class GroupRollout:
    """One round of group rollouts. ``[T, N]`` with N = K groups * G members (group-major)."""
    batch: Batch              # mask = alive; rewards are raw env rewards
    lengths: np.ndarray       # [N] steps in each member's rollout
    ended: np.ndarray         # [N] bool, the member's episode ended (terminated or time limit)
    returns: np.ndarray       # [N] undiscounted raw return of each member's rollout
    visited: list             # snapshots recorded along the way (for the 'visited' start-state pool)
    env_steps: int            # env steps simulated, including those of members already finished
                              # (none of those with ``freeze_ended``)
    tail_return: np.ndarray   # [N] raw return of the episode an ended member's env reset into (0 if none)
    tail_length: np.ndarray   # [N] steps of that new episode so far (where the env stands at the end)


def collect_groups(envs: VecEnv, policy: GaussianPolicy, ref_policy: Optional[GaussianPolicy],
                   obs_norm: ObsNormalizer, start_obs: np.ndarray, horizon: int, device: torch.device,
                   record_at: Tuple[int, ...] = (), rng: Optional[np.random.Generator] = None,
                   group_size: int = 1, crn: bool = False, freeze_ended: bool = False) -> GroupRollout:
    """Roll out every env (already restored to its group's start state, obs ``start_obs`` [N, obs_dim])
    until its episode ends or ``horizon`` steps pass.  At the steps in ``record_at`` a snapshot of
    one random still-running env is kept for the visited-state pool.

    ``crn`` (common random numbers): the first action of every member is its own draw (the branch
    action); from t = 1 on the G members of a group (envs ``k*G .. k*G+G-1``) use one shared noise
    row, ``a_t = mu(s_t) + std * eps_t``, so members in identical states take identical actions and
    the group's return spread comes from the branch actions, not from H steps of independent noise.

    ``freeze_ended``: an env whose member's episode has ended is not stepped again in this round
    (``envs.step(..., active=alive)``) instead of running on, and autoresetting, until the group's
    longest member ends; nothing trained on changes, the simulation of steps nobody uses is saved.
    Actions (and so the noise stream) are still drawn for every env.
    """
    N, T, G = envs.num_envs, horizon, group_size
    rng = rng if rng is not None else np.random.default_rng()
    actor = Actor(policy, device, rng)
    obs_buf = np.zeros((T, N, envs.obs_dim), np.float32)
    act_buf = np.zeros((T, N, envs.act_dim), np.float32)
    rew_buf = np.zeros((T, N), np.float32)
    term_buf = np.zeros((T, N), bool)
    trunc_buf = np.zeros((T, N), bool)
    alive_buf = np.zeros((T, N), bool)
    alive = np.ones(N, bool)
    lengths, returns, ended = np.zeros(N, np.int64), np.zeros(N), np.zeros(N, bool)
    tail_ret, tail_len = np.zeros(N), np.zeros(N, np.int64)
    obs, visited, steps, t = start_obs, [], 0, 0
    for t in range(T):
        if t in record_at:
            snaps = envs.get_snapshots()
            visited.append(snaps[int(rng.choice(np.flatnonzero(alive)))])
        if obs_norm.enabled:  # statistics from the rollouts' own states only, not finished members'
            obs_norm.rms.update(obs[alive])
        o = obs_norm(obs)
        obs_buf[t] = o
        eps = None
        if crn:
            eps = rng.standard_normal((N if t == 0 else N // G, envs.act_dim), dtype=np.float32)
            eps = eps if t == 0 else np.repeat(eps, G, axis=0)
        act_buf[t] = actor.sample(o, eps)
        if freeze_ended:
            obs, r, term, trunc, _ = envs.step(envs.clip_actions(act_buf[t]), alive)
            steps += int(alive.sum())
        else:
            obs, r, term, trunc, _ = envs.step(envs.clip_actions(act_buf[t]))
            steps += N
        alive_buf[t] = alive
        rew_buf[t] = np.where(alive, r, 0.0)
        term_buf[t], trunc_buf[t] = term & alive, trunc & alive
        returns += np.where(alive, r, 0.0)
        lengths += alive
        tail_ret += np.where(alive, 0.0, r)
        tail_len += ~alive
        again = ~alive & (term | trunc)  # a second episode ended too: the tail restarts with the next one
        tail_ret[again], tail_len[again] = 0.0, 0
        ended |= alive & (term | trunc)
        alive = alive & ~(term | trunc)
        if not alive.any():
            break
    T = t + 1
    tt = lambda x: torch.from_numpy(np.ascontiguousarray(x[:T])).to(device)  # noqa: E731
    obs_t, act_t = tt(obs_buf), tt(act_buf)
    flat = lambda net: policy_outputs(net, obs_t.reshape(T * N, -1), act_t.reshape(T * N, -1)).reshape(T, N)  # noqa: E731
    batch = Batch(obs=obs_t, actions=act_t, logprobs=flat(policy), rewards=tt(rew_buf),
                  terminated=tt(term_buf), truncated=tt(trunc_buf), mask=tt(alive_buf),
                  ref_logprobs=flat(ref_policy) if ref_policy is not None else None)
    return GroupRollout(batch, lengths, ended, returns, visited, steps, tail_ret, tail_len)
