"""The autograd update: equal to the hand-written update it replaced, open to new loss terms and
to any network.

``data/update_golden.pt`` holds whole updates (3 epochs x 4 minibatches) run by the update loop
ppo_control had until commit b2811f8 (hand-written MLP backward + flat Adam); see
``data/make_update_golden.py``.
"""
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from ppo_control import algorithms
from ppo_control import flat as flat_mod
from ppo_control import update as update_mod
from ppo_control.config import make_config
from ppo_control.losses import weighted_mean
from ppo_control.networks import GaussianPolicy, ValueNet, mlp
from ppo_control.update import LossTerms, NonFiniteError, make_optimizer, minibatch_loss, update

PPO_TERMS, GRPO_TERMS = algorithms.PPO.loss_terms, algorithms.GRPO.loss_terms

GOLDEN = torch.load(Path(__file__).parent / "data" / "update_golden.pt", weights_only=True)


def _old_nets(cfg, obs_dim=5, act_dim=3):
    # the layout of the networks the golden file was written with: mean_net / net are Sequentials
    pi = GaussianPolicy(mlp(obs_dim, cfg.hidden_sizes, act_dim, cfg.activation, 0.01), act_dim, cfg.init_log_std,
                        cfg.log_std_min, cfg.log_std_max)
    vf = None if cfg.algo == "grpo" else ValueNet(mlp(obs_dim, cfg.hidden_sizes, 1, cfg.activation))
    return pi, vf


def golden_start(case):
    """(golden record, config, policy, critic or None) at the state the golden update started from."""
    g = GOLDEN[case]
    cfg = make_config("classic", **g["config"])
    pi, vf = _old_nets(cfg)
    pi.load_state_dict(g["before"]["policy"])
    if vf is not None:
        vf.load_state_dict(g["before"]["critic"])
    return g, cfg, pi, vf


@pytest.mark.parametrize("case", sorted(GOLDEN))
def test_autograd_update_equals_the_hand_written_update_it_replaced(case):
    g, cfg, pi, vf = golden_start(case)
    opt = make_optimizer([pi] + ([vf] if vf is not None else []), cfg)
    stats = update(pi, vf, opt, g["data"], cfg, torch.Generator().manual_seed(7), cfg.norm_adv and vf is not None,
                   terms=algorithms.get(cfg.algo).loss_terms)
    moved = 0.0
    for net, key in ((pi, "policy"), (vf, "critic")):
        if net is None:
            continue
        for name, p in net.state_dict().items():
            expect = g[key][name]
            assert torch.allclose(p, expect, atol=2e-5, rtol=1e-4), (case, name, (p - expect).abs().max())
            moved = max(moved, float((expect - g["before"][key][name]).abs().max()))
    assert moved > 1e-3  # the 12 Adam steps really changed the networks: equality is not trivial
    for k in ("losses/policy_loss", "losses/approx_kl", "losses/clipfrac", "losses/value_loss", "grpo/kl_ref"):
        if k in g["stats"]:
            assert stats[k] == pytest.approx(g["stats"][k], rel=1e-3, abs=1e-6), k


