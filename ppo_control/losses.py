"""Loss terms as pure per-sample functions (reduce them with ``weighted_mean``), each with its
derivative (``*_grad``), which the update loop uses instead of autograd (see ``backprop.py``).
The derivatives take autograd's choices at the kinks (clamp passes the gradient on its
boundary; min/max split it on ties); tests/test_losses.py checks them against autograd."""
from __future__ import annotations

from typing import Optional

import torch


def clipped_surrogate(ratio: torch.Tensor, adv: torch.Tensor, clip: float,
                      dual_clip: Optional[float] = None) -> torch.Tensor:
    """PPO policy loss per sample, ``[B] -> [B]`` (to be minimised).

    objective = min(r*A, clip(r, 1-eps, 1+eps)*A); with ``dual_clip=c`` (c > 1,
    Ye et al. 2020) the objective is additionally bounded below by c*A where
    A < 0, so a huge ratio on a bad action cannot produce an unbounded step.
    """
    surr = torch.min(ratio * adv, ratio.clamp(1.0 - clip, 1.0 + clip) * adv)
    if dual_clip is not None:
        surr = torch.where(adv < 0, torch.max(surr, dual_clip * adv), surr)
    return -surr


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
    """Plain mean, or sum(w*x)/sum(w) for per-sample weights ``[B]``."""
    if weights is None:
        return x.mean()
    return (x * weights).sum() / weights.sum()


def clipped_surrogate_grad(ratio: torch.Tensor, adv: torch.Tensor, clip: float,
                           dual_clip: Optional[float] = None) -> torch.Tensor:
    """d clipped_surrogate / d ratio per sample ``[B]``.

    -A where the unclipped term r*A is the minimum (inside the clip range both terms are
    r*A), 0 where the clipped constant won, and 0 where the dual-clip bound c*A won.
    """
    unclipped = ratio * adv
    clipped = ratio.clamp(1.0 - clip, 1.0 + clip) * adv
    in_range = (ratio >= 1.0 - clip) & (ratio <= 1.0 + clip)
    # torch.min splits the gradient on a tie; inside the range both halves carry A
    g = torch.where(unclipped < clipped, adv, torch.where(unclipped == clipped, adv * (0.5 + 0.5 * in_range), 0.0))
    if dual_clip is not None:
        surr = torch.min(unclipped, clipped)
        bound = dual_clip * adv
        g = torch.where(adv < 0, torch.where(bound > surr, 0.0, torch.where(bound == surr, 0.5 * g, g)), g)
    return -g


def value_loss_grad(values: torch.Tensor, returns: torch.Tensor, old_values: Optional[torch.Tensor] = None,
                    clip: Optional[float] = None) -> torch.Tensor:
    """d value_loss / d values per sample ``[B]``."""
    err = values - returns
    if clip is None:
        return err
    delta = values - old_values
    err_c = old_values + delta.clamp(-clip, clip) - returns
    g_c = err_c * ((delta >= -clip) & (delta <= clip))
    sq, sq_c = err * err, err_c * err_c
    return torch.where(sq > sq_c, err, torch.where(sq < sq_c, g_c, 0.5 * (err + g_c)))


def kl_k3_grad(logp: torch.Tensor, logp_ref: torch.Tensor) -> torch.Tensor:
    """d kl_k3 / d logp per sample ``[B]``: 1 - exp(logp_ref - logp)."""
    return 1.0 - torch.exp(logp_ref - logp)


def mean_weights(weights: Optional[torch.Tensor], n: int):
    """d weighted_mean / d x_i: ``w_i / sum(w)``, or the Python float ``1/n`` without weights."""
    if weights is None:
        return 1.0 / n
    return weights / weights.sum()
