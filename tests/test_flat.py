"""The flat buffers of flat.py: the update with them is the update without them, bit for bit."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ppo_control import flat as flat_mod
from ppo_control.config import make_config
from ppo_control.networks import make_critic, make_policy
from ppo_control.update import LossTerms, make_optimizer, update

ROOT = Path(__file__).resolve().parents[1]
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
    monkeypatch.setattr(flat_mod, "flat_adam", flat_mod.flat_adam if flat_on else (lambda *a, **k: None))
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
    plain = _train(case, monkeypatch, False)
    assert getattr(plain[2], "_flat_adam", None) is None  # and the plain one did not
    _assert_same(flat, plain)


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
    pi.log_std.grad = None
    assert flat_mod.flat_adam(opt, groups, init=True) is None and not opt.state  # init needs every gradient
    pi.log_std.grad = torch.ones_like(pi.log_std)
    opt.step()
    assert flat_mod.flat_adam(opt, groups) is not None


def test_the_first_step_is_flat_and_makes_the_state_adam_makes():
    cfg = make_config("classic", num_steps=64, num_minibatches=2, update_epochs=1)
    nets, opts = [], []
    for first in ("flat", "optimizer.step"):
        torch.manual_seed(0)
        pi, vf = make_policy(cfg, 3, 2), make_critic(cfg, 3)
        opt = make_optimizer([pi, vf], cfg)
        groups = [list(pi.parameters()), list(vf.parameters())]
        for p in (p for g in groups for p in g):
            p.grad = torch.full_like(p, 0.25)
        if first == "flat":
            f = flat_mod.flat_adam(opt, groups, init=True)
            assert f is not None and torch.equal(f.G[:4], torch.full((4,), 0.25))  # the gradients were taken in
            f.step()
        else:
            opt.step()
        nets.append((pi, vf, opt))
    _assert_same(*nets)
    # Adam's first step moves every weight by lr (the bias-corrected m / sqrt(v) is 1 for a constant gradient)
    moved = nets[0][0].log_std.detach() - cfg.init_log_std
    assert torch.allclose(moved, torch.full_like(moved, -cfg.lr), rtol=1e-4)
    assert float(nets[0][2].state_dict()["state"][0]["step"]) == 1.0


NO_DYNAMO = r"""
import sys, tempfile
from ppo_control import make_config, train
kw = dict(env_id="InvertedPendulum-v5", eval_episodes=0, progress=False, tensorboard=False, compile="off",
          out_dir=tempfile.mkdtemp(), run_name="r")
s = train(make_config("classic", total_steps=128, num_steps=64, num_minibatches=2, update_epochs=1, **kw))
train(resume=s["run_dir"], changes={"total_steps": 256})  # capture, load_state_dict and the flat path again
print("torch._dynamo" in sys.modules)
"""


def test_an_eager_run_and_its_resume_never_import_torch_dynamo(tmp_path):
    # importing torch._dynamo costs ~1.2 s of CPU, a tenth of a 40,960-step classic run (flat.no_dynamo_import)
    out = subprocess.run([sys.executable, "-c", NO_DYNAMO], capture_output=True, text=True, check=True,
                         cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.split()[-1] == "False", out.stderr[-2000:]


def test_no_dynamo_import_leaves_torch_as_it_was():
    fns = [getattr(torch.optim.Optimizer, n).__wrapped__ for n in flat_mod._DYNAMO_DISABLED]
    before = [getattr(f, "__dynamo_disable", None) for f in fns]
    with flat_mod.no_dynamo_import():
        if "torch._dynamo" not in sys.modules:
            assert all(getattr(f, "__dynamo_disable") is f for f in fns)
    assert [getattr(f, "__dynamo_disable", None) for f in fns] == before


def test_the_clipping_is_clip_grad_norm_per_network_bit_for_bit():
    cfg = make_config("classic")
    torch.manual_seed(0)
    nets = [make_policy(cfg, 17, 6), make_critic(cfg, 17)]
    grads = [[torch.randn_like(p) * s for p in n.parameters()] for n, s in zip(nets, (0.01, 3.0))]  # policy unclipped
    expect = []
    for n, g in zip(nets, grads):
        for p, x in zip(n.parameters(), g):
            p.grad = x.clone()
        torch.nn.utils.clip_grad_norm_(n.parameters(), 0.5, foreach=True)
        expect.append([p.grad.clone() for p in n.parameters()])
    groups = [list(n.parameters()) for n in nets]
    for p, x in zip((p for g in groups for p in g), (x for g in grads for x in g)):
        p.grad = x.clone()
    flat_mod.clip_grad_norms(groups, 0.5)
    assert all(torch.equal(p.grad, e) for g, eg in zip(groups, expect) for p, e in zip(g, eg))
    opt = make_optimizer(nets, cfg)
    f = flat_mod.flat_adam(opt, groups, init=True)  # takes the unclipped gradients in
    for p, x in zip(f.params, (x for g in grads for x in g)):
        p.grad.copy_(x)
    f.clip_grad_norms(0.5)
    assert all(torch.equal(p.grad, e) for g, eg in zip(groups, expect) for p, e in zip(g, eg))
    # by hand: a gradient (3, 4) of norm 5 clipped to norm 1 is (0.6, 0.8) (up to the 1e-6 in the denominator)
    (coef,) = flat_mod.clip_coefs([torch.tensor(5.0)], [1], 1.0)
    assert float(coef) == pytest.approx(1 / (5 + 1e-6), rel=1e-7)
    (coef,) = flat_mod.clip_coefs([torch.tensor(0.3), torch.tensor(0.4)], [2], 1.0)
    assert float(coef) == 1.0  # a norm of 0.5 under max_norm 1 is left alone


def test_backward_gives_loss_backwards_gradients_bit_for_bit():
    """flat.backward calls the autograd engine without torch.autograd.backward's device-thread context: the same
    gradients, accumulated onto existing ones as loss.backward() accumulates."""
    torch.manual_seed(0)
    cfg = make_config("classic")
    pi, vf = make_policy(cfg, 17, 6), make_critic(cfg, 17)
    obs, act = torch.randn(64, 17), torch.randn(64, 6)
    grads = []
    for fn in (lambda l: l.backward(), flat_mod.backward):
        for p in (*pi.parameters(), *vf.parameters()):
            p.grad = None
        for _ in range(2):  # the second call accumulates
            logp, _ = pi.log_prob_entropy(obs, act)
            fn(-(logp.exp().clamp(0.8, 1.2) * 1.5).mean() + vf(obs).square().mean())
        grads.append([p.grad.clone() for p in (*pi.parameters(), *vf.parameters())])
    assert flat_mod._ENGINE is not None  # this torch has the handle: the engine path ran above
    assert all(torch.equal(a, b) for a, b in zip(*grads))