def _data(B=64, obs_dim=4, act_dim=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    ret = torch.randn(B, generator=g)
    return dict(obs=torch.randn(B, obs_dim, generator=g), actions=torch.randn(B, act_dim, generator=g),
                logprobs=torch.full((B,), -2.0), advantages=torch.randn(B, generator=g), returns=ret,
                values=ret + 0.1)


def test_a_toy_loss_term_is_a_few_lines_and_is_optimised(monkeypatch):
    # a new term: push every action mean towards 0.7 (added to the loss in one place)
    def with_toy_term(policy, critic, mb, cfg, norm_adv, terms):
        loss, stats, logratio, adv = base(policy, critic, mb, cfg, norm_adv, terms)
        toy = ((policy(mb["obs"]) - 0.7) ** 2).mean()
        stats["losses/toy"] = toy.detach()
        return loss + 10.0 * toy, stats, logratio, adv
    base = minibatch_loss
    monkeypatch.setattr(update_mod, "minibatch_loss", with_toy_term)
    cfg = make_config("classic", lr=1e-2, update_epochs=20, num_minibatches=2, max_grad_norm=10.0)
    torch.manual_seed(0)
    pi, vf = GaussianPolicy(mlp(4, (16,), 2, out_gain=0.01), 2), ValueNet(mlp(4, (16,), 1))
    data = _data()
    stats = update(pi, vf, make_optimizer([pi, vf], cfg), data, cfg, torch.Generator().manual_seed(0), True, terms=PPO_TERMS)
    assert "losses/toy" in stats and stats["losses/toy"] < 0.49 * 0.5  # started at 0.49 (mean ~0)
    assert float(pi(data["obs"]).detach().mean()) == pytest.approx(0.7, abs=0.1)


def test_layer_norm_critic_of_another_width_trains():
    cfg = make_config("classic", env_id="Hopper-v5", hidden_sizes=(16, 16), critic_hidden_sizes=(48, 32, 24),
                      layer_norm="critic", lr=3e-3, update_epochs=30, num_minibatches=2, ent_coef=0.0)
    from ppo_control.networks import make_critic, make_policy
    torch.manual_seed(0)
    pi, vf = make_policy(cfg, 4, 2), make_critic(cfg, 4)
    assert [m.out_features for m in vf.net if isinstance(m, nn.Linear)] == [48, 32, 24, 1]
    assert sum(isinstance(m, nn.LayerNorm) for m in vf.net) == 3 and not any(
        isinstance(m, nn.LayerNorm) for m in pi.mean_net)
    data = _data()
    data["returns"] = data["obs"][:, 0] * 2.0 - data["obs"][:, 1]  # a function of the state to fit
    with torch.no_grad():
        before = float(((vf(data["obs"]) - data["returns"]) ** 2).mean())
    update(pi, vf, make_optimizer([pi, vf], cfg), data, cfg, torch.Generator().manual_seed(0), True, terms=PPO_TERMS)
    with torch.no_grad():
        after = float(((vf(data["obs"]) - data["returns"]) ** 2).mean())
    assert after < 0.2 * before, (before, after)
    ln = [m for m in vf.net if isinstance(m, nn.LayerNorm)][0]
    assert not torch.equal(ln.weight, torch.ones_like(ln.weight))  # LayerNorm's own parameters are trained


@pytest.mark.parametrize("flat", [True, False])
def test_gradients_are_clipped_per_network(flat, monkeypatch):
    cfg = make_config("classic", lr=1e-3, update_epochs=1, num_minibatches=1, max_grad_norm=0.5)
    torch.manual_seed(0)
    pi, vf = GaussianPolicy(mlp(4, (8,), 2, out_gain=0.01), 2), ValueNet(mlp(4, (8,), 1))
    data = _data()
    data["returns"] = data["returns"] * 1e4  # a huge value-loss gradient must not leak into the policy's clip
    opt = make_optimizer([pi, vf], cfg)
    seen = {}

    def seeing(real_step):
        def step(*args):
            seen["pi"] = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in pi.parameters()]))
            seen["vf"] = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in vf.parameters()]))
            real_step(*args)
        return step
    # the run's first step is the flat one (flat.py) unless the flat path is off
    if flat:
        monkeypatch.setattr(flat_mod.FlatAdam, "step", seeing(flat_mod.FlatAdam.step))
    else:
        monkeypatch.setattr(flat_mod, "flat_adam", lambda *a, **k: None)
        opt.step = seeing(opt.step)
    update(pi, vf, opt, data, cfg, torch.Generator().manual_seed(0), True, terms=PPO_TERMS)
    assert set(seen) == {"pi", "vf"}
    assert float(seen["vf"]) == pytest.approx(0.5, rel=1e-4)  # clipped to max_grad_norm
    assert 0.0 < float(seen["pi"]) < 0.5  # the policy's own, small norm, not scaled down by the critic's


