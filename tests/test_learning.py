"""Learning checks: the algorithms must really learn InvertedPendulum-v5 inside a CI-sized budget.

Budgets were chosen from measured runs (see the README): PPO reaches 1000 by ~20k steps on
seeds 1-3, GRPO (outcome advantages, undiscounted) by 60-100k steps on seeds 1-4.
"""
import pytest

from ppo_control import train


@pytest.mark.slow
def test_ppo_learns_inverted_pendulum(tiny):
    s = train(tiny(run_name="ppo", num_envs=4, num_steps=512, num_minibatches=32, update_epochs=10,
                   total_steps=49_152, eval_episodes=5, checkpoint_every=10))
    assert s["eval_return"] >= 900, s
    assert s["final_return"] >= 900, s


@pytest.mark.slow
def test_grpo_learns_inverted_pendulum(tiny):
    s = train(tiny(run_name="grpo", algo="grpo", group_size=8, num_envs=16, num_minibatches=4, update_epochs=10,
                   gamma=1.0, total_steps=100_000, eval_episodes=5, checkpoint_every=20))
    assert s["eval_return"] >= 900, s
