import numpy as np
import pytest

from ppo_control.normalize import ObsNormalizer, RewardScaler, RunningMeanStd


def test_running_mean_std_matches_numpy_over_uneven_batches():
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=(101, 4))
    rms = RunningMeanStd((4,), epsilon=0.0)
    for chunk in (data[:1], data[1:2], data[2:40], data[40:]):
        rms.update(chunk)
    np.testing.assert_allclose(rms.mean, data.mean(0), rtol=1e-12)
    np.testing.assert_allclose(rms.var, data.var(0), rtol=1e-10)
    assert rms.count == 101


def test_obs_normaliser_clips_and_reward_scaler_by_return_std():
    on = ObsNormalizer((1,), clip=2.0)
    on.rms.mean[:], on.rms.var[:] = 1.0, 4.0
    assert on(np.array([[1.0], [100.0], [-100.0]])).ravel().tolist() == pytest.approx([0.0, 2.0, -2.0])
    rs = RewardScaler(1, gamma=0.5, clip=10.0)
    out = [rs(np.array([1.0]), np.array([False]))[0] for _ in range(3)]
    # discounted returns 1, 1.5, 1.75; after one sample the std is ~0, so the first reward hits the clip
    assert out[0] == 10.0
    assert out[2] == pytest.approx(1.0 / np.std([1.0, 1.5, 1.75]), rel=1e-3)
    assert rs.returns.tolist() == [1.75]
    rs(np.array([1.0]), np.array([True]))
    assert rs.returns.tolist() == [0.0]  # the discounted return restarts at an episode boundary


def _reference_scaler(rewards, dones, gamma=0.99, clip=10.0, eps=1e-8):
    """The reward scaler in numpy arrays with the parallel-variance update written out in full (batch of one)."""
    mean, var, count, ret, out = np.zeros(()), np.ones(()), 1e-4, np.zeros(1), []
    for r, d in zip(rewards, dones):
        ret = ret * gamma + np.array([r])
        b_mean, b_m2, n = ret[0], 0.0, 1
        delta = b_mean - mean
        tot = count + n
        mean = mean + delta * (n / tot)
        var = (var * count + b_m2 + delta * delta * (count * n / tot)) / tot
        count = tot
        if d:
            ret[0] = 0.0
        out.append(np.clip(np.array([r]) / np.sqrt(var + eps), -clip, clip).astype(np.float32)[0])
    return np.array(out), mean, var


def test_one_env_reward_scaler_is_the_array_arithmetic_bit_for_bit():
    """The 1-env scaler runs on Python floats: the same doubles as the array formula, clipping included."""
    rng = np.random.default_rng(0)
    rewards = np.concatenate([rng.normal(0, 3, 3000), [1e6, -1e6, 0.0]])
    dones = rng.random(rewards.size) < 0.01
    ref, mean, var = _reference_scaler(rewards, dones)
    sc = RewardScaler(1, 0.99)
    got = np.array([sc(np.array([r]), np.array([d]))[0] for r, d in zip(rewards, dones)])
    assert got.dtype == np.float32 and np.array_equal(got, ref)
    assert float(sc.rms.mean) == float(mean) and float(sc.rms.var) == float(var)
    # a checkpoint round trip leaves 0-d arrays behind; the scalar path takes them
    sc2 = RewardScaler(1, 0.99)
    sc2.load_state_dict(sc.state_dict())
    assert np.array_equal(sc2(np.array([2.0]), np.array([False])), sc(np.array([2.0]), np.array([False])))
