import numpy as np
import pytest
import torch
from torch.distributions import Normal, kl_divergence

from ppo_control.losses import clipped_surrogate, dual_clip_active, kl_k3, value_loss, weighted_mean

RATIO = [1.5, 0.5, 1.5, 5.0, 0.5, 5.0, 1.1]
ADV = [1.0, 1.0, -1.0, -1.0, -1.0, 2.0, -1.0]


def _loss_and_grad(dual):
    r = torch.tensor(RATIO, requires_grad=True)
    loss = clipped_surrogate(r, torch.tensor(ADV), clip=0.2, dual_clip=dual)
    loss.sum().backward()
    return loss.detach().tolist(), r.grad.tolist()


def test_clipped_surrogate_values_and_gradients():
    loss, grad = _loss_and_grad(None)
    # min(rA, clip(r)A): A>0 r=1.5 -> 1.2 (clipped, no grad); A>0 r=.5 -> .5 ; A<0 r=1.5 -> -1.5 ;
    # A<0 r=5 -> -5 ; A<0 r=.5 -> -.8 (clipped) ; A=2 r=5 -> 2.4 (clipped) ; inside the band -> -1.1
    assert loss == pytest.approx([-1.2, -0.5, 1.5, 5.0, 0.8, -2.4, 1.1])
    assert grad == pytest.approx([0.0, -1.0, 1.0, 1.0, 0.0, 0.0, 1.0])


def test_dual_clip_bounds_only_negative_advantages():
    loss, grad = _loss_and_grad(3.0)
    # only A<0, r=5 changes: objective max(-5, 3*-1) = -3, constant -> zero gradient
    assert loss == pytest.approx([-1.2, -0.5, 1.5, 3.0, 0.8, -2.4, 1.1])
    assert grad == pytest.approx([0.0, -1.0, 1.0, 0.0, 0.0, 0.0, 1.0])
    act = dual_clip_active(torch.tensor(RATIO), torch.tensor(ADV), 0.2, 3.0)
    assert act.tolist() == [False, False, False, True, False, False, False]


def _min_max_form(ratio, adv, clip, dual_clip=None):
    """The clipped surrogate as papers write it: -min(r A, clip(r) A), and max(., c A) where A < 0."""
    surr = torch.min(ratio * adv, ratio.clamp(1.0 - clip, 1.0 + clip) * adv)
    if dual_clip is not None:
        surr = torch.where(adv < 0, torch.max(surr, dual_clip * adv), surr)
    return -surr


@pytest.mark.parametrize("dual", [None, 3.0])
def test_clipped_surrogate_is_the_min_max_form_bit_for_bit(dual):
    g = torch.Generator().manual_seed(0)
    for k in range(200):
        r = torch.exp(torch.randn(64, generator=g) * 0.4 * (1 + k % 4))
        r[:4] = torch.tensor([0.8, 1.2, 0.5, 1.0])  # on the clip bounds (float32 ties) and inside
        a = torch.randn(64, generator=g) * 10.0 ** (k % 3 - 1)
        a[4] = 0.0
        r1, r2 = r.clone().requires_grad_(), r.clone().requires_grad_()
        l1, l2 = clipped_surrogate(r1, a, 0.2, dual), _min_max_form(r2, a, 0.2, dual)
        l1.mean().backward()
        l2.mean().backward()
        assert torch.equal(l1, l2) and torch.equal(r1.grad, r2.grad)


def test_value_loss_plain_and_clipped():
    v, ret, old = torch.tensor([1.0, 3.0]), torch.tensor([0.0, 0.0]), torch.tensor([0.0, 2.9])
    assert value_loss(v, ret).tolist() == pytest.approx([0.5, 4.5])
    # clipped: first V moves 1.0 from old 0 -> clipped to 0.2: max(1, 0.04) ; second within band
    assert value_loss(v, ret, old, clip=0.2).tolist() == pytest.approx([0.5, 4.5])
    v2 = torch.tensor([0.1])
    # unclipped error (0.1-0)^2 = .01 ; clipped: old 1.0 + clamp(-0.9) = 0.8 -> .64 ; pessimistic max
    assert value_loss(v2, torch.tensor([0.0]), torch.tensor([1.0]), clip=0.2).item() == pytest.approx(0.32)


def test_kl_k3_by_hand_and_close_to_analytic():
    # d = logp_ref - logp: k3 = exp(d) - d - 1
    logp, ref = torch.tensor([0.0, 0.0, 0.0, -2.0]), torch.tensor([0.0, 1.0, -1.0, -1.5])
    assert kl_k3(logp, ref).tolist() == pytest.approx([0.0, np.e - 2.0, np.exp(-1.0), np.exp(0.5) - 1.5])
    torch.manual_seed(0)
    p, q = Normal(0.0, 1.0), Normal(0.3, 1.2)
    a = p.sample((400_000,))
    k3 = kl_k3(p.log_prob(a), q.log_prob(a))
    assert k3.mean().item() == pytest.approx(kl_divergence(p, q).item(), rel=0.03)
    same = p.log_prob(a[:100])
    assert kl_k3(same, same).abs().max().item() == 0.0


def test_weighted_mean():
    x = torch.tensor([1.0, 2.0, 3.0])
    assert weighted_mean(x, None).item() == pytest.approx(2.0)
    assert weighted_mean(x, torch.tensor([1.0, 0.0, 3.0])).item() == pytest.approx(2.5)
