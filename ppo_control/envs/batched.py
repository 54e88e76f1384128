"""Native batched MuJoCo vector env: all N simulations stepped by one call into MuJoCo.

``mujoco.batch.Batch`` (MuJoCo >= 4.0) keeps each simulation as its
``mjSTATE_INTEGRATION`` row (the solver warm-start included) and runs ``mj_step``
on a C++ thread pool, bit-identical to a loop over one MjData per simulation.
That row is exactly ``SnapshotEnv``'s ``"physics"``, so snapshots move freely between
this backend and gymnasium's.  Observations, rewards and terminations are computed
for the whole batch with numpy (``batched_tasks``), from the same MjModel and the
same parameters as the gymnasium env built by ``gym.make(env_id, **env_kwargs)``.

Why not ``mujoco.rollout``: it starts every call from ``mjSTATE_FULLPHYSICS``, which
has no warm-start, and returns none; a cold warm-start changes the constraint
solution in the last digits, and in contact-rich tasks that grows to O(1)
differences within ~100 steps (measured for HalfCheetah, Ant, Walker2d), so exact
parity with gymnasium needs the warm-start carried between steps, as Batch does.
"""
from __future__ import annotations

import os
from typing import List, Optional, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding

from .batched_tasks import TASKS, Sim, Task
from .snapshot import SnapshotError

try:
    import mujoco
    import mujoco.batch as mujoco_batch
except ImportError:  # MuJoCo < 4.0 has no mujoco.batch: gymnasium's vector envs are used instead
    mujoco = mujoco_batch = None

__all__ = ["BatchedMujocoVecEnv", "is_supported"]


def is_supported(env_id: str, env_kwargs: Optional[dict] = None) -> bool:
    """True if ``env_id`` has a batched implementation here (any gymnasium kwargs but rendering)."""
    if mujoco_batch is None or env_id not in TASKS:
        return False
    return (env_kwargs or {}).get("render_mode") is None


