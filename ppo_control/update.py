"""The epoch x minibatch update loop shared by PPO and GRPO.

A variant is a parameter: ``critic=None`` (GRPO, no value loss), ``weights``
in the data (GRPO's 1/(G*len_i) averaging), ``ref_logprobs`` with
``kl_coef > 0`` (GRPO's KL to the reference policy), ``dual_clip``.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .config import Config
from .losses import clipped_surrogate, dual_clip_active, kl_k3, value_loss, weighted_mean
from .networks import GaussianPolicy, ValueNet
from .optim import FlatAdam


class NonFiniteError(FloatingPointError):
    """A loss or parameter became NaN/inf."""


def _normalise(adv: torch.Tensor) -> torch.Tensor:
    if adv.numel() < 2:
        return adv
    return (adv - adv.mean()) / (adv.std() + 1e-8)


def update(policy: GaussianPolicy, critic: Optional[ValueNet], optimizer: FlatAdam,
           data: dict, cfg: Config, generator: torch.Generator, norm_adv: bool) -> dict:
    """Optimise on one batch. ``data`` holds flat ``[B, ...]`` tensors (see ``Batch.flat``).

    Returns the mean of each statistic over the minibatches that ran.
    """
    obs, act, old_logp, adv = data["obs"], data["actions"], data["logprobs"], data["advantages"]
    w, ref_logp = data.get("weights"), data.get("ref_logprobs")
    B = obs.shape[0]
    n_mb = min(cfg.num_minibatches, B)
    mb = B // n_mb
    sums, count, stop = {}, 0, False
    for epoch in range(cfg.update_epochs):
        perm = torch.randperm(B, generator=generator).to(obs.device)
        for k in range(n_mb):
            idx = perm[k * mb:(k + 1) * mb]
            logp, ent = policy.log_prob_entropy(obs[idx], act[idx])
            logratio = logp - old_logp[idx]
            ratio = logratio.exp()
            a = adv[idx]
            if norm_adv:
                a = _normalise(a)
            wi = None if w is None else w[idx]
            pg = weighted_mean(clipped_surrogate(ratio, a, cfg.clip_coef, cfg.dual_clip), wi)
            entropy = weighted_mean(ent, wi)
            loss = pg - cfg.ent_coef * entropy
            s = {"losses/policy_loss": pg.detach(), "losses/entropy": entropy.detach()}
            if critic is not None:
                v = critic(obs[idx])
                vl = value_loss(v, data["returns"][idx], data["values"][idx],
                                cfg.clip_coef if cfg.clip_vloss else None).mean()
                loss = loss + cfg.vf_coef * vl
                s["losses/value_loss"] = vl.detach()
            if ref_logp is not None:
                kl_ref = weighted_mean(kl_k3(logp, ref_logp[idx]), wi)
                if cfg.kl_coef > 0:
                    loss = loss + cfg.kl_coef * kl_ref
                s["grpo/kl_ref"] = kl_ref.detach()
            if not torch.isfinite(loss):
                raise NonFiniteError(f"non-finite loss {loss.item()} in epoch {epoch}, minibatch {k}")
            optimizer.zero_grad()
            loss.backward()
            optimizer.gather_grads()
            optimizer.clip_grad_norm_(cfg.max_grad_norm)  # policy and critic each on their own
            optimizer.step()
            with torch.no_grad():
                approx_kl = ((ratio - 1.0) - logratio).mean()
                s["losses/approx_kl"] = approx_kl
                s["losses/clipfrac"] = ((ratio - 1.0).abs() > cfg.clip_coef).float().mean()
                if cfg.dual_clip is not None:
                    s["losses/dual_clip_frac"] = dual_clip_active(ratio, a, cfg.clip_coef,
                                                                  cfg.dual_clip).float().mean()
                else:
                    s["losses/dual_clip_frac"] = torch.zeros(())
            for key, val in s.items():
                sums[key] = sums.get(key, 0.0) + val
            count += 1
            if cfg.target_kl is not None and approx_kl.item() > cfg.target_kl:
                stop = True
                break
        if stop:
            break
    out = {k: float(v) / count for k, v in sums.items()}
    out["losses/epochs"] = epoch + 1
    out["losses/early_stop"] = float(stop)
    return out


def check_finite(*modules: nn.Module) -> None:
    for m in modules:
        if m is None:
            continue
        for name, p in m.named_parameters():
            if not torch.isfinite(p).all():
                raise NonFiniteError(f"parameter {type(m).__name__}.{name} became non-finite")
