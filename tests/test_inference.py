import numpy as np
import pytest
import torch

from ppo_control.inference import Actor
from ppo_control.networks import GaussianPolicy, ValueNet


@pytest.mark.parametrize("activation", ["tanh", "relu", "elu", "silu"])
def test_numpy_fast_path_matches_torch_distribution(activation):
    torch.manual_seed(0)
    pi, vf = GaussianPolicy(6, 3, (32, 16), activation, init_log_std=-0.5), ValueNet(6, (32, 16), activation)
    with torch.no_grad():
        pi.log_std.copy_(torch.tensor([-0.3, 0.1, -9.0]))  # last one clamped to log_std_min
    obs = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    actor = Actor(pi, vf, torch.device("cpu"), np.random.default_rng(1))
    assert actor.use_numpy
    act, logp, val = actor.sample(obs)
    assert act.shape == (5, 3) and logp.shape == (5,) and val.shape == (5,)
    with torch.no_grad():
        d = pi.dist(torch.from_numpy(obs))
        ref_logp = d.log_prob(torch.from_numpy(act)).numpy()
        ref_val = vf(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(logp, ref_logp, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(val, ref_val, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(actor.log_prob(obs, act), ref_logp, rtol=1e-4, atol=1e-4)
    # the samples follow N(mean, std): standardised noise has mean 0 / std 1
    big = np.repeat(obs[:1], 20000, 0)
    a, _, _ = actor.sample(big)
    z = (a - d.mean[0].numpy()) / pi.std().detach().numpy()
    assert np.abs(z.mean(0)).max() < 0.05 and np.abs(z.std(0) - 1).max() < 0.05


def test_closed_form_log_prob_entropy_equals_independent_normal():
    torch.manual_seed(0)
    pi = GaussianPolicy(4, 2)
    with torch.no_grad():
        pi.log_std.copy_(torch.tensor([0.4, -7.0]))
    obs, act = torch.randn(9, 4), torch.randn(9, 2)
    lp, ent = pi.log_prob_entropy(obs, act)
    d = pi.dist(obs)
    assert torch.allclose(lp, d.log_prob(act), atol=1e-5)
    assert torch.allclose(ent, d.entropy(), atol=1e-6)