def _ratio_batch(ratios, advantages):
    """A policy (1-d action, std 1) and a batch whose actions are its means, with old log-probs such that
    the ratios pi/pi_old are ``ratios``: d logp / d log_std = z^2 - 1 = -1 for every sample."""
    torch.manual_seed(0)
    pi = GaussianPolicy(mlp(2, (4,), 1, out_gain=0.01), 1)
    obs = torch.randn(len(ratios), 2)
    with torch.no_grad():
        actions = pi(obs)
        logp = pi.log_prob_entropy(obs, actions)[0]
    r = torch.tensor(ratios)
    return pi, dict(obs=obs, actions=actions, logprobs=logp - r.log(), advantages=torch.tensor(advantages))


def test_dual_clip_in_the_loss_by_hand():
    # r=5, A=-1: max(min(-5, -1.2), 3*-1) = -3, bounded by the dual clip (no gradient); r=5, A=1: clipped
    # at 1.2 (no gradient); r=1, A=-1 and A=2: inside the band, objective r*A
    pi, mb = _ratio_batch([5.0, 5.0, 1.0, 1.0], [-1.0, 1.0, -1.0, 2.0])
    cfg = make_config("classic", dual_clip=3.0, ent_coef=0.0)
    loss, stats, logratio, _ = minibatch_loss(pi, None, mb, cfg, False, LossTerms())
    assert float(loss) == pytest.approx(-(-3.0 + 1.2 - 1.0 + 2.0) / 4)  # -mean(objective) = 0.2
    assert torch.allclose(logratio.exp(), torch.tensor([5.0, 5.0, 1.0, 1.0]))
    loss.backward()
    # d loss / d log_std = -1/4 * sum over unclipped samples of r*A * (z^2 - 1) = -1/4 * (-1 + 2) * -1
    assert float(pi.log_std.grad) == pytest.approx(0.25, rel=1e-5)
    plain, _, _, _ = minibatch_loss(pi, None, mb, cfg.replace(dual_clip=None), False, LossTerms())
    assert float(plain) == pytest.approx(-(-5.0 + 1.2 - 1.0 + 2.0) / 4)  # without it r=5, A=-1 gives -5


def test_dual_clip_in_the_update_statistics_by_hand():
    pi, mb = _ratio_batch([5.0, 5.0, 1.0, 1.0], [-1.0, 1.0, -1.0, 2.0])
    cfg = make_config("classic", dual_clip=3.0, ent_coef=0.0, update_epochs=1, num_minibatches=1)
    st = update(pi, None, make_optimizer([pi], cfg), mb, cfg, torch.Generator().manual_seed(0), False,
                terms=LossTerms())
    assert st["losses/dual_clip_frac"] == pytest.approx(0.25)   # only r=5, A<0
    assert st["losses/clipfrac"] == pytest.approx(0.5)          # |r - 1| > 0.2: both r=5
    assert st["losses/approx_kl"] == pytest.approx((4.0 - np.log(5.0)) / 2, rel=1e-5)  # mean((r-1) - log r)
    assert st["losses/policy_loss"] == pytest.approx(0.2, rel=1e-4)  # measured before the step


def test_log_std_below_its_clamp_gets_no_gradient():
    cfg = make_config("classic", lr=1e-2, update_epochs=1, num_minibatches=1, ent_coef=0.1)
    pi = GaussianPolicy(mlp(4, (8,), 2, out_gain=0.01), 2, init_log_std=-6.0, log_std_min=-5.0)
    update(pi, None, make_optimizer([pi], cfg), _data(), cfg.replace(), torch.Generator().manual_seed(0), True,
           terms=LossTerms())
    assert torch.equal(pi.log_std.detach(), torch.full((2,), -6.0))


