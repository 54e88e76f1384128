import torch

from ppo_control.networks import GaussianPolicy, ValueNet


def test_log_prob_is_one_number_per_action_vector():
    pi = GaussianPolicy(5, 3)
    obs = torch.randn(7, 5)
    d = pi.dist(obs)
    a = d.sample()
    assert a.shape == (7, 3)
    assert d.log_prob(a).shape == (7,)
    assert d.entropy().shape == (7,)
    # Independent sums the per-dimension log-probs
    manual = torch.distributions.Normal(pi(obs), pi.std()).log_prob(a).sum(-1)
    assert torch.allclose(d.log_prob(a), manual)
    assert ValueNet(5)(obs).shape == (7,)


def test_log_std_clamped_so_std_never_underflows():
    pi = GaussianPolicy(2, 2, log_std_min=-5.0, log_std_max=2.0)
    with torch.no_grad():
        pi.log_std.fill_(-1e4)
    assert (pi.std() > 0).all()
    assert torch.allclose(pi.std(), torch.full((2,), torch.exp(torch.tensor(-5.0)).item()))
    lp = pi.dist(torch.zeros(1, 2)).log_prob(torch.zeros(1, 2))
    assert torch.isfinite(lp).all()


def test_initial_policy_mean_is_near_zero():
    torch.manual_seed(0)
    pi = GaussianPolicy(11, 3)
    assert pi(torch.randn(100, 11)).abs().max() < 0.1  # output gain 0.01


def test_old_logprobs_carry_no_gradient():
    from ppo_control.config import make_config
    from ppo_control.rollout import collect_steps
    from ppo_control.state import TrainState
    ts = TrainState.build(make_config(env_id="InvertedPendulum-v5", num_envs=2, num_steps=8, num_minibatches=2))
    b = collect_steps(ts.envs, ts.policy, ts.critic, ts.obs_norm, ts.rew_scaler, ts.rollout, 8, ts.device)
    assert not b.logprobs.requires_grad and b.logprobs.grad_fn is None
    new = ts.policy.dist(b.obs.reshape(-1, 4)).log_prob(b.actions.reshape(-1, 1))
    ratio = (new - b.logprobs.reshape(-1)).exp()
    ratio.sum().backward()
    assert ts.policy.log_std.grad is not None  # the gradient flows into the new policy only
    assert torch.allclose(ratio, torch.ones_like(ratio), atol=1e-5)  # same policy -> ratio 1
    ts.envs.close()
