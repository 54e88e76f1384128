"""Each MuJoCo model compiled once per process: HalfCheetah's settotalmass deprecation is printed once,
however many envs, nothing is written into the working directory, and a copied model steps as a fresh one."""
import gymnasium as gym
import numpy as np

from ppo_control.envs import check_env_id, make_vec_env, models


def test_a_halfcheetah_run_warns_once_and_writes_nothing_here(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(models, "_models", {})  # as in a fresh process
    monkeypatch.setattr(models, "_printed", set())
    check_env_id("HalfCheetah-v5")
    for backend in ("sync", "batched"):
        envs = make_vec_env("HalfCheetah-v5", 3, backend)
        envs.reset(seed=0)
        envs.close()
    gym.make("HalfCheetah-v5").close()
    out, err = capfd.readouterr()  # MuJoCo's own handler prints from C, to the process's stdout
    assert err.count("settotalmass") == 1 and "settotalmass" not in out, (out, err)
    assert list(tmp_path.iterdir()) == []  # no MUJOCO_LOG.TXT


def test_envs_on_a_copied_model_step_as_on_a_freshly_compiled_one():
    import mujoco
    a, b = gym.make("Hopper-v5"), gym.make("Hopper-v5")  # b (at least) gets a copy of the cached model
    fresh = mujoco.MjModel.from_xml_path(a.unwrapped.fullpath)
    assert a.unwrapped.fullpath in models._models
    for name in ("body_mass", "body_inertia", "geom_size", "dof_damping", "actuator_gear"):
        assert np.array_equal(getattr(b.unwrapped.model, name), getattr(fresh, name)), name
    assert b.unwrapped.model is not a.unwrapped.model
    oa, _ = a.reset(seed=3)
    ob, _ = b.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(50):
        act = rng.uniform(-1, 1, size=3)
        oa, ra, *_ = a.step(act)
        ob, rb, *_ = b.step(act)
    assert np.array_equal(oa, ob) and ra == rb
