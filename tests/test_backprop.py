"""The hand-written backward (backprop.py, losses.*_grad, update.py) against autograd.

The reference below is the plain autograd formulation of the update: module forward, the
loss from losses.py, loss.backward(), torch's clip_grad_norm_ per network, torch.optim.Adam.
"""
import copy

import pytest
import torch

from ppo_control.config import make_config
from ppo_control.losses import (clipped_surrogate, clipped_surrogate_grad, kl_k3, kl_k3_grad, value_loss,
                                value_loss_grad, weighted_mean)
from ppo_control.networks import GaussianPolicy, ValueNet
from ppo_control.optim import FlatAdam
from ppo_control.update import update


def _reference_update(policy, critic, data, cfg, generator, norm_adv):
    params = list(policy.parameters()) + ([] if critic is None else list(critic.parameters()))
    opt = torch.optim.Adam(params, lr=cfg.lr, eps=cfg.adam_eps)
    B = data["obs"].shape[0]
    n_mb = min(cfg.num_minibatches, B)
    b = B // n_mb
    for _ in range(cfg.update_epochs):
        perm = torch.randperm(B, generator=generator)
        for k in range(n_mb):
            i = perm[k * b:(k + 1) * b]
            logp, ent = policy.log_prob_entropy(data["obs"][i], data["actions"][i])
            ratio = (logp - data["logprobs"][i]).exp()
            a = data["advantages"][i]
            if norm_adv:
                a = (a - a.mean()) / (a.std() + 1e-8)
            w = data["weights"][i] if "weights" in data else None
            loss = weighted_mean(clipped_surrogate(ratio, a, cfg.clip_coef, cfg.dual_clip), w) \
                - cfg.ent_coef * weighted_mean(ent, w)
            if critic is not None:
                loss = loss + cfg.vf_coef * value_loss(critic(data["obs"][i]), data["returns"][i], data["values"][i],
                                                       cfg.clip_coef if cfg.clip_vloss else None).mean()
            if "ref_logprobs" in data and cfg.kl_coef > 0:
                loss = loss + cfg.kl_coef * weighted_mean(kl_k3(logp, data["ref_logprobs"][i]), w)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
            if critic is not None:
                torch.nn.utils.clip_grad_norm_(critic.parameters(), cfg.max_grad_norm)
            opt.step()


