import numpy as np
import pytest
import torch
from torch import nn

from ppo_control.inference import Actor, numpy_forward, policy_outputs
from ppo_control.networks import GaussianPolicy, mlp


@pytest.mark.parametrize("activation", ["tanh", "relu", "elu", "silu"])
@pytest.mark.parametrize("layer_norm", [False, True])
def test_numpy_forward_is_generated_from_the_module_and_equals_it(activation, layer_norm):
    torch.manual_seed(0)
    net = mlp(6, (32, 16), 3, activation, out_gain=1.0, layer_norm=layer_norm)
    if layer_norm:  # LayerNorm's affine parameters away from their (1, 0) start
        with torch.no_grad():
            for m in net:
                if isinstance(m, nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.3, 0.3)
    obs = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32) * 3
    fwd = numpy_forward(net)
    with torch.no_grad():
        ref = net(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(fwd(obs), ref, rtol=1e-5, atol=1e-5)


def test_untranslatable_modules_fall_back_to_torch():
    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return x + self.lin(x)
    assert numpy_forward(nn.Sequential(nn.Linear(3, 4), Residual())) is None
    pi = GaussianPolicy(nn.Sequential(nn.Linear(3, 4), Residual(), nn.Linear(4, 2)), 2)
    actor = Actor(pi, torch.device("cpu"), np.random.default_rng(0))
    assert actor.mean is None
    torch.manual_seed(0)
    a = actor.sample(np.zeros((3, 3), np.float32))
    assert a.shape == (3, 2) and a.dtype == np.float32


def test_numpy_samples_follow_the_policy_distribution():
    torch.manual_seed(0)
    pi = GaussianPolicy(mlp(6, (32, 16), 3, "tanh", 0.01), 3, init_log_std=-0.5)
    with torch.no_grad():
        pi.log_std.copy_(torch.tensor([-0.3, 0.1, -9.0]))  # last one clamped to log_std_min
    obs = np.random.default_rng(0).standard_normal((1, 6)).astype(np.float32)
    actor = Actor(pi, torch.device("cpu"), np.random.default_rng(1))
    assert actor.mean is not None
    a = actor.sample(np.repeat(obs, 20000, 0))
    with torch.no_grad():
        mean, std = pi(torch.from_numpy(obs))[0].numpy(), pi.std().numpy()
    z = (a - mean) / std
    assert np.abs(z.mean(0)).max() < 0.05 and np.abs(z.std(0) - 1).max() < 0.05
    # the stored old log-prob is the torch head's, computed in one batched call after the rollout
    obs_t, act_t = torch.from_numpy(np.repeat(obs, 4, 0)), torch.from_numpy(a[:4])
    expect = pi.dist(obs_t).log_prob(act_t)
    assert torch.allclose(policy_outputs(pi, obs_t, act_t, chunk=3), expect, atol=1e-5)
