"""Vector environments behind one small interface (batched arrays in, batched arrays out).

``VecEnv.step`` returns ``(obs, reward, terminated, truncated, final_obs)``, all
``[N, ...]`` numpy arrays.  Episodes reset in the same step they end (gymnasium's
``AutoresetMode.SAME_STEP``): ``obs`` is then the first observation of the next
episode and ``final_obs`` the last observation of the one that ended (equal to
``obs`` elsewhere), which is what a time-limit bootstrap needs.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from . import models
from .snapshot import SnapshotEnv, SnapshotError

models.install()  # each MuJoCo model compiled once per process, its warnings printed once

__all__ = ["EnvError", "SnapshotError", "VecEnv", "check_env_id", "make_vec_env"]


class EnvError(ValueError):
    """An env id or space this package cannot train on."""


def check_env_id(env_id: str) -> gym.spaces.Box:
    """Validate ``env_id`` (registered, continuous Box actions); returns its action space."""
    try:
        spec = gym.spec(env_id)
    except gym.error.Error as e:
        raise EnvError(f"unknown env id {env_id!r} ({e}); use a registered gymnasium id with "
                       f"continuous actions, e.g. HalfCheetah-v5, Hopper-v5, InvertedPendulum-v5") from None
    env = spec.make() if spec is not None else gym.make(env_id)
    try:
        act, obs = env.action_space, env.observation_space
    finally:
        env.close()
    if not isinstance(act, gym.spaces.Box):
        raise EnvError(f"{env_id} has a {type(act).__name__} action space; ppo_control trains Gaussian "
                       f"policies for continuous Box action spaces only (e.g. MuJoCo v5 tasks)")
    if not isinstance(obs, gym.spaces.Box) or len(obs.shape) != 1:
        raise EnvError(f"{env_id} has observation space {obs}; a flat Box observation is required")
    return act


class VecEnv:
    """gymnasium Sync/Async vector env with SAME_STEP autoreset and snapshot support."""

    def __init__(self, env_id: str, num_envs: int, vectorization: str = "sync",
                 env_kwargs: Optional[dict] = None):
        act_space = check_env_id(env_id)
        kwargs = dict(env_kwargs or {})
        fns = [lambda: SnapshotEnv(gym.make(env_id, **kwargs)) for _ in range(num_envs)]
        mode = AutoresetMode.SAME_STEP  # pinned: final_obs is delivered in the step that ends an episode
        if vectorization == "async":
            self.env = gym.vector.AsyncVectorEnv(fns, autoreset_mode=mode)
        elif vectorization == "sync":
            self.env = gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)
        else:
            raise EnvError(f"vectorization must be 'sync' or 'async' (got {vectorization!r})")
        self.env_id, self.num_envs = env_id, num_envs
        self.vectorization = vectorization  # the backend in use (config.json records it)
        spec = self.env.get_attr("spec")[0]  # the made env's spec honours a max_episode_steps kwarg
        self.max_episode_steps = spec.max_episode_steps if spec is not None else None
        self.obs_dim = int(self.env.single_observation_space.shape[0])
        self.act_dim = int(act_space.shape[0])
        self.action_low = act_space.low.astype(np.float64)
        self.action_high = act_space.high.astype(np.float64)
        self._last_obs = np.zeros((num_envs, self.obs_dim))  # what an idle env reports (step's ``active``)

    def reset(self, seed: Optional[int] = None) -> np.ndarray:
        """-> obs [N, obs_dim]; env i is seeded with seed + i."""
        obs, _ = self.env.reset(seed=seed)
        self._last_obs = np.asarray(obs, np.float64)
        return self._last_obs.copy()

    def step(self, actions: np.ndarray, active: Optional[np.ndarray] = None):
        """actions [N, act_dim] (already clipped) -> obs, reward, terminated, truncated, final_obs.

        ``active`` [N] bool (None = all): with ``sync`` only those envs are stepped, the others are left as
        they are and return their last obs, reward 0 and no end (as the batched backend does); gymnasium's
        ``async`` vector env cannot step a subset, so there every env steps and the idle ones' results are
        replaced the same way (their simulations, unlike the other backends', move on)."""
        if active is not None:
            active = np.asarray(active, bool)
            if active.shape != (self.num_envs,):
                raise ValueError(f"active of shape {active.shape}; {self.num_envs} envs take ({self.num_envs},)")
            if active.all():
                active = None
            elif isinstance(self.env, gym.vector.SyncVectorEnv):
                return self._step_some(actions, active)
        obs, rew, term, trunc, info = self.env.step(actions)
        obs = np.asarray(obs, np.float64)
        final_obs = obs
        done = np.logical_or(term, trunc)
        if done.any():
            final_obs = obs.copy()
            mask = info["_final_obs"]
            final_obs[mask] = np.stack([info["final_obs"][i] for i in np.flatnonzero(mask)])
        rew, term, trunc = np.asarray(rew, np.float64), np.asarray(term, bool), np.asarray(trunc, bool)
        if active is not None:  # async: every env stepped; the idle ones report nothing
            idle = ~active
            obs, final_obs = obs.copy(), final_obs.copy()
            obs[idle] = final_obs[idle] = self._last_obs[idle]
            rew, term, trunc = np.where(idle, 0.0, rew), term & active, trunc & active
        self._last_obs = obs.copy()
        return obs, rew, term, trunc, final_obs

    def _step_some(self, actions: np.ndarray, active: np.ndarray):
        """Sync only: step the envs where ``active``, one by one, with SAME_STEP autoreset as gymnasium's."""
        n = self.num_envs
        obs, final_obs = self._last_obs.copy(), self._last_obs.copy()
        rew, term, trunc = np.zeros(n), np.zeros(n, bool), np.zeros(n, bool)
        for i in np.flatnonzero(active):
            env = self.env.envs[i]
            o, rew[i], term[i], trunc[i], _ = env.step(actions[i])
            final_obs[i] = o
            if term[i] or trunc[i]:
                o, _ = env.reset()
            obs[i] = o
        self._last_obs = obs
        return obs.copy(), rew, term, trunc, final_obs

    def clip_actions(self, actions: np.ndarray) -> np.ndarray:
        return np.clip(actions, self.action_low, self.action_high)

    # --- simulator state -----------------------------------------------------
    def get_snapshots(self) -> List[dict]:
        """One snapshot per env (see ``SnapshotEnv.get_snapshot``)."""
        return list(self.env.call("get_snapshot"))

    def set_snapshots(self, snaps: Sequence[dict], restore_rng: bool = True) -> np.ndarray:
        """Restore env i from ``snaps[i]``; returns the restored obs [N, obs_dim]."""
        if len(snaps) != self.num_envs:
            raise SnapshotError(f"got {len(snaps)} snapshots for {self.num_envs} envs")
        self.env.set_attr("pending_snapshot", list(snaps))
        obs = self.env.call("apply_snapshot", restore_rng)
        self._last_obs = np.stack([np.asarray(o, np.float64) for o in obs])
        return self._last_obs.copy()

    def close(self) -> None:
        self.env.close()


def make_vec_env(env_id: str, num_envs: int, vectorization: str = "sync", nthread: Optional[int] = None,
                 **env_kwargs) -> VecEnv:
    """Build the vector env; ``batched`` uses the native MuJoCo backend where the task is supported
    (``nthread``: its thread-pool size, None = all cores)."""
    if vectorization == "batched":
        from .batched import BatchedMujocoVecEnv, is_supported
        if is_supported(env_id, env_kwargs):
            return BatchedMujocoVecEnv(env_id, num_envs, nthread=nthread, **env_kwargs)
        vectorization = "sync"  # unsupported task: gymnasium's own vector env
    return VecEnv(env_id, num_envs, vectorization, env_kwargs)