def _batch(policy, B, obs_dim, act_dim, grpo, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(B, obs_dim, generator=g)
    with torch.no_grad():  # actions drawn from the policy (wider than its std), as in a rollout
        act = policy(obs) + 1.5 * policy.std() * torch.randn(B, act_dim, generator=g)
        lp = policy.log_prob_entropy(obs, act)[0] + 0.3 * torch.randn(B, generator=g)  # ratios both sides of the clip
    data = dict(obs=obs, actions=act, logprobs=lp, advantages=torch.randn(B, generator=g) * 2)
    if grpo:
        data["weights"] = torch.rand(B, generator=g) + 0.1
        data["ref_logprobs"] = lp + 0.2 * torch.randn(B, generator=g)
    else:
        data["returns"] = torch.randn(B, generator=g) * 3
        data["values"] = data["returns"] + torch.randn(B, generator=g)
    return data


CASES = {
    "ppo": dict(),
    "ppo_ent_clipv_dual": dict(ent_coef=0.01, clip_vloss=True, dual_clip=3.0),
    "ppo_relu": dict(activation="relu", hidden_sizes=(32, 16, 8)),
    "ppo_elu": dict(activation="elu", hidden_sizes=(16,)),
    "ppo_silu_no_normadv": dict(activation="silu", norm_adv=False),
    "ppo_log_std_at_clamp": dict(init_log_std=-5.0, ent_coef=0.05),  # log_std starts on its lower bound
    "grpo_kl": dict(algo="grpo", kl_coef=0.1, ent_coef=0.01, group_size=4, num_envs=4),
}


@pytest.mark.parametrize("case", list(CASES))
def test_update_equals_autograd_reference(case):
    kw = dict(env_id="HalfCheetah-v5", lr=3e-3, update_epochs=3, num_minibatches=4, max_grad_norm=0.5)
    kw.update(CASES[case])
    cfg = make_config("classic", **kw)
    grpo = cfg.algo == "grpo"
    torch.manual_seed(1)
    pi = GaussianPolicy(5, 3, cfg.hidden_sizes, cfg.activation, cfg.init_log_std, cfg.log_std_min, cfg.log_std_max)
    vf = None if grpo else ValueNet(5, cfg.hidden_sizes, cfg.activation)
    data = _batch(pi, 128, 5, 3, grpo)
    pi_ref, vf_ref = copy.deepcopy(pi), copy.deepcopy(vf)
    start = [p.detach().clone() for p in pi.mean_net.parameters()]
    opt = FlatAdam([pi] + ([] if grpo else [vf]), lr=cfg.lr, eps=cfg.adam_eps)
    norm_adv = cfg.norm_adv and not grpo
    stats = update(pi, vf, opt, data, cfg, torch.Generator().manual_seed(7), norm_adv)
    _reference_update(pi_ref, vf_ref, data, cfg, torch.Generator().manual_seed(7), norm_adv)
    mods = [(pi, pi_ref)] + ([] if grpo else [(vf, vf_ref)])
    for m, r in mods:
        for (name, p), q in zip(m.named_parameters(), r.parameters()):
            assert torch.allclose(p, q, atol=2e-5, rtol=1e-4), (case, name, (p - q).abs().max())
    moved = max(float((p.detach() - s).abs().max()) for p, s in zip(pi.mean_net.parameters(), start))
    assert moved > 1e-3  # 12 Adam steps at lr 3e-3 really changed the policy
    assert stats["losses/epochs"] == 3 and 0.0 <= stats["losses/clipfrac"] <= 1.0


def test_update_moves_parameters_and_log_std_gradient_is_masked_at_the_clamp():
    cfg = make_config("classic", env_id="HalfCheetah-v5", lr=1e-2, update_epochs=1, num_minibatches=1,
                      init_log_std=-5.0, ent_coef=0.0)
    torch.manual_seed(0)
    pi, vf = GaussianPolicy(4, 2, (8,), init_log_std=-6.0, log_std_min=-5.0), ValueNet(4, (8,))
    before = [p.detach().clone() for p in pi.mean_net.parameters()]
    opt = FlatAdam([pi, vf], lr=cfg.lr)
    update(pi, vf, opt, _batch(pi, 16, 4, 2, False), cfg, torch.Generator().manual_seed(0), True)
    assert torch.equal(pi.log_std, torch.full((2,), -6.0))  # below the clamp: no gradient reaches it
    assert any(not torch.equal(a, p) for a, p in zip(before, pi.mean_net.parameters()))


def _grad(fn, x, *args):
    x = x.clone().requires_grad_()
    fn(x, *args).sum().backward()
    return x.grad


def test_loss_derivatives_equal_autograd_including_kinks():
    # ratios inside, outside and exactly on the clip range; advantages of both signs and zero
    r = torch.tensor([0.5, 0.8, 0.9, 1.0, 1.2, 1.5, 3.0, 0.5, 0.8, 1.1, 1.2, 2.0, 5.0, 1.0])
    a = torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 0.0])
    for dual in (None, 3.0, 2.0):
        expect = _grad(lambda x: clipped_surrogate(x, a, 0.2, dual), r)
        assert torch.allclose(clipped_surrogate_grad(r, a, 0.2, dual), expect), (dual, expect)
    v, ret = torch.tensor([0.0, 1.0, 2.0, 3.0, 0.5, -1.0]), torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0, 2.0])
    old = torch.tensor([0.0, 0.5, 1.0, 3.3, 0.3, -1.2])
    for clip in (None, 0.2):
        expect = _grad(lambda x: value_loss(x, ret, old, clip), v)
        assert torch.allclose(value_loss_grad(v, ret, old, clip), expect), (clip, expect)
    lp, ref = torch.randn(10), torch.randn(10)
    assert torch.allclose(kl_k3_grad(lp, ref), _grad(lambda x: kl_k3(x, ref), lp))


def test_head_derivatives_equal_autograd():
    torch.manual_seed(0)
    pi = GaussianPolicy(3, 4, (8,), init_log_std=0.3)
    pi.mean_net = torch.nn.Identity()  # so log_prob_entropy's input is the mean itself
    mean = torch.randn(6, 4, requires_grad=True)
    act = torch.randn(6, 4)
    logp, ent = pi.log_prob_entropy(mean, act)
    c = torch.randn(6)
    (logp * c).sum().backward()
    lp2, ent2, dmean, dls, mask = pi.head_log_prob_grads(mean.detach(), act)
    assert torch.allclose(lp2, logp.detach()) and torch.isclose(ent2, ent[0].detach())
    assert torch.allclose(dmean * c[:, None], mean.grad, atol=1e-6)
    assert torch.allclose((c @ dls) * mask, pi.log_std.grad, atol=1e-6)
