"""Everything a run holds between iterations, and its exact capture/restore.

``TrainState.capture()`` is a detached copy of the whole state at an iteration
boundary: networks, optimizer, normalisers, RNGs (torch, minibatch generator,
each env's own RNG), the simulator state of every env, episode counters and
step counters.  Restoring it and continuing gives the same numbers as never
having stopped.
"""
from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np
import torch

from . import algorithms
from .algorithms import Algorithm
from .checkpoint import CheckpointError, load_module_state, to_arrays, to_tensors
from .config import Config, ConfigError
from .critic_process import CriticProcess, run_plans
from .envs import SnapshotError, VecEnv, make_vec_env
from .flat import no_dynamo_import
from .networks import GaussianPolicy, ValueNet, make_critic, make_policy
from .normalize import ObsNormalizer, RewardScaler
from .rollout import RolloutState
from .update import make_optimizer


def resolve_device(name: str) -> torch.device:
    # auto = the CPU: collection calls the policy once per env step, and for the MLP sizes of the
    # presets a GPU's launch and transfer latency per call costs more than it saves (README, "GPU")
    if name == "auto":
        return torch.device("cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(f"device={name!r} but CUDA is not available here; use --device cpu or auto")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise ConfigError(f"device={name!r} but this machine has {torch.cuda.device_count()} CUDA device(s) "
                              f"(cuda:0 to cuda:{torch.cuda.device_count() - 1})")
    return torch.device(name)


