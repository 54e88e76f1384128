"""The algorithm interface: a new algorithm is one class plus a registration.

The test-only algorithm below is vanilla policy gradient with a critic baseline (REINFORCE with
GAE(lambda=1) advantages: Monte-Carlo returns minus V(s)), one gradient step per batch. It is the
example of docs/extending.md, "Adding an algorithm".
"""
import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from ppo_control import ConfigError, algorithms, make_config, train
from ppo_control.advantages import gae
from ppo_control.algorithms import Algorithm
from ppo_control.config import _need
from ppo_control.rollout import collect_steps


class VPG(Algorithm):
    """Vanilla policy gradient: loss = -mean(log pi(a|s) * A) + vf_coef * mean((V(s) - R)^2)."""
    uses_critic = True  # TrainState builds the critic and puts its parameters in the optimizer

    @classmethod
    def check_config(cls, c):
        _need(c.kl_coef == 0, "kl_coef is not a VPG option; set it to 0")

    def finished(self, ts):
        return ts.iteration >= ts.cfg.num_iterations

    def iteration(self, ts):
        cfg = ts.cfg
        b = collect_steps(ts.envs, ts.policy, ts.critic, ts.obs_norm, ts.rew_scaler, ts.rollout, cfg.num_steps,
                          ts.device, ts.np_rng)
        adv, ret = gae(b.rewards, b.values, b.next_values, b.terminated, b.truncated, cfg.gamma, 1.0)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        obs, actions = b.obs.flatten(0, 1), b.actions.flatten(0, 1)
        logp, _ = ts.policy.log_prob_entropy(obs, actions)
        pg = -(logp * adv.flatten()).mean()
        vl = ((ts.critic(obs) - ret.flatten()) ** 2).mean()
        ts.optimizer.zero_grad()
        (pg + cfg.vf_coef * vl).backward()
        nn.utils.clip_grad_norm_(ts.policy.parameters(), cfg.max_grad_norm)
        ts.optimizer.step()
        return {"losses/policy_loss": float(pg.detach()), "losses/value_loss": float(vl.detach()),
                "charts/steps_this_iter": b.rewards.numel()}


@pytest.fixture
def vpg():
    algorithms.register("vpg", VPG)
    yield
    algorithms.unregister("vpg")


def test_the_registry_maps_the_config_name_to_the_class_and_validates_through_it(vpg):
    assert algorithms.get("vpg") is VPG and {"ppo", "grpo", "vpg"} <= set(algorithms.names())
    assert algorithms.get("ppo") is algorithms.PPO and algorithms.get("grpo") is algorithms.GRPO
    with pytest.raises(ConfigError, match="kl_coef is not a VPG option"):
        make_config("default", algo="vpg", kl_coef=0.1)
    algorithms.unregister("vpg")
    with pytest.raises(ConfigError, match=r"algo='vpg' is not one of \['grpo', 'ppo'\]"):
        make_config("default", algo="vpg")
    with pytest.raises(TypeError, match="not a subclass"):
        algorithms.register("x", object)


def _random_policy_best(episodes: int = 300, seed: int = 0) -> float:
    env = gym.make("InvertedPendulum-v5")
    env.action_space.seed(seed)
    best = 0.0
    for ep in range(episodes):
        env.reset(seed=seed + ep)
        total, done = 0.0, False
        while not done:
            _, r, term, trunc, _ = env.step(env.action_space.sample())
            total += r
            done = term or trunc
        best = max(best, total)
    env.close()
    return best


@pytest.mark.slow
def test_a_test_only_algorithm_trains_inverted_pendulum_beyond_any_random_episode(vpg, tmp_path):
    random_best = _random_policy_best()
    assert random_best < 100  # a random policy drops the pole within a few dozen steps
    cfg = make_config("default", algo="vpg", env_id="InvertedPendulum-v5", num_envs=8, num_steps=128,
                      num_minibatches=1, lr=1e-2, gamma=0.99, total_steps=40_960, eval_episodes=5, progress=False,
                      tensorboard=False, out_dir=str(tmp_path), run_name="vpg", checkpoint_every=1000)
    s = train(cfg)
    assert s["algo"] == "vpg" and s["iterations"] == 40
    # measured: 201-1,000 over seeds 1-4 (random best 22)
    assert s["eval_return"] > 5 * random_best, (s["eval_return"], random_best)
