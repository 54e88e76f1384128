"""The flat buffers of flat.py: the update with them is the update without them, bit for bit."""
import pytest
import torch

from ppo_control import flat as flat_mod
from ppo_control import update as update_mod
from ppo_control.config import make_config
from ppo_control.networks import make_critic, make_policy
from ppo_control.update import LossTerms, make_optimizer, update

CASES = {  # (obs_dim, act_dim, config): HalfCheetah-sized classic nets; tiny nets whose every bias has a tail
    "classic": (17, 6, dict(num_steps=512, update_epochs=2, num_minibatches=8)),
    "tiny": (4, 1, dict(hidden_sizes=(8, 8), num_steps=64, num_minibatches=2, update_epochs=3)),
    "tiny_unclipped": (4, 1, dict(hidden_sizes=(8, 8), num_steps=64, num_minibatches=2, max_grad_norm=100.0)),
    "ent_layer_norm": (5, 3, dict(ent_coef=0.01, layer_norm="both", critic_hidden_sizes=(24, 8),
                                  update_epochs=2, num_minibatches=4)),
}


def _batch(cfg, obs_dim, act_dim, seed):
    g = torch.Generator().manual_seed(seed)
    B, ret = cfg.batch_size, torch.randn(cfg.batch_size, generator=g)
    return dict(obs=torch.randn(B, obs_dim, generator=g), actions=torch.randn(B, act_dim, generator=g),
                logprobs=torch.randn(B, generator=g) - 3.0, advantages=torch.randn(B, generator=g), returns=ret,
                values=ret + 0.1 * torch.randn(B, generator=g))


def _train(case, monkeypatch, flat_on, between=None):
    obs_dim, act_dim, over = CASES[case]
    monkeypatch.setattr(update_mod, "flat_adam", flat_mod.flat_adam if flat_on else (lambda *a: None))
    cfg = make_config("classic", **over)
    torch.manual_seed(0)
    pi, vf = make_policy(cfg, obs_dim, act_dim), make_critic(cfg, obs_dim)
    opt = make_optimizer([pi, vf], cfg)
    for it in range(3):
        update(pi, vf, opt, _batch(cfg, obs_dim, act_dim, it), cfg, torch.Generator().manual_seed(it), True,
               terms=LossTerms(value=True))
        if between is not None:
            between(opt)
        for g in opt.param_groups:
            g["lr"] *= 0.7  # as the lr schedule does between iterations
    return pi, vf, opt


def _assert_same(a, b):
    for x, y in zip(a[:2], b[:2]):
        for (name, p), q in zip(x.state_dict().items(), y.state_dict().values()):
            assert torch.equal(p, q), name
    sa, sb = a[2].state_dict(), b[2].state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    for i, st in sa["state"].items():
        assert st.keys() == sb["state"][i].keys()
        for k, v in st.items():
            assert torch.equal(v, sb["state"][i][k]), (i, k)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_flat_update_is_the_plain_update_bit_for_bit(case, monkeypatch):
    flat = _train(case, monkeypatch, True)
    assert getattr(flat[2], "_flat_adam", None) is not None  # the flat path really ran
    _assert_same(flat, _train(case, monkeypatch, False))


def test_the_views_are_rebuilt_after_a_state_load_or_zero_grad(monkeypatch):
    def reload(opt):  # what a resume does, and what a caller outside the update may do
        opt.load_state_dict(opt.state_dict())
        opt.zero_grad()
    _assert_same(_train("classic", monkeypatch, True, reload), _train("classic", monkeypatch, False))


def test_no_flat_path_where_it_would_change_the_update():
    cfg = make_config("classic")
    pi = make_policy(cfg, 4, 2)
    groups = [list(pi.parameters())]
    opt = make_optimizer([pi], cfg)
    assert flat_mod.flat_adam(opt, groups) is None  # no Adam state yet
    assert flat_mod.flat_adam(torch.optim.SGD(pi.parameters(), lr=0.1), groups) is None
    amsgrad = torch.optim.Adam(pi.parameters(), amsgrad=True)
    for p in pi.parameters():
        p.grad = torch.ones_like(p)
    amsgrad.step()
    assert flat_mod.flat_adam(amsgrad, groups) is None
    opt.step()
    assert flat_mod.flat_adam(opt, groups) is not None
