"""Each MuJoCo model compiled once per process: HalfCheetah's settotalmass deprecation is printed once,
however many envs, nothing is written into the working directory, and a copied model steps as a fresh one."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = """
import gymnasium as gym
from ppo_control.envs import check_env_id, make_vec_env
check_env_id("HalfCheetah-v5")
for backend in ("sync", "batched"):
    envs = make_vec_env("HalfCheetah-v5", 3, backend)
    envs.reset(seed=0)
    envs.close()
gym.make("HalfCheetah-v5").close()
"""


def test_a_halfcheetah_run_warns_once_and_writes_nothing_here(tmp_path):
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("settotalmass") == 1 and "settotalmass" not in p.stdout, (p.stdout, p.stderr)
    assert list(tmp_path.iterdir()) == []  # no MUJOCO_LOG.TXT


def test_envs_on_a_copied_model_step_as_on_a_freshly_compiled_one():
    import gymnasium as gym
    import mujoco

    from ppo_control.envs import models
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
