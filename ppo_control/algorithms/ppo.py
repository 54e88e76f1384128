"""PPO for continuous control: one iteration = collect, GAE(lambda), update.

    batch = collect_steps(...)                  # [T, N] rollout, old log-probs and values
    batch.advantages, batch.returns = gae(...)  # termination cuts the bootstrap, truncation does not
    stats = update(policy, critic, ...)         # clipped / dual-clip surrogate + entropy + value loss
"""
from __future__ import annotations

import time
from typing import Optional

import torch

from ..advantages import gae
from ..config import _need
from ..rollout import clipped_share, collect_steps, rollout_values
from ..update import update
from .base import Algorithm, LossTerms


class PPO(Algorithm):
    """Clipped-surrogate PPO with a learned critic and GAE; carries nothing beyond the shared networks."""

    uses_critic = True
    splits_critic = True
    # the critic, the rollout length and reward scaling: GRPO has none of them
    own_fields = frozenset({"num_steps", "gae_lambda", "norm_adv", "vf_coef", "clip_vloss", "adv_every_epoch",
                            "value_norm", "critic_hidden_sizes", "norm_reward", "reward_clip", "parallel_critic"})
    loss_terms = LossTerms(value=True)

    @classmethod
    def check_config(cls, c) -> None:
        _need(c.batch_size % c.num_minibatches == 0,
              f"num_minibatches={c.num_minibatches} must divide the batch size num_envs*num_steps="
              f"{c.batch_size}; change num_minibatches, num_envs or num_steps")
        _need(c.minibatch_size >= 2, f"minibatches of {c.minibatch_size} transitions are too small; "
                                     f"lower num_minibatches")
        _need(c.kl_coef == 0, "kl_coef (KL to a reference policy) is a GRPO option; use --algo grpo or set it to 0")

    @classmethod
    def planned_updates(cls, cfg) -> Optional[int]:
        return cfg.num_iterations * cfg.update_epochs * cfg.num_minibatches

    def finished(self, ts) -> bool:
        return ts.iteration >= ts.cfg.num_iterations  # whole iterations: total_steps rounded up

    def iteration(self, ts) -> dict:
        """One PPO iteration on the ``TrainState`` ``ts``; returns the statistics to log."""
        cfg = ts.cfg
        t0 = time.perf_counter()
        batch = collect_steps(ts.envs, ts.policy, ts.critic, ts.obs_norm, ts.rew_scaler, ts.rollout,
                              cfg.num_steps, ts.device, ts.np_rng)
        batch.advantages, batch.returns = gae(batch.rewards, batch.values, batch.next_values, batch.terminated,
                                              batch.truncated, cfg.gamma, cfg.gae_lambda)
        if cfg.value_norm:
            ts.critic.update_target_stats(batch.returns)

        def refresh() -> dict:  # the same GAE with the critic as it is now (adv_every_epoch)
            values, next_values = rollout_values(ts.critic, batch)
            adv, ret = gae(batch.rewards, values, next_values, batch.terminated, batch.truncated, cfg.gamma,
                           cfg.gae_lambda)
            return {"advantages": adv.reshape(-1), "returns": ret.reshape(-1)}
        t1 = time.perf_counter()
        stats = update(ts.policy, ts.critic, ts.optimizer, batch.flat(), cfg, ts.generator, cfg.norm_adv,
                       refresh if cfg.adv_every_epoch else None, compiled=ts.compile_plan[0], terms=self.loss_terms,
                       critic_process=ts.critic_process)
        stats["time/collect_s"], stats["time/update_s"] = t1 - t0, time.perf_counter() - t1  # where the time goes
        y, v = batch.returns.flatten(), batch.values.flatten()
        var_y = torch.var(y)
        stats["losses/explained_variance"] = float("nan") if var_y == 0 else float(1 - torch.var(y - v) / var_y)
        stats["charts/steps_this_iter"] = batch.rewards.numel()
        stats["policy/action_clip_frac"] = clipped_share(batch.actions, ts.envs.action_low, ts.envs.action_high)
        return stats
