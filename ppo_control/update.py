"""The epoch x minibatch update loop shared by PPO and GRPO.

A variant is a parameter: ``critic=None`` (GRPO, no value loss), ``weights``
in the data (GRPO's 1/(G*len_i) averaging), ``ref_logprobs`` with
``kl_coef > 0`` (GRPO's KL to the reference policy), ``dual_clip``.
"""
from __future__ import annotations

from typing import List, Optional

import torch
from torch import nn

from .config import Config
from .backprop import ManualMLP
from .losses import (clipped_surrogate, clipped_surrogate_grad, dual_clip_active, kl_k3, kl_k3_grad, mean_weights,
                     value_loss, value_loss_grad, weighted_mean)
from .networks import GaussianPolicy, ValueNet
from .optim import FlatAdam


class NonFiniteError(FloatingPointError):
    """A loss or parameter became NaN/inf."""


def _normalise(adv: torch.Tensor) -> torch.Tensor:
    if adv.numel() < 2:
        return adv
    std, mean = torch.std_mean(adv)
    return (adv - mean) / (std + 1e-8)


def _pack(data: dict, keys: List[str]):
    """Concatenate the batch's fields into one ``[B, F]`` table (so a shuffle is one gather)
    and return it with each field's column slice (2-D fields) or column index (1-D fields)."""
    cols, parts, c = {}, [], 0
    for key in keys:
        x = data[key]
        if x.dim() == 1:
            cols[key], c = c, c + 1
            parts.append(x[:, None])
        else:
            cols[key], c = slice(c, c + x.shape[1]), c + x.shape[1]
            parts.append(x)
    return torch.cat(parts, 1), cols


def update(policy: GaussianPolicy, critic: Optional[ValueNet], optimizer: FlatAdam,
           data: dict, cfg: Config, generator: torch.Generator, norm_adv: bool) -> dict:
    """Optimise on one batch. ``data`` holds flat ``[B, ...]`` tensors (see ``Batch.flat``).

    Per minibatch: the MLPs forward (``backprop.ManualMLP``), the loss terms of
    ``losses.py`` and their derivatives, the MLPs backward into the optimizer's flat
    gradient buffer, per-network clipping, Adam.  No autograd graph is built; the gradient
    equals ``loss.backward()`` on

        loss = weighted_mean(clipped_surrogate) - ent_coef * entropy
               [+ vf_coef * mean(value_loss)]  [+ kl_coef * weighted_mean(kl_k3)]

    (tests/test_backprop.py).  Returns the mean of each statistic over the minibatches that ran.
    """
    keys = ["obs", "actions", "logprobs", "advantages"]
    keys += [k for k in ("weights", "ref_logprobs") if data.get(k) is not None]
    keys += ["returns", "values"] if critic is not None else []
    table, col = _pack(data, keys)
    actor = ManualMLP(policy.mean_net, optimizer.grad_of)
    value_net = None if critic is None else ManualMLP(critic.net, optimizer.grad_of)
    log_std_grad = optimizer.grad_of[id(policy.log_std)]
    has_w, has_ref = "weights" in col, "ref_logprobs" in col
    B = table.shape[0]
    n_mb = min(cfg.num_minibatches, B)
    b = B // n_mb
    vclip = cfg.clip_coef if cfg.clip_vloss else None
    names = ["losses/policy_loss", "losses/entropy"] + (["losses/value_loss"] if critic is not None else []) \
        + (["grpo/kl_ref"] if has_ref else [])
    max_mb = cfg.update_epochs * n_mb
    stat_buf = torch.zeros(max_mb, len(names), device=table.device)
    logratio_buf = torch.zeros(max_mb, b, device=table.device)
    adv_buf = torch.zeros(max_mb, b, device=table.device) if cfg.dual_clip is not None else None
    count, stop = 0, False
    for epoch in range(cfg.update_epochs):
        shuffled = table[torch.randperm(B, generator=generator).to(table.device)]
        for k in range(n_mb):
            rows = shuffled[k * b:(k + 1) * b]
            obs = rows[:, col["obs"]]
            mean = actor.forward(obs)
            logp, ent, dlogp_dmean, dlogp_dls, ls_mask = policy.head_log_prob_grads(mean, rows[:, col["actions"]])
            logratio = logp - rows[:, col["logprobs"]]
            ratio = logratio.exp()
            a = rows[:, col["advantages"]]
            if norm_adv:
                a = _normalise(a)
            w = rows[:, col["weights"]] if has_w else None
            wn = mean_weights(w, b)
            pg = weighted_mean(clipped_surrogate(ratio, a, cfg.clip_coef, cfg.dual_clip), w)
            g_logp = clipped_surrogate_grad(ratio, a, cfg.clip_coef, cfg.dual_clip) * ratio
            loss = pg - cfg.ent_coef * ent
            stats = [pg, ent]
            if critic is not None:
                v = value_net.forward(obs).squeeze(-1)
                ret, old_v = rows[:, col["returns"]], rows[:, col["values"]]
                vl = value_loss(v, ret, old_v, vclip).mean()
                loss = loss + cfg.vf_coef * vl
                stats.append(vl)
            if has_ref:
                ref = rows[:, col["ref_logprobs"]]
                kl = weighted_mean(kl_k3(logp, ref), w)
                stats.append(kl)
                if cfg.kl_coef > 0:
                    loss = loss + cfg.kl_coef * kl
                    g_logp = g_logp + cfg.kl_coef * kl_k3_grad(logp, ref)
            if not torch.isfinite(loss):
                raise NonFiniteError(f"non-finite loss {loss.item()} in epoch {epoch}, minibatch {k}")
            g_logp = g_logp * wn
            torch.mul(g_logp @ dlogp_dls - cfg.ent_coef, ls_mask, out=log_std_grad)
            actor.backward(dlogp_dmean * g_logp[:, None])
            if value_net is not None:
                value_net.backward((value_loss_grad(v, ret, old_v, vclip) * (cfg.vf_coef / b))[:, None])
            optimizer.clip_grad_norm_(cfg.max_grad_norm)  # policy and critic each on their own
            optimizer.step()
            stat_buf[count] = torch.stack(stats)
            logratio_buf[count] = logratio
            if adv_buf is not None:
                adv_buf[count] = a
            count += 1
            if cfg.target_kl is not None and float(((ratio - 1.0) - logratio).mean()) > cfg.target_kl:
                stop = True
                break
        if stop:
            break
    out = dict(zip(names, stat_buf[:count].mean(0).tolist()))
    lr_ = logratio_buf[:count]
    ratio = lr_.exp()
    out["losses/approx_kl"] = float(((ratio - 1.0) - lr_).mean())  # k3 estimate of KL(old || new)
    out["losses/clipfrac"] = float(((ratio - 1.0).abs() > cfg.clip_coef).float().mean())
    out["losses/dual_clip_frac"] = 0.0 if adv_buf is None else float(
        dual_clip_active(ratio, adv_buf[:count], cfg.clip_coef, cfg.dual_clip).float().mean())
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