def _to_cpu(x):
    """A detached CPU copy of a (nested) state dict, e.g. an optimizer's on a GPU."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().clone()
    if isinstance(x, dict):
        return {k: _to_cpu(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_cpu(v) for v in x)
    return copy.deepcopy(x)


@dataclass
class TrainState:
    cfg: Config
    envs: VecEnv
    device: torch.device
    policy: GaussianPolicy
    critic: Optional[ValueNet]  # built where the algorithm uses one (Algorithm.uses_critic)
    algorithm: Algorithm        # the algorithm of cfg.algo, with what it carries (e.g. GRPO's reference policy)
    optimizer: torch.optim.Optimizer
    obs_norm: ObsNormalizer
    rew_scaler: RewardScaler
    rollout: RolloutState
    generator: torch.Generator
    np_rng: np.random.Generator
    iteration: int = 0
    wall_time: float = 0.0
    recent_returns: List[float] = field(default_factory=list)
    compile_plan: Tuple[bool, str] = (False, "")  # update.compile_decision for this run, resolved once
    parallel_plan: Tuple[bool, str] = (False, "")  # critic_process.parallel_critic_decision, resolved once
    critic_process: Optional[CriticProcess] = None  # where the plan is on: runs the critic's half of each update

    @classmethod
    def build(cls, cfg: Config) -> "TrainState":
        if cfg.torch_threads > 0:
            torch.set_num_threads(cfg.torch_threads)
        device = resolve_device(cfg.device)
        algo = algorithms.get(cfg.algo)
        plan, split = run_plans(cfg, device, algo)
        # forked first, while this process runs no thread of its own (the envs may start MuJoCo's)
        worker = CriticProcess() if split[0] else None
        try:
            return cls._build(cfg, device, algo, plan, split, worker)
        except BaseException:
            if worker is not None:
                worker.close()
            raise

    @classmethod
    def _build(cls, cfg: Config, device: torch.device, algo, plan, split, worker) -> "TrainState":
        torch.manual_seed(cfg.seed)
        envs = make_vec_env(cfg.env_id, cfg.num_envs, cfg.vectorization, nthread=cfg.env_threads or None,
                            **cfg.env_kwargs_dict)
        policy = make_policy(cfg, envs.obs_dim, envs.act_dim).to(device)
        critic = make_critic(cfg, envs.obs_dim).to(device) if algo.uses_critic else None
        if plan[0]:
            # a compiled run imports torch._dynamo here, before its run directory and lock exist, as building the
            # optimizer did before eager runs stopped importing it (flat.no_dynamo_import): imported at the first
            # compile instead, a SIGTERM one second after the lock ended the process by SIGINT, not exit 130, in 4
            # of 7 tries of tests/test_rundir.py's stop-during-the-first-compile test (0 of 4 with this import)
            importlib.import_module("torch._dynamo")
        opt = make_optimizer([policy] + ([critic] if critic is not None else []), cfg)
        obs = envs.reset(seed=cfg.seed)
        if algo.needs_snapshots:
            envs.get_snapshots()  # fails fast, with a clear message, where the state cannot be restored
        rs = RolloutState(obs=obs, ep_return=np.zeros(cfg.num_envs), ep_length=np.zeros(cfg.num_envs, np.int64))
        return cls(cfg=cfg, envs=envs, device=device, policy=policy, critic=critic,
                   algorithm=algo.build(cfg, policy, envs), optimizer=opt,
                   obs_norm=ObsNormalizer((envs.obs_dim,), cfg.obs_clip, cfg.norm_obs),
                   rew_scaler=RewardScaler(cfg.num_envs, cfg.gamma, cfg.reward_clip, cfg.norm_reward),
                   rollout=rs, generator=torch.Generator().manual_seed(cfg.seed),
                   np_rng=np.random.default_rng(cfg.seed), compile_plan=plan, parallel_plan=split,
                   critic_process=worker)

    def close(self) -> None:
        """Close the envs and end the critic's process (a run's end, however it ends)."""
        try:
            self.envs.close()
        finally:
            if self.critic_process is not None:
                self.critic_process.close()

    def last_return(self) -> float:
        """Mean return of the last 10 training episodes (NaN before the first)."""
        return float(np.mean(self.recent_returns[-10:])) if self.recent_returns else float("nan")

    # ---- capture / restore ----------------------------------------------------
    def capture(self) -> dict:
        """Detached copy of the full state (a checkpoint's content)."""
        cpu = lambda sd: {k: v.detach().cpu().clone() for k, v in sd.items()}  # noqa: E731
        rs = self.rollout
        with no_dynamo_import():
            opt = self.optimizer.state_dict()
        return {
            "config": self.cfg.to_dict(),
            "iteration": self.iteration,
            "global_step": rs.global_step,
            "wall_time": self.wall_time,
            "policy": cpu(self.policy.state_dict()),
            "critic": cpu(self.critic.state_dict()) if self.critic is not None else None,
            "optimizer": _to_cpu(opt),
            "obs_norm": self.obs_norm.state_dict(),
            "rew_scaler": self.rew_scaler.state_dict(),
            "rng": {"torch": torch.get_rng_state(), "generator": self.generator.get_state(),
                    "numpy": self.np_rng.bit_generator.state,
                    "cuda": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else None},
            "rollout": {"obs": torch.from_numpy(rs.obs.copy()), "ep_return": torch.from_numpy(rs.ep_return.copy()),
                        "ep_length": torch.from_numpy(rs.ep_length.copy())},
            "recent_returns": list(self.recent_returns),
            "env_snapshots": to_tensors(self._env_snapshots()),
            "algorithm": self.algorithm.state_dict(),
        }

    def _env_snapshots(self):
        """Simulator states for an exact resume; None for envs that are not MuJoCo-based."""
        try:
            return self.envs.get_snapshots()
        except SnapshotError:
            return None

    def restore(self, st: dict, path="checkpoint") -> None:
        saved = Config.from_saved(st["config"])
        for key in ("env_id", "algo", "num_envs", "actor_sizes", "critic_sizes", "activation", "layer_norm"):
            if getattr(saved, key) != getattr(self.cfg, key):
                raise CheckpointError(f"{path} was written with {key}={getattr(saved, key)!r} but this run "
                                      f"has {key}={getattr(self.cfg, key)!r}; resume with the run's own config")
        load_module_state(self.policy, st["policy"], "policy", path)
        if self.critic is not None:
            load_module_state(self.critic, st["critic"], "critic", path)
        try:
            with no_dynamo_import():
                self.optimizer.load_state_dict(st["optimizer"])
            self.obs_norm.load_state_dict(st["obs_norm"])
            self.rew_scaler.load_state_dict(st["rew_scaler"])
        except (ValueError, KeyError, RuntimeError) as e:
            raise CheckpointError(f"{path} does not match this configuration: {e}") from None
        torch.set_rng_state(st["rng"]["torch"])
        self.generator.set_state(st["rng"]["generator"])
        self.np_rng.bit_generator.state = st["rng"]["numpy"]
        if st["rng"].get("cuda") is not None and self.device.type == "cuda":
            torch.cuda.set_rng_state_all(st["rng"]["cuda"])
        r = st["rollout"]
        self.rollout = RolloutState(obs=r["obs"].numpy().copy(), ep_return=r["ep_return"].numpy().copy(),
                                    ep_length=r["ep_length"].numpy().copy(), global_step=int(st["global_step"]))
        if st.get("env_snapshots") is not None:
            self.envs.set_snapshots(to_arrays(st["env_snapshots"]), restore_rng=True)
        else:  # non-MuJoCo env: no simulator state saved, episodes restart (resume is not bit-exact)
            self.rollout.obs = self.envs.reset(seed=self.cfg.seed + 7919 * int(st["iteration"]))
            self.rollout.ep_return[:] = 0.0
            self.rollout.ep_length[:] = 0
        self.iteration, self.wall_time = int(st["iteration"]), float(st["wall_time"])
        self.recent_returns = list(st.get("recent_returns", []))
        try:
            self.algorithm.load_state_dict(st["algorithm"])
        except CheckpointError as e:
            raise CheckpointError(f"{path}: {e}") from None
