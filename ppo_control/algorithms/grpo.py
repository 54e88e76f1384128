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

What a run carries between iterations is typed: :class:`GRPOState` (the pool of visited start states,
the branch trunks) and the reference policy, both checkpointed through ``state_dict``.  The start-state
modes are the strategies of ``grpo_starts``.  All sampling (start picks, noise, trunk member picks) draws
from ``ts.np_rng``.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from typing import NamedTuple, Optional

import numpy as np
import torch

from ..advantages import group_relative, within_group_share
from ..checkpoint import load_module_state, to_arrays, to_tensors
from ..config import GRPO_EVAL_INTERVAL, Config, _need
from ..rollout import FLAT_FIELDS, GroupRollout, clipped_share, collect_groups
from ..update import update
from .base import Algorithm, LossTerms
from .grpo_starts import START_STATES, GRPOState

__all__ = ["GRPO", "GRPOState", "Round"]


class Round(NamedTuple):
    """One round's result: K groups of G members."""
    rollout: GroupRollout         # with ``rollout.batch.advantages`` set
    trained_len: torch.Tensor     # [N] trained steps per member (the loss weights' 1/len_i)
    group_std: torch.Tensor       # [K] std of each group's returns
    zero_signal: torch.Tensor     # [K] bool: groups whose returns barely differ
    group_returns: torch.Tensor   # [K, G] discounted member returns