def default_threads() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class BatchedMujocoVecEnv:
    """Same interface and results as ``VecEnv`` (SAME_STEP autoreset), one native call per step.

    ``nthread`` is the size of MuJoCo's thread pool (default: all cores this process may use, at most one per env).
    ``env_kwargs`` go to ``gym.make`` unchanged (e.g. ``max_episode_steps``, reward weights).
    """

    vectorization = "batched"  # the backend in use (config.json records it)

    def __init__(self, env_id: str, num_envs: int, *, nthread: Optional[int] = None, **env_kwargs):
        if not is_supported(env_id, env_kwargs):
            from . import EnvError
            raise EnvError(f"{env_id} has no batched MuJoCo implementation (supported: {', '.join(TASKS)}; "
                           f"needs mujoco >= 4.0 and no render_mode); use vectorization='sync' or 'async'")
        ref = gym.make(env_id, **env_kwargs)
        u = ref.unwrapped
        self.task: Task = TASKS[env_id](u)
        self.env_id, self.num_envs = env_id, num_envs
        self.max_episode_steps = ref.spec.max_episode_steps if ref.spec is not None else None
        self.obs_dim = int(ref.observation_space.shape[0])
        self.act_dim = int(ref.action_space.shape[0])
        self.action_low = ref.action_space.low.astype(np.float64)
        self.action_high = ref.action_space.high.astype(np.float64)
        self.model = u.model
        self.frame_skip, self.dt = int(u.frame_skip), float(u.dt)
        ref.close()

        # a persistent batch keeps each simulation's whole MjData (contacts included) between
        # calls, which mj_rnePostConstraint needs after the step; others share per-thread MjData
        # no more pool threads than envs: with 1 env a second thread only adds dispatch cost (~5%/step, measured)
        self.batch = mujoco_batch.Batch(self.model, num_envs, nthread=nthread or min(num_envs, default_threads()),
                                        persistent=self.task.rne_post_constraint)
        self._qpos, self._qvel, self._ctrl = (self.batch.bind(f) for f in ("qpos", "qvel", "ctrl"))
        self._outputs = {f: self.batch.bind(f) for f in self.task.outputs}
        self._fields = {"qpos": self._qpos, "qvel": self._qvel, "ctrl": self._ctrl, **self._outputs}
        if self.task.rne_post_constraint:
            self._scratch = mujoco.MjData(self.model)
            self._cfrc_ext = np.zeros((num_envs, self.model.nbody, 6))
        # mj_resetData's state as a row: an autoreset writes it with numpy instead of a second native
        # call per step (a thread-pool dispatch costs ~30-120 us on a loaded 2-core machine)
        data = mujoco.MjData(self.model)
        mujoco.mj_resetData(self.model, data)
        self._reset_row = np.empty(self.batch.nstate)
        mujoco.mj_getState(self.model, data, self._reset_row, mujoco.mjtState.mjSTATE_INTEGRATION)
        self._elapsed = np.zeros(num_envs, np.int64)
        self._rngs: List[Optional[np.random.Generator]] = [None] * num_envs
        self._obs = np.zeros((num_envs, self.obs_dim))

    # --- stepping --------------------------------------------------------------
    def reset(self, seed: Optional[int] = None) -> np.ndarray:
        """-> obs [N, obs_dim]; env i is seeded with seed + i, ``None`` continues each env's RNG."""
        seeds = [None] * self.num_envs if seed is None else [seed + i for i in range(self.num_envs)]
        self._obs = self._reset_envs(np.arange(self.num_envs), seeds)
        return self._obs.copy()

    def step(self, actions: np.ndarray, active: Optional[np.ndarray] = None):
        """actions [N, act_dim] (already clipped) -> obs, reward, terminated, truncated, final_obs (all [N, ...]).

        ``active`` [N] bool (None = all): only those simulations are stepped; the others are left exactly
        as they are (state, controls, step count, RNG) and return their last obs, reward 0 and no end."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs, self.act_dim):
            raise ValueError(f"actions of shape {actions.shape}; {self.env_id} x {self.num_envs} envs takes "
                             f"({self.num_envs}, {self.act_dim})")
        ids = None
        if active is not None:
            active = np.asarray(active, bool)
            if active.shape != (self.num_envs,):
                raise ValueError(f"active of shape {active.shape}; {self.num_envs} envs take ({self.num_envs},)")
            if not active.all():
                ids = np.flatnonzero(active).astype(np.int32)
        before = np.array(self.task.position(self._sim()))  # copy: the bound arrays change in the step
        if ids is None:
            self._ctrl[:] = actions
            self.batch.step(nstep=self.frame_skip)
        else:
            self._ctrl[ids] = actions[ids]  # ctrl is part of a snapshot: idle envs keep theirs
            if ids.size:
                self.batch.step(ids, nstep=self.frame_skip)
        sim = self._sim(cfrc_ext=self._rne_cfrc_ext(ids) if self.task.rne_post_constraint else None)
        velocity = (self.task.position(sim) - before) / self.dt
        obs = self.task.observe(sim)
        reward, terminated = self.task.reward(sim, velocity, actions)
        reward, terminated = np.array(reward, np.float64), np.array(terminated, bool)
        if ids is None:
            self._elapsed += 1
        else:
            idle = ~active
            obs[idle], reward[idle], terminated[idle] = self._obs[idle], 0.0, False
            self._elapsed += active
        if self.max_episode_steps is None:
            truncated = np.zeros(self.num_envs, bool)
        else:
            truncated = self._elapsed >= self.max_episode_steps
            if ids is not None:
                truncated &= active
        done = (terminated | truncated).nonzero()[0]  # np.flatnonzero without its wrappers
        final_obs = obs.copy()
        if done.size:
            obs[done] = self._reset_envs(done, [None] * done.size)
        self._obs = obs  # kept for snapshots; the caller gets copies
        out = obs.copy() if done.size else final_obs
        return out, reward, terminated, truncated, final_obs

    def clip_actions(self, actions: np.ndarray) -> np.ndarray:
        # np.clip's definition without its Python wrappers (half its time on a 1-env action, once per step)
        return np.minimum(np.maximum(actions, self.action_low), self.action_high)

    def _sim(self, ids: Optional[np.ndarray] = None, cfrc_ext: Optional[np.ndarray] = None) -> Sim:
        """Batched MjData fields (views of the live arrays), for all envs or the rows ``ids``."""
        fields = self._fields  # the live views, bound once
        if cfrc_ext is not None:
            fields = dict(fields, cfrc_ext=cfrc_ext)
        return fields if ids is None else {k: v[ids] for k, v in fields.items()}

    def _rne_cfrc_ext(self, ids: Optional[np.ndarray] = None) -> np.ndarray:
        """cfrc_ext [N, nbody, 6] as gymnasium has it: mj_rnePostConstraint on the MjData mj_step left.

        The batch itself skips that call, and with RK4 the contacts it needs are those of the last
        Runge-Kutta stage, so the call is made here on a copy of each simulation's MjData (of the envs
        ``ids`` only, where given: the others were not stepped and keep their rows)."""
        for i in (range(self.num_envs) if ids is None else ids):
            self.batch.get_data(i, self._scratch)
            mujoco.mj_rnePostConstraint(self.model, self._scratch)
            self._cfrc_ext[i] = self._scratch.cfrc_ext
        return self._cfrc_ext

    def _rng(self, i: int) -> np.random.Generator:
        if self._rngs[i] is None:  # like gymnasium's lazily created, randomly seeded np_random
            self._rngs[i], _ = seeding.np_random()
        return self._rngs[i]

    def _reset_envs(self, ids: np.ndarray, seeds: Sequence[Optional[int]]) -> np.ndarray:
        """gymnasium's reset for the envs ``ids`` (mj_resetData, reset_model noise, mj_forward) -> obs [len(ids), obs_dim]."""
        self.batch.state[ids] = self._reset_row
        for i, seed in zip(ids, seeds):
            if seed is not None:
                self._rngs[i], _ = seeding.np_random(seed)
            self._qpos[i], self._qvel[i] = self.task.reset_state(self._rng(i))
        self.batch.forward(np.asarray(ids, np.int32))
        self._elapsed[ids] = 0
        return self.task.observe(self._sim(ids))

    # --- simulator state -----------------------------------------------------
    def get_snapshots(self) -> List[dict]:
        """One snapshot per env, in ``SnapshotEnv.get_snapshot``'s format."""
        state = self.batch.state
        return [{"physics": state[i].copy(), "elapsed_steps": int(self._elapsed[i]),
                 "rng": self._rng(i).bit_generator.state, "obs": self._obs[i].copy()}
                for i in range(self.num_envs)]

    def set_snapshots(self, snaps: Sequence[dict], restore_rng: bool = True) -> np.ndarray:
        """Restore env i from ``snaps[i]`` (from either backend); returns the restored obs [N, obs_dim]."""
        if len(snaps) != self.num_envs:
            raise SnapshotError(f"got {len(snaps)} snapshots for {self.num_envs} envs")
        nstate = self.batch.nstate
        physics = [np.asarray(s["physics"], np.float64) for s in snaps]
        for p in physics:
            if p.shape != (nstate,):
                raise SnapshotError(f"snapshot of size {p.shape} does not fit this model ({nstate} numbers): "
                                    f"it comes from another env")
        self.batch.state[:] = np.stack(physics)
        self.batch.forward()  # derived fields of the restored state, as SnapshotEnv's mj_forward
        for i, s in enumerate(snaps):
            self._elapsed[i] = int(s["elapsed_steps"])
            if restore_rng:
                self._rng(i).bit_generator.state = s["rng"]
            self._obs[i] = np.asarray(s["obs"], np.float64)
        return self._obs.copy()

    def close(self) -> None:
        self.batch = None
