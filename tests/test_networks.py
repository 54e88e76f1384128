import pytest
import torch
from torch import nn

from ppo_control.config import make_config
from ppo_control.networks import GaussianPolicy, ValueNet, make_critic, make_policy, mlp


def _pi(obs_dim=5, act_dim=3, **kw):
    return GaussianPolicy(mlp(obs_dim, (64, 64), act_dim, "tanh", 0.01), act_dim, **kw)


def test_log_prob_is_one_number_per_action_vector():
    pi = _pi()
    obs = torch.randn(7, 5)
    d = pi.dist(obs)
    a = d.sample()
    assert a.shape == (7, 3)
    assert d.log_prob(a).shape == (7,)
    assert d.entropy().shape == (7,)
    # Independent sums the per-dimension log-probs
    manual = torch.distributions.Normal(pi(obs), pi.std()).log_prob(a).sum(-1)
    assert torch.allclose(d.log_prob(a), manual)
    assert ValueNet(mlp(5, (8,), 1))(obs).shape == (7,)


def test_closed_form_log_prob_entropy_equals_independent_normal():
    torch.manual_seed(0)
    pi = _pi(4, 2)
    with torch.no_grad():
        pi.log_std.copy_(torch.tensor([0.4, -7.0]))  # the second one is clamped to -5
    obs, act = torch.randn(9, 4), torch.randn(9, 2)
    lp, ent = pi.log_prob_entropy(obs, act)
    d = pi.dist(obs)
    assert torch.allclose(lp, d.log_prob(act), atol=1e-5)
    assert torch.allclose(ent, d.entropy(), atol=1e-6)
    # by hand for one sample: sum_i -0.5 z_i^2 - log s_i - 0.5 log(2 pi)
    mean = pi(obs[:1])[0].detach()
    lp = lp.detach()
    s = torch.tensor([0.4, -5.0]).exp()
    z = (act[0] - mean) / s
    assert float(lp[0]) == pytest.approx(float(torch.sum(-0.5 * z * z - s.log() - 0.9189385332046727)), rel=1e-6)


def test_log_std_clamped_so_std_never_underflows():
    pi = _pi(2, 2, log_std_min=-5.0, log_std_max=2.0)
    with torch.no_grad():
        pi.log_std.fill_(-1e4)
    assert torch.allclose(pi.std(), torch.full((2,), torch.exp(torch.tensor(-5.0)).item()))
    lp = pi.dist(torch.zeros(1, 2)).log_prob(torch.zeros(1, 2)).detach()
    assert float(lp[0]) == pytest.approx(2 * (5.0 - 0.9189385332046727), rel=1e-6)


def test_log_std_max_caps_the_std_and_stops_its_gradient():
    # --log-std-max 0 (the Hopper 10M std cap): a component past the cap acts as std 1 and gets no gradient,
    # one below it moves as usual: d logp / d log_s = z^2 - 1
    pi = _pi(2, 2, log_std_min=-5.0, log_std_max=0.0)
    with torch.no_grad():
        pi.mean_net[-1].weight.zero_()
        pi.mean_net[-1].bias.zero_()  # mean 0 for every obs
        pi.log_std.copy_(torch.tensor([0.5, -1.0]))
    assert torch.allclose(pi.std(), torch.tensor([1.0, 0.36787944]))
    lp, _ = pi.log_prob_entropy(torch.zeros(1, 2), torch.tensor([[2.0, 0.5]]))
    lp.sum().backward()
    z1 = 0.5 / 0.36787944  # 1.3591409
    assert float(lp[0]) == pytest.approx(-0.5 * 4.0 - 0.5 * z1 * z1 + 1.0 - 2 * 0.9189385332046727, rel=1e-6)
    assert float(pi.log_std.grad[0]) == 0.0
    assert float(pi.log_std.grad[1]) == pytest.approx(z1 * z1 - 1.0, rel=1e-5)  # 0.8472640


def test_initial_policy_mean_is_near_zero():
    torch.manual_seed(0)
    assert _pi(11, 3)(torch.randn(100, 11)).abs().max() < 0.1  # output gain 0.01


def test_networks_follow_the_config():
    cfg = make_config(hidden_sizes=(32, 32), critic_hidden_sizes=(256, 256), activation="relu", layer_norm="both")
    pi, vf = make_policy(cfg, 7, 2), make_critic(cfg, 7)
    lin = lambda net: [m.out_features for m in net if isinstance(m, nn.Linear)]  # noqa: E731
    assert lin(pi.mean_net) == [32, 32, 2] and lin(vf.net) == [256, 256, 1]
    assert [type(m) for m in pi.mean_net] == [nn.Linear, nn.LayerNorm, nn.ReLU] * 2 + [nn.Linear]
    plain = make_policy(make_config(), 7, 2)
    assert [type(m) for m in plain.mean_net] == [nn.Linear, nn.Tanh] * 2 + [nn.Linear]


def test_old_logprobs_carry_no_gradient():
    from ppo_control.rollout import collect_steps
    from ppo_control.state import TrainState
    ts = TrainState.build(make_config(env_id="InvertedPendulum-v5", num_envs=2, num_steps=8, num_minibatches=2))
    # the run's seeded generator: an unseeded draw made the sum below fall under 0.1 now and then
    b = collect_steps(ts.envs, ts.policy, ts.critic, ts.obs_norm, ts.rew_scaler, ts.rollout, 8, ts.device,
                      rng=ts.np_rng)
    assert not b.logprobs.requires_grad and b.logprobs.grad_fn is None
    assert not b.values.requires_grad and b.values.grad_fn is None
    new = ts.policy.dist(b.obs.reshape(-1, 4)).log_prob(b.actions.reshape(-1, 1))
    ratio = (new - b.logprobs.reshape(-1)).exp()
    ratio.sum().backward()
    assert torch.allclose(ratio, torch.ones_like(ratio), atol=1e-5)  # same policy -> ratio 1
    # at ratio 1, d ratio / d log_std = d log pi / d log_std = z^2 - 1 per sample: the new log-prob's gradient
    # alone; had the stored log-prob kept its graph, the two would cancel to 0
    with torch.no_grad():
        d = ts.policy.dist(b.obs.reshape(-1, 4))
        z = (b.actions.reshape(-1, 1) - d.mean) / d.stddev
    expected = (z ** 2 - 1).sum(0)
    assert expected.abs().item() > 0.1
    assert torch.allclose(ts.policy.log_std.grad, expected, rtol=1e-4, atol=1e-5)
    ts.close()
