"""The PPO implementation details of issue 11: advantages every epoch, value-target normalisation,
lr floor / decay horizon, env kwargs."""
import numpy as np
import pytest
import torch

from ppo_control.config import ConfigError, make_config
from ppo_control.networks import ValueNet, make_critic, mlp
from ppo_control.state import TrainState


def test_value_target_stats_by_hand():
    vf = ValueNet(mlp(3, (4,), 1), normalize_targets=True)
    vf.update_target_stats(torch.tensor([1.0, 3.0]))
    vf.update_target_stats(torch.tensor([5.0, 7.0, 9.0]))
    # count 1e-4 prior (mean 0, var 1) then 5 samples of mean 5, variance 8
    n0 = 1e-4
    mean = 5 * 5 / (5 + n0)
    assert float(vf.ret_mean) == pytest.approx(mean, rel=1e-6)
    assert float(vf.ret_var) == pytest.approx(8.0, rel=1e-3)
    obs = torch.randn(6, 3)
    out = vf.net(obs).squeeze(-1)
    std = np.sqrt(float(vf.ret_var) + 1e-8)
    # forward is in reward units; normalize maps back into the net's space
    assert torch.allclose(vf(obs), out * std + mean, atol=1e-5)
    assert torch.allclose(vf.normalize(vf(obs)), out, atol=1e-5)
    assert "ret_mean" in vf.state_dict()  # checkpointed with the critic


def test_value_norm_loss_is_regression_on_normalised_targets():
    from ppo_control.update import LossTerms, minibatch_loss
    cfg = make_config("classic", value_norm=True, vf_coef=1.0, ent_coef=0.0)
    vf = make_critic(cfg, 3)
    vf.update_target_stats(torch.tensor([100.0, 200.0, 300.0]))
    from ppo_control.networks import make_policy
    pi = make_policy(cfg, 3, 1)
    mb = dict(obs=torch.randn(8, 3), actions=torch.zeros(8, 1), logprobs=torch.zeros(8), advantages=torch.zeros(8),
              returns=torch.full((8,), 250.0), values=torch.zeros(8))
    _, stats, _, _ = minibatch_loss(pi, vf, mb, cfg, False, LossTerms(value=True))
    m, s = float(vf.ret_mean), np.sqrt(float(vf.ret_var) + 1e-8)
    expect = 0.5 * float(((vf.net(mb["obs"]).squeeze(-1).detach() - (250.0 - m) / s) ** 2).mean())
    assert float(stats["losses/value_loss"]) == pytest.approx(expect, rel=1e-4)


@pytest.mark.slow
def test_advantages_recomputed_every_epoch(monkeypatch):
    import ppo_control.algorithms.ppo as ppo_mod
    seen = []
    real = ppo_mod.update

    def spy(*a, **k):
        refresh = a[7] if len(a) > 7 else k.get("refresh")
        seen.append(refresh)
        out = real(*a, **k)
        if refresh is not None:  # after training the critic, the refreshed advantages differ
            data = a[3]
            new = refresh()
            assert new["advantages"].shape == data["advantages"].shape
            assert not torch.allclose(new["advantages"], data["advantages"])
        return out
    monkeypatch.setattr(ppo_mod, "update", spy)
    for flag in (False, True):
        ts = TrainState.build(make_config(env_id="InvertedPendulum-v5", num_envs=2, num_steps=64, num_minibatches=2,
                                          update_epochs=3, adv_every_epoch=flag, vectorization="sync"))
        ts.algorithm.iteration(ts)
        ts.envs.close()
    assert seen[0] is None and callable(seen[1])


