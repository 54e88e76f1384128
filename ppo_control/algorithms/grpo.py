"""GRPO for continuous control: critic-free updates from groups that share a simulator start state.

One iteration:
    for each round:  pick K start states (fresh resets, states the policy visited before, or the
                     current policy's own running trajectories: ``branch``, TRPO's "vine"),
                     restore each into its G member envs, roll all N = K*G envs out
                     (``crn``: one shared noise sequence per group after the branch action),
                     group-relative advantages, per-step weights 1/(M * len_i)
                     (``grpo_step_weight=step``: 1/(trained steps), a plain mean over steps)
                     (``grpo_train_steps=branch``: only the first action of each member, weight 1/M)
    update(policy, critic=None, ...) with the same clipped/dual-clip surrogate as PPO
                     and beta * KL_k3(pi || pi_ref)

What a run carries between iterations lives in ``ts.extra`` (checkpointed with the rest):
``pool`` (visited start states) and ``trunk`` (branch: the K trunk states the next round starts
from).  All sampling (start picks, noise, trunk member picks) draws from ``ts.np_rng``.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from .advantages import group_relative, within_group_share
from .rollout import FLAT_FIELDS, clipped_share, collect_groups
from .update import update

POOL_SIZE = 2048          # visited start states kept (FIFO)
RECORDS_PER_ROUND = 8     # snapshots added to the pool per round


def _start_states(ts, K: int):
    """K snapshots and a [K] mask of those at the start of an episode (whole episodes count as returns)."""
    cfg, envs, G = ts.cfg, ts.envs, ts.cfg.group_size
    if cfg.start_state == "branch":
        # K trunks: the envs' own seeded resets (TrainState.build) the first time, then carried on
        trunk = ts.extra.get("trunk")
        if trunk is None:
            snaps = envs.get_snapshots()
            trunk = [snaps[k * G] for k in range(K)]
        return trunk, np.array([int(s["elapsed_steps"]) == 0 for s in trunk])
    envs.reset()  # each env draws from its own reset distribution with its own RNG
    fresh = [envs.get_snapshots()[k * G] for k in range(K)]
    pool = ts.extra.setdefault("pool", [])
    if cfg.start_state == "reset" or not pool:
        return fresh, np.ones(K, bool)
    # group 0 always starts fresh so t = 0 states stay covered and the pool keeps renewing
    picks = ts.np_rng.integers(0, len(pool), size=K - 1)
    return fresh[:1] + [pool[int(i)] for i in picks], np.arange(K) == 0


def _advance_trunks(ts, K: int, gr) -> None:
    """Branch: each trunk continues from where one of its group's members (picked at random, blind
    to the returns, so the trunk stays an on-policy trajectory) stands after this round; a member
    whose episode ended has been reset by its env, so trunks restart episodes by themselves.

    A trunk is a whole episode stitched from its members' segments: its return feeds
    ``charts/episodic_return`` (the stochastic policy's training curve, like PPO's)."""
    G = ts.cfg.group_size
    snaps = ts.envs.get_snapshots()
    pick = np.arange(K) * G + ts.np_rng.integers(0, G, size=K)
    ts.extra["trunk"] = [snaps[int(i)] for i in pick]
    ret = ts.extra.setdefault("trunk_return", np.zeros(K))
    length = ts.extra.setdefault("trunk_length", np.zeros(K, np.int64))
    ret += gr.returns[pick]
    length += gr.lengths[pick]
    for k in np.flatnonzero(gr.ended[pick]):
        ts.rollout.episodes.append((float(ret[k]), int(length[k])))
    ended = gr.ended[pick]
    ret[ended], length[ended] = gr.tail_return[pick][ended], gr.tail_length[pick][ended]


def _max_len(ts) -> int:
    if ts.cfg.horizon is not None:
        return ts.cfg.horizon
    return int(ts.envs.max_episode_steps or 1000)


def iteration(ts) -> dict:
    """One GRPO iteration on the ``TrainState`` ``ts`` (``groups_per_iter`` rounds, one update)."""
    cfg, G, N = ts.cfg, ts.cfg.group_size, ts.cfg.num_envs
    t0 = time.perf_counter()
    rounds = [_round(ts, N // G, _max_len(ts)) for _ in range(cfg.groups_per_iter)]
    data = _merge([(gr.batch, trained_len) for gr, trained_len, *_ in rounds], len(rounds) * N, cfg.grpo_step_weight)
    t1 = time.perf_counter()
    stats = update(ts.policy, None, ts.optimizer, data, cfg, ts.generator, norm_adv=False)
    stats["time/collect_s"], stats["time/update_s"] = t1 - t0, time.perf_counter() - t1
    lengths = np.concatenate([gr.lengths for gr, *_ in rounds])
    ts.rollout.global_step += int(lengths.sum())
    if cfg.ref_update_every and (ts.iteration + 1) % cfg.ref_update_every == 0:
        ts.ref_policy.load_state_dict(ts.policy.state_dict())  # copies the values
    stats.update(_diagnostics(rounds, data, G))
    stats["policy/action_clip_frac"] = clipped_share(data["actions"], ts.envs.action_low, ts.envs.action_high)
    if cfg.crn:  # members differ only in their branch action: see advantages.within_group_share
        stats["grpo/branch_spread_share"] = stats["grpo/within_group_share"]
    return stats


def _round(ts, K: int, H: int):
    """One round: K start states, G members each, rolled out for up to H steps.

    Returns ``(GroupRollout with batch.advantages set, trained length per member [N],
    group return std [K], zero-signal [K], discounted group returns [K, G])``.
    """
    cfg, envs, G, N = ts.cfg, ts.envs, ts.cfg.group_size, ts.cfg.num_envs
    starts, fresh = _start_states(ts, K)
    obs0 = envs.set_snapshots([starts[i // G] for i in range(N)], restore_rng=False)
    record_at = ()
    if cfg.start_state == "visited":
        record_at = tuple(int(x) for x in ts.np_rng.integers(0, H, size=RECORDS_PER_ROUND))
    # reference log-probs are always collected so grpo/kl_ref is logged even with kl_coef = 0
    gr = collect_groups(envs, ts.policy, ts.ref_policy, ts.obs_norm, obs0, H, ts.device, record_at, ts.np_rng,
                        group_size=G, crn=cfg.crn,
                        # branch trunks go on from a member's env after its episode ended: those keep stepping
                        freeze_ended=cfg.grpo_freeze_ended and cfg.start_state != "branch")
    if cfg.start_state == "branch":
        _advance_trunks(ts, K, gr)
    b = gr.batch
    b.advantages, group_ret, zero = group_relative(b.rewards, b.mask, G, cfg.gamma, cfg.grpo_advantage,
                                                   cfg.leave_one_out, zero_threshold=cfg.zero_signal_threshold,
                                                   scale=cfg.grpo_adv_scale)
    gstd = group_ret.std(dim=1, unbiased=False)
    trained_len = torch.from_numpy(gr.lengths).to(b.rewards)
    if cfg.grpo_train_steps == "branch":
        # only the branch action: at t = 0 per_step and outcome advantages coincide
        b.mask = b.mask & (torch.arange(b.mask.shape[0], device=b.mask.device) == 0)[:, None]
        trained_len = torch.ones_like(trained_len)
    if cfg.start_state == "visited":
        pool = ts.extra.setdefault("pool", [])
        pool.extend(gr.visited)
        del pool[:-POOL_SIZE]
    # whole episodes (started at t = 0, ended by the env) feed charts/episodic_return, only where the horizon
    # cannot cut one (else only the episodes that fail early would count); branch: the trunks' episodes do
    uncut = cfg.horizon is None or cfg.horizon >= (envs.max_episode_steps or float("inf"))
    full = gr.ended & np.repeat(fresh, G) & (cfg.start_state != "branch") & uncut
    ts.rollout.episodes.extend((float(r), int(n)) for r, n, f in zip(gr.returns, gr.lengths, full) if f)
    return gr, trained_len, gstd, zero, group_ret


def _diagnostics(rounds, data: dict, G: int) -> dict:
    """The ``grpo/*`` statistics of one iteration's rounds (see README, GRPO diagnostics)."""
    returns = np.concatenate([gr.returns for gr, *_ in rounds])
    lengths = np.concatenate([gr.lengths for gr, *_ in rounds])
    gstd, zero = torch.cat([r[2] for r in rounds]), torch.cat([r[3] for r in rounds])
    used, simulated = int(lengths.sum()), sum(gr.env_steps for gr, *_ in rounds)
    group_steps = lengths.reshape(-1, G).sum(1).astype(np.float64)
    adv = data["advantages"]
    return {
        "grpo/group_return_std": float(gstd.mean()),
        "grpo/zero_signal_frac": float(zero.float().mean()),
        "grpo/within_group_share": within_group_share(torch.cat([r[4] for r in rounds])),
        "grpo/adv_abs_mean": float(adv.abs().mean()),
        "grpo/adv_std": float(adv.std()) if adv.numel() > 1 else 0.0,
        "grpo/group_return_mean": float(returns.mean()),
        "grpo/member_len_mean": float(lengths.mean()),
        "grpo/trained_samples": int(adv.numel()),
        "grpo/group_step_share_max": float(group_steps.max() / used) if used else 0.0,
        "grpo/wasted_step_frac": 1.0 - used / max(simulated, 1),
        "charts/steps_this_iter": used,
    }


def _merge(parts, members: int, step_weight: str = "rollout") -> dict:
    """Flatten the rounds' trained steps with their loss weights (summing to 1 over the batch;
    ``update`` renormalises them within each minibatch, see ``losses.weighted_mean``).

    ``rollout``: each step of member i weighs 1/(members * len_i), so every rollout counts once however
    long it is (GRPO's 1/|o_i| average); ``step``: every trained step weighs 1/(trained steps), a plain
    mean over steps, so a member that survives longer contributes more steps (Dr. GRPO's constant
    normaliser).  The two coincide where all members have the same length (no early termination)."""
    if step_weight not in ("rollout", "step"):
        raise ValueError(f"unknown GRPO step weight {step_weight!r}; use rollout or step")
    total = sum(float(b.mask.sum()) for b, _ in parts)
    out = {}
    for b, lengths in parts:
        m = b.mask.to(b.rewards.dtype)
        if step_weight == "rollout":
            b.weights = (m / lengths.clamp(min=1).unsqueeze(0)) / members
        else:
            b.weights = m / max(total, 1.0)
        for k, v in b.flat().items():
            if v is not None:
                out.setdefault(k, []).append(v)
    return {k: torch.cat(out[k]) if k in out else None for k in FLAT_FIELDS}
