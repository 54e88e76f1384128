import gymnasium as gym
import numpy as np
import pytest

from ppo_control.envs import EnvError, SnapshotError, check_env_id, make_vec_env


def test_unknown_env_id_is_a_clear_error():
    with pytest.raises(EnvError, match="unknown env id 'HalfCheeta-v5'"):
        check_env_id("HalfCheeta-v5")


def test_discrete_action_space_is_rejected():
    with pytest.raises(EnvError, match="Discrete action space.*continuous Box"):
        check_env_id("CartPole-v1")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_same_step_autoreset_delivers_final_obs(mode):
    """Pins gymnasium's SAME_STEP autoreset: at truncation obs is the next episode's first obs
    and final_obs is the last obs of the ended episode, equal to what a plain env returns."""
    envs = make_vec_env("InvertedPendulum-v5", 2, mode, max_episode_steps=5)
    assert envs.max_episode_steps == 5
    ref = gym.make("InvertedPendulum-v5", max_episode_steps=5)
    obs = envs.reset(seed=3)
    o_ref, _ = ref.reset(seed=3)
    assert np.array_equal(obs[0], o_ref)
    acts = np.zeros((2, 1))
    for t in range(5):
        obs, r, term, trunc, final = envs.step(acts)
        o_ref, r_ref, te_ref, tr_ref, _ = ref.step(acts[0])
    assert trunc.all() and not term.any() and tr_ref
    assert np.array_equal(final[0], o_ref)
    assert not np.array_equal(obs[0], final[0])  # already reset
    o_next, _ = ref.reset()  # the vector env reset env 0 with its own continuing RNG
    assert np.array_equal(obs[0], o_next)
    envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_snapshot_restore_gives_identical_trajectories(mode):
    envs = make_vec_env("Hopper-v5", 3, mode)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(10):  # move env 0 somewhere past the start
        envs.step(rng.uniform(-0.3, 0.3, (3, 3)))
    snap = envs.get_snapshots()[0]
    obs = envs.set_snapshots([snap] * 3, restore_rng=False)
    assert np.array_equal(obs[0], obs[1]) and np.array_equal(obs[1], obs[2])
    assert np.array_equal(obs[0], snap["obs"])
    a = rng.uniform(-0.3, 0.3, (30, 1, 3))
    for t in range(30):
        o, r, te, tr, final = envs.step(np.repeat(a[t], 3, 0))
        assert np.array_equal(final[0], final[1]) and np.array_equal(final[0], final[2])  # bit-identical
        assert r[0] == r[1] == r[2] and te[0] == te[1] == te[2]
        if te[0] or tr[0]:  # each member then resets from its own RNG
            break
    assert t >= 10
    # and a different action sequence in one member makes it diverge
    envs.set_snapshots([snap] * 3, restore_rng=False)
    o, *_ = envs.step(np.stack([a[0, 0], a[0, 0], -a[0, 0]]))
    assert np.array_equal(o[0], o[1]) and not np.array_equal(o[0], o[2])
    envs.close()


def test_snapshot_of_another_model_is_rejected():
    a, b = make_vec_env("Hopper-v5", 1), make_vec_env("HalfCheetah-v5", 1)
    a.reset(seed=0), b.reset(seed=0)
    with pytest.raises(SnapshotError, match="does not fit this model"):
        b.set_snapshots(a.get_snapshots())
    a.close(), b.close()


def test_non_mujoco_env_cannot_be_snapshotted():
    envs = make_vec_env("Pendulum-v1", 1)
    envs.reset(seed=0)
    with pytest.raises(SnapshotError, match="not MuJoCo-based"):
        envs.get_snapshots()
    envs.close()


def test_batched_thread_count_does_not_change_results():
    a, b = make_vec_env("Hopper-v5", 4, "batched", nthread=1), make_vec_env("Hopper-v5", 4, "batched", nthread=2)
    oa, ob = a.reset(seed=5), b.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(50):
        act = rng.uniform(-1, 1, (4, 3))
        oa, ra, *_ = a.step(act)
        ob, rb, *_ = b.step(act)
        assert np.array_equal(oa, ob) and np.array_equal(ra, rb)
    a.close(), b.close()
