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