def test_non_finite_loss_raises():
    cfg = make_config("classic", update_epochs=1, num_minibatches=1)
    pi, vf = GaussianPolicy(mlp(4, (8,), 2), 2), ValueNet(mlp(4, (8,), 1))
    data = _data()
    data["returns"][3] = float("nan")
    with pytest.raises(NonFiniteError, match="non-finite loss"):
        update(pi, vf, make_optimizer([pi, vf], cfg), data, cfg, torch.Generator().manual_seed(0), True, terms=PPO_TERMS)


def test_weighted_mean_reduces_with_weights():
    assert float(weighted_mean(torch.tensor([1.0, 3.0]), torch.tensor([3.0, 1.0]))) == pytest.approx(1.5)


@pytest.mark.slow
def test_compiled_loss_gives_the_same_update():
    g, cfg, pi, vf = golden_start("ppo_ent_clipv_dual")
    cfg = cfg.replace(compile=True)
    update(pi, vf, make_optimizer([pi, vf], cfg), g["data"], cfg, torch.Generator().manual_seed(7), True, terms=PPO_TERMS)
    for name, p in pi.state_dict().items():
        assert torch.allclose(p, g["policy"][name], atol=2e-5, rtol=1e-4), name
    # another batch size (as GRPO's batches vary) is traced again and still right
    g, cfg2, pi2, _ = golden_start("grpo_kl")
    data = {k: v[:96] for k, v in g["data"].items()}
    ref = GaussianPolicy(mlp(5, cfg2.hidden_sizes, 3, cfg2.activation, 0.01), 3)
    ref.load_state_dict(pi2.state_dict())
    for net, c in ((pi2, cfg2.replace(compile=True)), (ref, cfg2)):
        update(net, None, make_optimizer([net], c), data, c, torch.Generator().manual_seed(3), False, terms=GRPO_TERMS)
    for (name, p), q in zip(pi2.state_dict().items(), ref.state_dict().values()):
        assert torch.allclose(p, q, atol=2e-5, rtol=1e-4), name


def _decide(cfg):
    from ppo_control.critic_process import run_plans
    return run_plans(cfg, torch.device("cpu"), algorithms.get(cfg.algo))[0]


def test_compile_decision_auto_on_for_long_ppo_runs_only(monkeypatch):
    cpu = torch.device("cpu")
    monkeypatch.setattr(update_mod, "_compiler_missing", lambda device: "")
    # classic 1M: 489 iterations x 10 epochs x 32 minibatches = 156,480 updates
    on, why = _decide(make_config("classic", parallel_critic="off"))
    assert on and "156,480" in why
    # with two cores the critic's update goes to a second process instead, eager (faster, measured)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert _decide(make_config("classic")) == (
        False, "auto: off, the critic's update runs in a second process instead (faster than compiling)")
    assert _decide(make_config("classic", adv_every_epoch=True))[0]  # that update cannot split: it compiles
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert _decide(make_config("classic"))[0]  # one core: no second process, the compile pays
    # 100k steps of the fast preset: 25 x 10 x 8 = 2,000 < 10,000, the compile would not pay
    assert _decide(make_config("fast", total_steps=100_000)) == (
        False, "auto: off, 2,000 minibatch updates < 10,000 (the compile would not pay)")
    assert not _decide(make_config("fast", algo="grpo"))[0]
    assert _decide(make_config("fast", total_steps=1000, compile="on"))[0]
    assert not _decide(make_config("classic", compile="off"))[0]
    monkeypatch.setattr(update_mod, "_compiler_missing", lambda device: "no C++ compiler on PATH")
    assert _decide(make_config("classic", parallel_critic="off")) == (False, "auto: off, no C++ compiler on PATH")
    # compile was a flag in older config.json files and Python callers
    assert make_config("classic", compile=True).compile == "on"
    assert make_config("classic", compile=False).compile == "off"


