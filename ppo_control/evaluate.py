"""Trained policies as plain callables, and deterministic evaluation."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import gymnasium as gym
import numpy as np
import torch

from .checkpoint import CHECKPOINT_NAME, CheckpointError, check_belongs, load_checkpoint, load_module_state
from .config import Config, ConfigError
from .envs import EnvError, check_env_id
from .networks import GaussianPolicy, make_policy
from .normalize import ObsNormalizer


class Policy:
    """Maps raw observations to actions: normalise with the saved statistics, run the
    policy (mean action, or a sample with ``deterministic=False``), clip to the bounds."""

    def __init__(self, net: GaussianPolicy, obs_norm: ObsNormalizer, low: np.ndarray, high: np.ndarray,
                 config: Optional[Config] = None):
        # no .eval(): the MLPs have no dropout or batch-norm, and the training loop shares this net
        self.net, self.obs_norm, self.low, self.high, self.config = net, obs_norm, low, high, config

    @torch.inference_mode()
    def __call__(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        """obs [obs_dim] or [B, obs_dim] -> action [act_dim] or [B, act_dim]."""
        obs = np.asarray(obs, np.float64)
        single = obs.ndim == 1
        device = self.net.log_std.device  # the training loop's networks may be on a GPU
        x = torch.from_numpy(self.obs_norm(obs[None] if single else obs)).to(device)
        a = self.net(x) if deterministic else self.net.dist(x).sample()
        a = np.clip(a.cpu().numpy().astype(np.float64), self.low, self.high)
        return a[0] if single else a


def read_run_record(run_dir) -> Optional[dict]:
    """A run directory's ``config.json`` (None where there is none)."""
    path = Path(run_dir) / "config.json"
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        return record
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path} is unreadable ({e}); restore it from a backup or move it aside") from None


def load_policy(run_dir) -> Policy:
    """Load the policy of a run directory (or a checkpoint file) onto the CPU.

    A checkpoint inside a run directory must belong to that run (``checkpoint.check_belongs``).
    """
    path = Path(run_dir)
    st = load_checkpoint(path)
    ckpt = path / CHECKPOINT_NAME if path.is_dir() else path
    check_belongs(st, read_run_record(ckpt.parent), ckpt)
    cfg = Config.from_saved(st["config"])
    act_space = check_env_id(cfg.env_id)
    obs_dim = int(st["obs_norm"]["mean"].shape[0])
    net = make_policy(cfg, obs_dim, int(act_space.shape[0]))
    load_module_state(net, st["policy"], "policy", path)
    norm = ObsNormalizer((obs_dim,), cfg.obs_clip, cfg.norm_obs)
    try:
        norm.load_state_dict(st["obs_norm"])
    except (KeyError, ValueError) as e:
        raise CheckpointError(f"{path}: observation normaliser does not fit: {e}") from None
    return Policy(net, norm, act_space.low.astype(np.float64), act_space.high.astype(np.float64), cfg)


def evaluate(policy: Policy, env_id: str, episodes: int = 10, seed: int = 10_000,
             deterministic: bool = True, video_path: Optional[str] = None) -> dict:
    """Run ``episodes`` full episodes; returns mean/std/min/max return and the per-episode lists.

    ``video_path`` records the first episode (needs a working MuJoCo renderer, e.g.
    ``MUJOCO_GL=egl`` or ``osmesa``; .mp4 is encoded by imageio-ffmpeg's own ffmpeg, .gif by pillow).
    On the env the policy was trained on, the run's ``env_kwargs`` apply here too.
    """
    if episodes < 1:
        raise ConfigError(f"episodes must be >= 1 (got {episodes})")
    if video_path:
        video_writer(video_path)  # refuse before the episodes run, not after
    env = _make_eval_env(policy, env_id, video_path)
    frames, returns, lengths = [], [], []
    try:
        for ep in range(episodes):
            obs, _ = env.reset(seed=seed + ep)
            done, ret, n = False, 0.0, 0
            while not done:
                obs, r, term, trunc, _ = env.step(policy(obs, deterministic))
                ret, n, done = ret + float(r), n + 1, term or trunc
                if video_path and ep == 0:
                    frames.append(_render(env))
            returns.append(ret)
            lengths.append(n)
    finally:
        env.close()
    if video_path:
        write_video(video_path, frames, int(env.metadata.get("render_fps", 30)))
    r = np.asarray(returns)
    return {"episodes": episodes, "mean_return": float(r.mean()), "std_return": float(r.std()),
            "min_return": float(r.min()), "max_return": float(r.max()), "returns": returns,
            "lengths": lengths, "deterministic": deterministic, "seed": seed}


def video_writer(path: str):
    """The imageio module that writes ``path``; one line naming .gif when .mp4 has no encoder."""
    import imageio
    if str(path).lower().endswith(".mp4"):
        try:
            import imageio_ffmpeg  # noqa: F401 (ships its own ffmpeg binary)
        except ImportError:
            raise ConfigError(f"{path}: writing .mp4 needs imageio-ffmpeg (pip install imageio-ffmpeg); "
                              f"or give a .gif path") from None
    return imageio


def write_video(path: str, frames, fps: int) -> Path:
    """``frames`` ([H, W, 3] uint8 each) to ``path``, .mp4 (H.264) or .gif."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    video_writer(path).mimsave(path, list(frames), fps=fps)
    return path


def _make_eval_env(policy: Policy, env_id: str, video_path: Optional[str]):
    """``env_id`` made as in training (with the run's env_kwargs when it is the trained env), refused with
    one line when its observation or action size is not the policy's."""
    act_space = check_env_id(env_id)
    cfg = policy.config
    kwargs = getattr(cfg, "env_kwargs_dict", {}) if cfg is not None and env_id == cfg.env_id else {}
    env = gym.make(env_id, render_mode="rgb_array" if video_path else None, **kwargs)
    obs_dim, act_dim = int(np.prod(env.observation_space.shape)), int(np.prod(act_space.shape))
    want_obs, want_act = int(policy.obs_norm.rms.mean.shape[0]), int(np.asarray(policy.low).shape[0])
    if (obs_dim, act_dim) != (want_obs, want_act):
        env.close()
        trained = f" (trained on {cfg.env_id})" if cfg is not None else ""
        raise EnvError(f"{env_id} has {obs_dim} observations and {act_dim} actions but the policy{trained} "
                       f"takes {want_obs} and gives {want_act}; evaluate on an env with the same sizes")
    return env


def _render(env):
    try:
        return env.render()
    except Exception as e:  # no GL context on a headless machine
        raise RuntimeError(f"rendering failed ({type(e).__name__}: {e}); set MUJOCO_GL=egl (GPU) or "
                           f"MUJOCO_GL=osmesa (CPU, needs libosmesa) or drop --video") from None
