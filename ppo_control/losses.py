"""Loss terms as pure per-sample functions, ``[B] -> [B]`` (reduce them with ``weighted_mean``).

``update.minibatch_loss`` combines them into the loss that autograd differentiates."""
from __future__ import annotations

import math
from typing import Optional

import torch


def clipped_surrogate(ratio: torch.Tensor, adv: torch.Tensor, clip: float,
                      dual_clip: Optional[float] = None) -> torch.Tensor:
    """PPO policy loss per sample, ``[B] -> [B]`` (to be minimised).

    objective = min(r*A, clip(r, 1-eps, 1+eps)*A); with ``dual_clip=c`` (c > 1,
    Ye et al. 2020) the objective is additionally bounded below by c*A where
    A < 0, so a huge ratio on a bad action cannot produce an unbounded step.

    Computed as ``clamp(r, lo, hi) * A`` with the bounds each sample's sign of A sets: where A > 0 the
    minimum is r*A up to r = 1+eps and (1+eps)*A above, i.e. r clamped at 1+eps from above only; where
    A < 0 it is r clamped at 1-eps from below, and the dual clip's max(., c*A) clamps r at c from above.
    Multiplying by A is monotone, so this is the min/max form value for value and gradient for gradient
    (tests/test_losses.py), with two autograd nodes instead of five: the minibatch's backward is
    per-node overhead more than arithmetic.
    """
    neg = adv < 0
    lo = torch.where(neg, 1.0 - clip, -math.inf)
    hi = torch.where(neg, math.inf if dual_clip is None else dual_clip, 1.0 + clip)
    return ratio.clamp(lo.to(ratio.dtype), hi.to(ratio.dtype)) * -adv


def dual_clip_active(ratio: torch.Tensor, adv: torch.Tensor, clip: float, dual_clip: float) -> torch.Tensor:
    """Bool ``[B]``: samples where the dual-clip bound replaced the clipped objective."""
    surr = torch.min(ratio * adv, ratio.clamp(1.0 - clip, 1.0 + clip) * adv)
    return (adv < 0) & (dual_clip * adv > surr)


def value_loss(values: torch.Tensor, returns: torch.Tensor, old_values: Optional[torch.Tensor] = None,
               clip: Optional[float] = None) -> torch.Tensor:
    """0.5 * (V - R)^2 per sample ``[B]``; with ``clip`` the pessimistic max of the
    unclipped and the clipped (V_old + clamp(V - V_old, -clip, clip)) error."""
    loss = (values - returns) ** 2
    if clip is not None:
        v_clipped = old_values + (values - old_values).clamp(-clip, clip)
        loss = torch.max(loss, (v_clipped - returns) ** 2)
    return 0.5 * loss


def kl_k3(logp: torch.Tensor, logp_ref: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || pi_ref) per sample ``[B]``, for actions drawn from pi's data.

    exp(d) - d - 1 with d = logp_ref - logp: unbiased, always >= 0 (Schulman 2020).
    """
    d = logp_ref - logp
    return torch.exp(d) - d - 1.0


def weighted_mean(x: torch.Tensor, weights: Optional[torch.Tensor]) -> torch.Tensor:
    """Plain mean, or sum(w*x)/sum(w) for per-sample weights ``[B]``.

    ``update`` calls this on each minibatch, so GRPO's 1/(G*len_i) weights (which sum to 1 over the
    whole batch) are renormalised inside every minibatch: they set how steps weigh against each other
    within a minibatch, and every minibatch step counts the same whatever its weights' total."""
    if weights is None:
        return x.mean()
    return (x * weights).sum() / weights.sum()
