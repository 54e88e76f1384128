"""The batched MuJoCo backend against gymnasium's own envs, step by step.

Reference: ``VecEnv(..., "sync")`` = gymnasium's SyncVectorEnv of ``gym.make`` envs in
SAME_STEP autoreset mode.  Both run the same seeds and the same random actions through
episode ends (short ``max_episode_steps``; falls for Hopper/Walker/pendulums/Humanoid),
so the autoreset path and the reset-noise draws are compared too.

Tolerance: the simulator state is compared bit for bit (``physics`` of the snapshots);
observations and rewards with atol 1e-8, though they agree exactly except where a
batched ``np.linalg.norm`` rounds differently from the per-env one (Reacher, Pusher: 1 ulp).
"""
import numpy as np
import pytest

pytest.importorskip("mujoco.batch")  # MuJoCo >= 4.0; older versions fall back to gymnasium

from ppo_control.envs import VecEnv, make_vec_env  # noqa: E402
from ppo_control.envs.batched import BatchedMujocoVecEnv, is_supported  # noqa: E402
from ppo_control.envs.batched_tasks import TASKS  # noqa: E402

ATOL = 1e-8
TERMINATING = {"Hopper-v5", "Walker2d-v5", "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Humanoid-v5"}
SHORT_LIMIT = {"InvertedPendulum-v5": 6, "InvertedDoublePendulum-v5": 6}  # they fall within ~25 random steps


def _pair(env_id, n, **kw):
    return VecEnv(env_id, n, "sync", kw), BatchedMujocoVecEnv(env_id, n, nthread=2, **kw)


def _assert_step_equal(ref, got, t):
    (o1, r1, te1, tr1, f1), (o2, r2, te2, tr2, f2) = ref, got
    assert np.array_equal(te1, te2) and np.array_equal(tr1, tr2), f"step {t}: terminated/truncated differ"
    np.testing.assert_allclose(o2, o1, rtol=0, atol=ATOL, err_msg=f"obs at step {t}")
    np.testing.assert_allclose(f2, f1, rtol=0, atol=ATOL, err_msg=f"final_obs at step {t}")
    np.testing.assert_allclose(r2, r1, rtol=0, atol=ATOL, err_msg=f"reward at step {t}")
    assert o2.dtype == np.float64 and r2.dtype == np.float64 and te2.dtype == bool and tr2.dtype == bool


def _assert_same_physics(g, b):
    for sg, sb in zip(g.get_snapshots(), b.get_snapshots()):
        assert np.array_equal(sg["physics"], sb["physics"])  # bit-identical simulator state
        assert sg["elapsed_steps"] == sb["elapsed_steps"] and sg["rng"] == sb["rng"]


def _run(g, b, steps, rng):
    """Step both with the same random in-bounds actions; returns (#terminated, #truncated)."""
    nterm = ntrunc = 0
    for t in range(steps):
        a = rng.uniform(b.action_low, b.action_high, size=(b.num_envs, b.act_dim))
        ref, got = g.step(a), b.step(a)
        _assert_step_equal(ref, got, t)
        nterm, ntrunc = nterm + ref[2].sum(), ntrunc + ref[3].sum()
    return nterm, ntrunc


@pytest.mark.parametrize("env_id", sorted(TASKS))
def test_step_parity_through_resets(env_id):
    limit = SHORT_LIMIT.get(env_id, 25)
    g, b = _pair(env_id, 3, max_episode_steps=limit)
    assert (b.obs_dim, b.act_dim, b.max_episode_steps) == (g.obs_dim, g.act_dim, limit)
    assert np.array_equal(b.action_low, g.action_low) and np.array_equal(b.action_high, g.action_high)
    np.testing.assert_array_equal(b.reset(seed=123), g.reset(seed=123))
    nterm, ntrunc = _run(g, b, 120, np.random.default_rng(0))
    assert ntrunc > 0  # the time limit ended episodes (and autoreset drew new start states)
    if env_id in TERMINATING:
        assert nterm > 0
    _assert_same_physics(g, b)
    # reset(seed=None) continues every env's RNG
    np.testing.assert_array_equal(b.reset(), g.reset())
    _run(g, b, 10, np.random.default_rng(1))
    g.close(), b.close()


@pytest.mark.parametrize("env_id", ["Hopper-v5", "Walker2d-v5", "Ant-v5"])
def test_idle_envs_are_left_as_they_are_and_both_backends_agree(env_id):
    """step(actions, active): the idle envs' whole snapshot (physics incl. controls, step count, RNG) and obs
    stay as they were, they report reward 0 and no end; the active ones step (through falls, time limits and
    autoresets) identically in both backends, one by one in sync and as a subset in batched."""
    g, b = _pair(env_id, 4, max_episode_steps=15)
    np.testing.assert_array_equal(b.reset(seed=7), g.reset(seed=7))
    rng, ends = np.random.default_rng(6), 0
    for t in range(60):
        active = rng.random(4) < 0.6
        active[t % 4] = t % 5 != 0  # every env idles on some steps and steps on others; some steps none idle
        before_g, before_b = g.get_snapshots(), b.get_snapshots()
        obs_before = np.stack([s["obs"] for s in before_b])  # what an idle env must report
        a = rng.uniform(b.action_low, b.action_high, size=(4, b.act_dim))
        ref, got = g.step(a, active), b.step(a, active)
        _assert_step_equal(ref, got, t)
        idle = np.flatnonzero(~active)
        for i in idle:
            for before, now in ((before_g, g.get_snapshots()), (before_b, b.get_snapshots())):
                assert np.array_equal(before[i]["physics"], now[i]["physics"])
                assert before[i]["elapsed_steps"] == now[i]["elapsed_steps"] and before[i]["rng"] == now[i]["rng"]
        np.testing.assert_array_equal(got[0][idle], obs_before[idle])
        assert not got[1][idle].any() and not (got[2] | got[3])[idle].any()
        ends += int((got[2] | got[3]).sum())
    assert ends > 0  # autoresets happened under the mask
    _assert_same_physics(g, b)
    with pytest.raises(ValueError, match="active of shape"):
        b.step(a, np.ones(3, bool))
    g.close(), b.close()


