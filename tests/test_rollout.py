"""rollout.clipped_share: the share of raw action components the env receives clipped."""
import numpy as np
import pytest
import torch

from ppo_control.rollout import clipped_share


def test_clipped_share_by_hand_per_dimension_bounds():
    low, high = np.array([-1.0, -2.0]), np.array([1.0, 2.0])
    # dim 0: 1.5 > 1 and -1.5 < -1 are clipped, 1.0 sits on the bound (not changed by np.clip);
    # dim 1: 1.5 and -2.0 are inside [-2, 2], -2.5 is clipped -> 3 of 6 components
    actions = torch.tensor([[1.5, 1.5], [-1.5, -2.5], [1.0, -2.0]])
    assert clipped_share(actions, low, high) == 0.5
    # [T, N, act_dim] as collected: the same rows, reshaped, give the same share
    assert clipped_share(actions.reshape(3, 1, 2), low, high) == 0.5
    # it agrees with what the env's clipping changes
    a = torch.randn(50, 4, 2, generator=torch.Generator().manual_seed(0)) * 2.0
    changed = np.clip(a.numpy(), low, high) != a.numpy()
    assert clipped_share(a, low, high) == pytest.approx(changed.mean(), abs=1e-6)  # 89 of 200


def test_clipped_share_of_no_steps_is_zero():
    assert clipped_share(torch.zeros(0, 3), -np.ones(3), np.ones(3)) == 0.0


def test_collect_steps_acts_with_the_per_step_noise_stream():
    # the rollout's noise is drawn in one call; the actions must be those of one draw per step
    # from the same generator, and the generator must end where per-step draws leave it
    from ppo_control.config import make_config
    from ppo_control.envs import make_vec_env
    from ppo_control.inference import Actor
    from ppo_control.networks import make_critic, make_policy
    from ppo_control.normalize import ObsNormalizer, RewardScaler
    from ppo_control.rollout import RolloutState, collect_steps
    cfg = make_config("classic", num_envs=2)
    envs = make_vec_env("InvertedPendulum-v5", 2, "batched")
    torch.manual_seed(0)
    pi, vf = make_policy(cfg, envs.obs_dim, envs.act_dim), make_critic(cfg, envs.obs_dim)
    rs = RolloutState(obs=envs.reset(seed=1), ep_return=np.zeros(2), ep_length=np.zeros(2, np.int64))
    batch = collect_steps(envs, pi, vf, ObsNormalizer((envs.obs_dim,)), RewardScaler(2, 0.99), rs, 7,
                          torch.device("cpu"), np.random.default_rng(5))
    replay = np.random.default_rng(5)
    actor = Actor(pi, torch.device("cpu"), replay)
    for t in range(7):
        assert np.array_equal(actor.sample(batch.obs[t].numpy()), batch.actions[t].numpy()), t
    after = np.random.default_rng(5)
    after.standard_normal((7, 2, envs.act_dim), dtype=np.float32)
    assert replay.random() == after.random()
    envs.close()


def test_record_step_one_env_path_keeps_the_books_of_the_array_path():
    """One env takes element-wise additions; the episodes, returns and lengths are those of the array path."""
    from ppo_control.rollout import RolloutState, record_step
    rng = np.random.default_rng(0)
    rewards, dones = rng.normal(size=300), rng.random(300) < 0.05
    one = RolloutState(obs=np.zeros((1, 2)), ep_return=np.zeros(1), ep_length=np.zeros(1, np.int64))
    two = RolloutState(obs=np.zeros((2, 2)), ep_return=np.zeros(2), ep_length=np.zeros(2, np.int64))
    for r, d in zip(rewards, dones):
        record_step(one, np.array([r]), np.array([d]))
        record_step(two, np.array([r, r]), np.array([d, d]), bool(d))
    assert one.episodes == two.episodes[::2] == two.episodes[1::2] and len(one.episodes) == dones.sum()
    assert one.ep_return[0] == two.ep_return[0] and one.ep_length[0] == two.ep_length[0]