class GRPO(Algorithm):
    """Critic-free GRPO from groups that share a simulator start state, with a KL to a reference policy."""

    needs_snapshots = True
    loss_terms = LossTerms(kl_ref=True, weighted=True)
    compile_auto_off = "off for GRPO (its batch size changes every round; not measured compiled)"
    own_fields = frozenset(f.name for f in dataclasses.fields(Config) if f.metadata["help"].startswith("GRPO"))
    presets_serve_others = False  # a GRPO preset's 64 envs and short horizons mean nothing to PPO

    @classmethod
    def from_other_preset(cls, values: dict, overrides: dict) -> dict:
        values = dict(values)
        if "num_envs" not in overrides:  # whole groups: one group per round unless told otherwise
            values["num_envs"] = overrides.get("group_size", Config.group_size)
        if "eval_interval" not in overrides:
            # short-horizon GRPO trains on no whole episode, so its only return curve is this evaluation
            values["eval_interval"] = GRPO_EVAL_INTERVAL
        return values

    def __init__(self, ref_policy, starts, state: Optional[GRPOState] = None):
        self.ref_policy = ref_policy    # frozen; refreshed every ref_update_every iterations
        self.starts = starts            # a grpo_starts.StartStates strategy
        self.state = state or GRPOState()

    @classmethod
    def check_config(cls, c) -> None:
        _need(c.group_size >= 2, f"group_size must be >= 2 for group-relative advantages (got {c.group_size})")
        _need(c.num_envs % c.group_size == 0,
              f"num_envs={c.num_envs} must be a multiple of group_size={c.group_size}; "
              f"e.g. set --num-envs {c.group_size * max(1, c.num_envs // c.group_size)}")
        _need(c.horizon is None or c.horizon >= 1, f"horizon must be >= 1 or none (got {c.horizon})")
        _need(c.groups_per_iter >= 1, f"groups_per_iter must be >= 1 (got {c.groups_per_iter})")
        _need(c.ref_update_every >= 0, f"ref_update_every must be >= 0 (got {c.ref_update_every})")
        _need(not c.clip_vloss, "clip_vloss has no meaning for GRPO (it has no critic); remove --clip-vloss")
        for name in ("adv_every_epoch", "value_norm"):
            _need(not getattr(c, name), f"{name} is a PPO option (GRPO has no critic); remove --{name.replace('_', '-')}")
        _need(c.grpo_train_steps == "all" or c.groups_per_iter * c.num_envs >= c.num_minibatches,
              f"grpo_train_steps=branch trains one step per member, groups_per_iter*num_envs="
              f"{c.groups_per_iter * c.num_envs} per update, fewer than num_minibatches={c.num_minibatches}; "
              f"raise --groups-per-iter or lower --num-minibatches")

    @classmethod
    def build(cls, cfg, policy, envs) -> "GRPO":
        return cls(copy.deepcopy(policy).requires_grad_(False), START_STATES[cfg.start_state])

    def iteration(self, ts) -> dict:
        """One GRPO iteration on the ``TrainState`` ``ts`` (``groups_per_iter`` rounds, one update)."""
        cfg, G, N = ts.cfg, ts.cfg.group_size, ts.cfg.num_envs
        t0 = time.perf_counter()
        rounds = [_round(ts, N // G, _max_len(ts)) for _ in range(cfg.groups_per_iter)]
        data = _merge([(r.rollout.batch, r.trained_len) for r in rounds], len(rounds) * N, cfg.grpo_step_weight)
        t1 = time.perf_counter()
        stats = update(ts.policy, None, ts.optimizer, data, cfg, ts.generator, norm_adv=False,
                       terms=self.loss_terms)
        stats["time/collect_s"], stats["time/update_s"] = t1 - t0, time.perf_counter() - t1
        lengths = np.concatenate([r.rollout.lengths for r in rounds])
        ts.rollout.global_step += int(lengths.sum())
        if cfg.ref_update_every and (ts.iteration + 1) % cfg.ref_update_every == 0:
            self.ref_policy.load_state_dict(ts.policy.state_dict())  # copies the values
        stats.update(_diagnostics(rounds, data, G))
        stats["policy/action_clip_frac"] = clipped_share(data["actions"], ts.envs.action_low, ts.envs.action_high)
        if cfg.crn:  # members differ only in their branch action: see advantages.within_group_share
            stats["grpo/branch_spread_share"] = stats["grpo/within_group_share"]
        return stats

    def progress_return(self, ts, row: dict) -> float:
        # short horizons train on no whole episode: the members' mean return over their rollouts stands in
        last = ts.last_return()
        return last if np.isfinite(last) else row.get("grpo/group_return_mean", float("nan"))

    def state_dict(self) -> dict:
        s = self.state
        return {"ref_policy": {k: v.detach().cpu().clone() for k, v in self.ref_policy.state_dict().items()},
                "pool": to_tensors(s.pool), "trunk": to_tensors(s.trunk),
                "trunk_return": to_tensors(s.trunk_return), "trunk_length": to_tensors(s.trunk_length)}

    def load_state_dict(self, sd: dict) -> None:
        if sd.get("ref_policy") is not None:
            load_module_state(self.ref_policy, sd["ref_policy"], "reference policy")
        self.state = GRPOState(pool=to_arrays(sd.get("pool")) or [], trunk=to_arrays(sd.get("trunk")),
                               trunk_return=to_arrays(sd.get("trunk_return")),
                               trunk_length=to_arrays(sd.get("trunk_length")))


def _max_len(ts) -> int:
    if ts.cfg.horizon is not None:
        return ts.cfg.horizon
    return int(ts.envs.max_episode_steps or 1000)


def _round(ts, K: int, H: int) -> Round:
    """One round of ``ts.algorithm`` (a GRPO): K start states, G members each, rolled out for up to H steps."""
    cfg, envs, G, N = ts.cfg, ts.envs, ts.cfg.group_size, ts.cfg.num_envs
    algo = ts.algorithm
    starts, fresh = algo.starts.pick(ts, algo.state, K)
    obs0 = envs.set_snapshots([starts[i // G] for i in range(N)], restore_rng=False)
    record_at = algo.starts.record_at(ts, H)
    # reference log-probs are always collected so grpo/kl_ref is logged even with kl_coef = 0
    gr = collect_groups(envs, ts.policy, algo.ref_policy, ts.obs_norm, obs0, H, ts.device, record_at, ts.np_rng,
                        group_size=G, crn=cfg.crn, freeze_ended=cfg.grpo_freeze_ended and algo.starts.freezes_ended)
    algo.starts.after_round(ts, algo.state, K, gr)
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
    # whole episodes (started at t = 0, ended by the env) feed charts/episodic_return, only where the horizon
    # cannot cut one (else only the episodes that fail early would count); branch: the trunks' episodes do
    uncut = cfg.horizon is None or cfg.horizon >= (envs.max_episode_steps or float("inf"))
    full = gr.ended & np.repeat(fresh, G) & algo.starts.member_episodes & uncut
    ts.rollout.episodes.extend((float(r), int(n)) for r, n, f in zip(gr.returns, gr.lengths, full) if f)
    return Round(gr, trained_len, gstd, zero, group_ret)


def _diagnostics(rounds, data: dict, G: int) -> dict:
    """The ``grpo/*`` statistics of one iteration's rounds (see README, GRPO diagnostics)."""
    returns = np.concatenate([r.rollout.returns for r in rounds])
    lengths = np.concatenate([r.rollout.lengths for r in rounds])
    gstd, zero = torch.cat([r.group_std for r in rounds]), torch.cat([r.zero_signal for r in rounds])
    used, simulated = int(lengths.sum()), sum(r.rollout.env_steps for r in rounds)
    group_steps = lengths.reshape(-1, G).sum(1).astype(np.float64)
    adv = data["advantages"]
    return {
        "grpo/group_return_std": float(gstd.mean()),
        "grpo/zero_signal_frac": float(zero.float().mean()),
        "grpo/within_group_share": within_group_share(torch.cat([r.group_returns for r in rounds])),
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
