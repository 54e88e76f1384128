"""Snapshot and restore of a MuJoCo env's full simulator state.

The state is MuJoCo's ``mjSTATE_INTEGRATION`` signature (time, qpos, qvel, act,
ctrl, applied forces, mocap, userdata and the solver warm-start): everything
``mj_step`` reads, so restoring it and replaying the same actions reproduces the
trajectory bit for bit.  The observation for the state is stored beside it,
because some MuJoCo observations come from quantities computed during the
previous step and cannot be recomputed from the state alone.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np

try:
    import mujoco
    _SIG = int(mujoco.mjtState.mjSTATE_INTEGRATION)
except ImportError:  # pragma: no cover - mujoco is a hard dependency
    mujoco = None
    _SIG = 0


class SnapshotError(RuntimeError):
    """The env's state cannot be captured or restored."""


def _time_limit(env: gym.Env):
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            return env
        env = env.env
    return None


class SnapshotEnv(gym.Wrapper):
    """Outermost wrapper that can capture/restore the simulator state.

    Vector envs reach it by name: ``call("get_snapshot")`` and
    ``set_attr("pending_snapshot", [...])`` + ``call("apply_snapshot", restore_rng)``,
    which works the same for sync and async vector envs.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.last_obs = None
        self.pending_snapshot = None

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.last_obs = obs
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.last_obs = obs
        return obs, reward, terminated, truncated, info

    def _mj(self):
        u = self.env.unwrapped
        if mujoco is None or not (hasattr(u, "model") and hasattr(u, "data")
                                  and isinstance(getattr(u, "model"), mujoco.MjModel)):
            raise SnapshotError(
                f"{self.env.spec.id if self.env.spec else type(u).__name__} is not MuJoCo-based, so its "
                f"simulator state cannot be saved/restored; GRPO shared start states and exact resume "
                f"need a gymnasium MuJoCo env (e.g. Hopper-v5)")
        return u.model, u.data

    def get_snapshot(self) -> dict:
        """Full simulator state, time-limit counter, env RNG state and current observation."""
        model, data = self._mj()
        physics = np.empty(mujoco.mj_stateSize(model, _SIG), np.float64)
        mujoco.mj_getState(model, data, physics, _SIG)
        tl = _time_limit(self.env)
        return {"physics": physics,
                "elapsed_steps": int(tl._elapsed_steps or 0) if tl is not None else 0,
                "rng": self.env.unwrapped.np_random.bit_generator.state,
                "obs": np.array(self.last_obs, copy=True)}

    def set_snapshot(self, snap: dict, restore_rng: bool = True):
        """Put the env into ``snap``'s state; returns that state's observation."""
        model, data = self._mj()
        physics = np.asarray(snap["physics"], np.float64)
        if physics.shape != (mujoco.mj_stateSize(model, _SIG),):
            raise SnapshotError(f"snapshot of size {physics.shape} does not fit this model "
                                f"({mujoco.mj_stateSize(model, _SIG)} numbers): it comes from another env")
        mujoco.mj_setState(model, data, physics, _SIG)
        mujoco.mj_forward(model, data)
        tl = _time_limit(self.env)
        if tl is not None:
            tl._elapsed_steps = int(snap["elapsed_steps"])
        if restore_rng:
            self.env.unwrapped.np_random.bit_generator.state = snap["rng"]
        self.last_obs = np.array(snap["obs"], copy=True)
        return self.last_obs

    def apply_snapshot(self, restore_rng: bool = True):
        snap, self.pending_snapshot = self.pending_snapshot, None
        if snap is None:
            raise SnapshotError("apply_snapshot called without a pending snapshot")
        return self.set_snapshot(snap, restore_rng)