def test_async_steps_every_env_but_idle_ones_report_nothing():
    g = VecEnv("Hopper-v5", 2, "async")
    obs0 = g.reset(seed=1)
    active = np.array([True, False])
    obs, rew, term, trunc, final = g.step(np.zeros((2, g.act_dim)), active)
    np.testing.assert_array_equal(obs[1], obs0[1])
    assert rew[1] == 0.0 and not term[1] and not trunc[1] and rew[0] != 0.0 and not np.array_equal(obs[0], obs0[0])
    g.close()


def test_env_kwargs_reach_the_task():
    kw = dict(max_episode_steps=40, ctrl_cost_weight=0.5, healthy_z_range=(0.9, 2.0), reset_noise_scale=0.05,
              terminate_when_unhealthy=True, exclude_current_positions_from_observation=False)
    g, b = _pair("Walker2d-v5", 2, **kw)
    assert b.obs_dim == g.obs_dim == 18
    np.testing.assert_array_equal(b.reset(seed=5), g.reset(seed=5))
    nterm, _ = _run(g, b, 60, np.random.default_rng(2))
    assert nterm > 0


@pytest.mark.parametrize("env_id", ["Hopper-v5", "InvertedDoublePendulum-v5", "Ant-v5", "Humanoid-v5"])
def test_snapshots_move_between_backends(env_id):
    """A gymnasium snapshot restored into the batched env (and back) gives the same next steps
    as gymnasium restoring it.  (Restored, not merely continued: after mj_step MuJoCo's derived
    fields, e.g. the xpos/xipos that Ant's/Humanoid's velocity reward starts from, lag one substep
    behind the state, and a restore's mj_forward makes them current, in either backend.)"""
    g, b = _pair(env_id, 3, max_episode_steps=30)
    g.reset(seed=9)
    b.reset(seed=100)  # somewhere else entirely
    rng = np.random.default_rng(3)
    for _ in range(12):
        g.step(rng.uniform(g.action_low, g.action_high, size=(3, g.act_dim)))
    snaps = g.get_snapshots()
    obs = b.set_snapshots(snaps)
    np.testing.assert_array_equal(obs, np.stack([s["obs"] for s in snaps]))
    np.testing.assert_array_equal(g.set_snapshots(snaps), obs)
    _assert_same_physics(g, b)
    _run(g, b, 40, rng)  # crosses the time limit: restored RNGs and step counters agree too
    back = b.get_snapshots()
    assert set(back[0]) == set(snaps[0]) and back[0]["physics"].dtype == snaps[0]["physics"].dtype
    g.reset(seed=1)
    np.testing.assert_array_equal(g.set_snapshots(back), np.stack([s["obs"] for s in back]))
    np.testing.assert_array_equal(b.set_snapshots(back), np.stack([s["obs"] for s in back]))
    _run(g, b, 20, rng)
    g.close(), b.close()


def test_one_snapshot_into_a_group():
    """GRPO's use: one start state into all G envs without touching their RNGs."""
    g, b = _pair("Hopper-v5", 4)
    g.reset(seed=0), b.reset(seed=0)
    rng = np.random.default_rng(4)
    _run(g, b, 8, rng)
    snap = b.get_snapshots()[1]
    o1, o2 = g.set_snapshots([snap] * 4, restore_rng=False), b.set_snapshots([snap] * 4, restore_rng=False)
    np.testing.assert_array_equal(o1, o2)
    a = rng.uniform(-1, 1, size=(1, 3)).repeat(4, 0)
    ref, got = g.step(a), b.step(a)
    _assert_step_equal(ref, got, 0)
    assert np.all(got[1] == got[1][0]) and np.all(got[0] == got[0][0])  # identical members
    _run(g, b, 15, rng)
    g.close(), b.close()


def test_float32_actions_match_gymnasium():
    g, b = _pair("HalfCheetah-v5", 2)
    g.reset(seed=2), b.reset(seed=2)
    a = np.random.default_rng(5).uniform(-1, 1, size=(2, 6)).astype(np.float32)
    _assert_step_equal(g.step(a), b.step(a), 0)


def test_make_vec_env_dispatch_and_fallback():
    envs = make_vec_env("Swimmer-v5", 2, "batched", max_episode_steps=10)
    assert isinstance(envs, BatchedMujocoVecEnv) and envs.max_episode_steps == 10
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="actions of shape"):
        envs.step(np.zeros((3, 2)))
    envs.close()
    assert not is_supported("CartPole-v1") and not is_supported("Hopper-v4")
    assert not is_supported("Hopper-v5", {"render_mode": "rgb_array"})
    fallback = make_vec_env("InvertedPendulum-v4", 2, "batched")
    assert isinstance(fallback, VecEnv)
    fallback.close()


def test_clip_actions_equals_np_clip():
    env = BatchedMujocoVecEnv("Hopper-v5", 2)
    lo, hi = env.action_low, env.action_high
    a = np.array([[-1.5, -1.0, 0.25], [1.0, 3.0, np.float32(0.999)]], np.float32)
    out = env.clip_actions(a)
    assert out.dtype == np.float64 and np.array_equal(out, np.clip(a, lo, hi))
    assert out.tolist() == [[-1.0, -1.0, 0.25], [1.0, 1.0, float(np.float32(0.999))]]
    env.close()
