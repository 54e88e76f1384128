"""benchmarks/studies/grpo_std_gradient.py: the near-a-fall mask by hand, and the sign of its log-std measurement."""
from types import SimpleNamespace

import pytest
import torch

from ppo_control.config import make_config
from ppo_control.networks import make_policy
from ppo_control.update import make_optimizer

from bench_module import load_benchmark


def _module():
    return load_benchmark("grpo_std_gradient")


def test_near_fall_marks_the_last_steps_before_a_termination():
    m = _module()
    T = 6
    # member 0 terminates at t=4 (alive 0..4); member 1 is cut at t=2 without terminating; member 2 runs on
    mask = torch.tensor([[1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 0, 1], [1, 0, 1], [0, 0, 1]], dtype=torch.bool)
    term = torch.zeros(T, 3, dtype=torch.bool)
    term[4, 0] = True
    near = m.near_fall(term, mask, near=2)
    assert near[:, 0].tolist() == [False, False, False, True, True, False]  # t = 3, 4: at most 2 steps before
    assert not near[:, 1].any() and not near[:, 2].any()
    assert m.near_fall(term, mask, near=10)[:, 0].tolist() == [True] * 5 + [False]


def _state(seed=0):
    cfg = make_config("grpo", env_id="Hopper-v5", num_minibatches=4, update_epochs=2, init_log_std=-0.5)
    torch.manual_seed(seed)
    policy = make_policy(cfg, 5, 2)
    return SimpleNamespace(cfg=cfg, policy=policy, optimizer=make_optimizer([policy], cfg))


def _data(policy, adv_of_z, B=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(B, 5, generator=g)
    z = torch.randn(B, 2, generator=g)
    with torch.no_grad():
        actions = policy.mean_net(obs) + policy.std() * z
        logp, _ = policy.log_prob_entropy(obs, actions)
    return {"obs": obs, "actions": actions, "logprobs": logp, "advantages": adv_of_z(z),
            "weights": torch.full((B,), 1.0 / B), "ref_logprobs": logp.clone(), "values": None, "returns": None}


@pytest.mark.slow
def test_log_std_shift_follows_what_the_advantages_reward_and_leaves_the_state_alone():
    m = _module()
    ts = _state()
    before = ts.policy.log_std.detach().clone()
    # actions far from the mean rewarded -> the update widens the std; near the mean rewarded -> narrows it
    assert m.log_std_shift(ts, _data(ts.policy, lambda z: (z ** 2).sum(1) - 2.0), seed=1) > 0
    assert m.log_std_shift(ts, _data(ts.policy, lambda z: 2.0 - (z ** 2).sum(1)), seed=1) < 0
    # no advantage, no entropy or KL term: nothing moves
    assert m.log_std_shift(ts, _data(ts.policy, lambda z: torch.zeros(z.shape[0])), seed=1) == 0.0
    assert torch.equal(ts.policy.log_std.detach(), before) and not ts.optimizer.state  # copies were trained