def test_a_compile_that_fails_falls_back_to_the_same_eager_update(monkeypatch, capsys):
    def broken_compile(fn, **kw):
        def call(*a, **k):
            raise RuntimeError("inductor: no working C++ compiler\nmore detail")
        return call
    monkeypatch.setattr(update_mod, "_COMPILED", {})
    monkeypatch.setattr(torch, "compile", broken_compile)
    g, cfg, pi, vf = golden_start("ppo")
    update(pi, vf, make_optimizer([pi, vf], cfg), g["data"], cfg, torch.Generator().manual_seed(7), True,
           compiled=True, terms=PPO_TERMS)
    for name, p in pi.state_dict().items():
        assert torch.allclose(p, g["policy"][name], atol=2e-5, rtol=1e-4), name
    err = capsys.readouterr().err
    assert "torch.compile failed (RuntimeError: inductor: no working C++ compiler)" in err and "--compile off" in err


def test_a_stop_gives_up_queued_kernel_compiles_and_later_compiles_get_a_fresh_pool(monkeypatch):
    """A stop during a cold first compile: the queued g++ jobs are cancelled (else the interpreter runs
    them all before exiting), the running ones are reported until they finish, the next pool is new."""
    from torch._inductor.async_compile import AsyncCompile
    monkeypatch.setattr(update_mod, "_COMPILED", {})
    monkeypatch.setattr("torch._inductor.async_compile.get_compile_threads", lambda: 2)
    AsyncCompile.pool.cache_clear()
    pool = AsyncCompile.pool()
    release = threading.Event()
    running = [pool.submit(release.wait, 60) for _ in range(2)]  # both threads busy
    queued = [pool.submit(lambda: "compiled") for _ in range(3)]
    while pool._work_queue.qsize() != 3:  # the two blockers have been picked up by the threads
        time.sleep(0.01)
    assert update_mod.abandon_compile_work() == 3
    assert all(f.cancelled() for f in queued) and not any(f.done() for f in running)
    assert update_mod.compile_work_running()
    release.set()
    assert all(f.result(timeout=10) for f in running)
    deadline = time.time() + 10
    while update_mod.compile_work_running() and time.time() < deadline:
        time.sleep(0.01)
    assert not update_mod.compile_work_running()
    fresh = AsyncCompile.pool()
    assert fresh is not pool and fresh.submit(lambda: 7).result(timeout=10) == 7
    fresh.shutdown()
    AsyncCompile.pool.cache_clear()
    assert update_mod.abandon_compile_work() == 0  # nothing to give up


def test_advantages_normalised_per_epoch_are_those_of_each_minibatch():
    """shuffled_minibatches(normalise=...) normalises every minibatch of an epoch in one op: bit for bit what
    _normalise gives each minibatch on its own (the loss's norm_adv), for uneven batch sizes too."""
    g = torch.Generator().manual_seed(0)
    for B, n_mb in [(2048, 32), (2050, 32), (512, 4), (300, 7)]:
        table = torch.randn(B, 5, generator=g) * 30 + 4
        col = {"obs": slice(0, 3), "advantages": 3, "logprobs": 4}
        plain = update_mod.shuffled_minibatches(table.clone(), col, torch.Generator().manual_seed(1), 2, n_mb)
        pre = update_mod.shuffled_minibatches(table.clone(), col, torch.Generator().manual_seed(1), 2, n_mb,
                                              normalise="advantages")
        for mbs, mbs_pre in zip(plain, pre):
            assert len(mbs) == len(mbs_pre) == n_mb
            for mb, mb_pre in zip(mbs, mbs_pre):
                assert torch.equal(update_mod._normalise(mb["advantages"]), mb_pre["advantages"])
                assert torch.equal(mb["obs"], mb_pre["obs"]) and torch.equal(mb["logprobs"], mb_pre["logprobs"])