def test_refreshed_advantages_equal_collection_ones_before_the_critic_moves():
    from ppo_control.advantages import gae
    from ppo_control.rollout import collect_steps, rollout_values
    ts = TrainState.build(make_config(env_id="HalfCheetah-v5", env_kwargs=["max_episode_steps=50"], num_envs=2,
                                      num_steps=128, num_minibatches=2, vectorization="sync"))
    b = collect_steps(ts.envs, ts.policy, ts.critic, ts.obs_norm, ts.rew_scaler, ts.rollout, 128, ts.device)
    assert b.final_at.tolist() == [[49, 0], [49, 1], [99, 0], [99, 1]]  # time-limit cuts at 50 and 100 steps
    assert b.final_obs.shape == (4, 17)
    with torch.no_grad():  # next value at a cut = V(final obs before the reset), not V(next episode's first obs)
        assert torch.allclose(b.next_values[49], ts.critic(b.final_obs[:2]))
        assert not torch.allclose(b.next_values[49], b.values[50])
    v, nv = rollout_values(ts.critic, b)
    assert torch.equal(v, b.values) and torch.equal(nv, b.next_values)
    a1, _ = gae(b.rewards, v, nv, b.terminated, b.truncated, 0.99, 0.95)
    a0, _ = gae(b.rewards, b.values, b.next_values, b.terminated, b.truncated, 0.99, 0.95)
    assert torch.equal(a0, a1)
    ts.envs.close()


@pytest.mark.parametrize("floor, horizon, step, expect", [
    (0.0, None, 500, 0.5), (0.1, None, 950, 0.1), (0.1, None, 500, 0.5), (0.0, 2000, 1000, 0.5), (0.2, 4000, 1000, 0.75)])
def test_lr_schedule(floor, horizon, step, expect):
    from ppo_control.train import _iteration
    cfg = make_config(env_id="InvertedPendulum-v5", total_steps=1000, lr=1.0, lr_floor=floor, lr_decay_steps=horizon,
                      num_envs=2, num_steps=8, num_minibatches=2, vectorization="sync")
    ts = TrainState.build(cfg)
    ts.rollout.global_step = step
    _iteration(ts)
    assert ts.optimizer.param_groups[0]["lr"] == pytest.approx(expect)
    ts.envs.close()


def test_lr_options_are_validated():
    with pytest.raises(ConfigError, match="lr_floor must be in"):
        make_config(lr_floor=1.5)
    with pytest.raises(ConfigError, match="lr_decay_steps must be > 0"):
        make_config(lr_decay_steps=0)
    with pytest.raises(ConfigError, match="value_norm is a PPO option"):
        make_config(algo="grpo", value_norm=True)


def test_env_kwargs_reach_the_env_the_checkpoint_and_evaluation(tmp_path):
    from ppo_control import evaluate, load_policy, train
    cfg = make_config(env_id="Ant-v5", env_kwargs=["include_cfrc_ext_in_observation=False"], num_envs=2,
                      num_steps=32, num_minibatches=2, update_epochs=1, total_steps=64, eval_episodes=1,
                      progress=False, tensorboard=False, out_dir=str(tmp_path), run_name="ant")
    assert cfg.env_kwargs_dict == {"include_cfrc_ext_in_observation": False}
    ts = TrainState.build(cfg)
    assert ts.envs.obs_dim == 27  # 105 with Ant-v5's default contact forces
    ts.envs.close()
    s = train(cfg)
    assert np.isfinite(s["eval_return"])
    pol = load_policy(tmp_path / "ant")
    assert pol.config.env_kwargs == ("include_cfrc_ext_in_observation=False",)
    assert len(evaluate(pol, "Ant-v5", 1)["returns"]) == 1


def test_env_kwargs_parsing_and_errors():
    c = make_config(env_kwargs=("a=1", "b=0.5", "c=False", "d=None", "e=hello", "f=(1, 2)"))
    assert c.env_kwargs_dict == {"a": 1, "b": 0.5, "c": False, "d": None, "e": "hello", "f": (1, 2)}
    with pytest.raises(ConfigError, match="not key=value"):
        make_config(env_kwargs=("novalue",))
    from ppo_control.cliargs import config_from_args
    import argparse
    from ppo_control.cliargs import add_config_args
    p = argparse.ArgumentParser()
    p.add_argument("--preset", default="default")
    add_config_args(p)
    ns = p.parse_args(["--env-kwargs", "x=1", "y=True"])
    assert config_from_args(ns).env_kwargs == ("x=1", "y=True")
