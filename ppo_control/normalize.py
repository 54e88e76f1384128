"""Running statistics for observation normalisation and reward scaling.

They belong to the agent state: saved in checkpoints and used at evaluation,
unlike env wrappers whose statistics vanish when the env is rebuilt.
"""
from __future__ import annotations

import math

import numpy as np
import torch


def _clip(x: np.ndarray, c: float) -> np.ndarray:
    """np.clip(x, -c, c) by its definition, in place, without np.clip's Python wrappers (half its cost on
    the 1-env classic preset, where both normalisers run once per env step)."""
    return np.minimum(np.maximum(x, -c, out=x), c, out=x)


class RunningMeanStd:
    """Mean/variance of a stream of arrays of shape ``shape`` (parallel-variance update, float64)."""

    def __init__(self, shape=(), epsilon: float = 1e-4):
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = float(epsilon)

    def update(self, x: np.ndarray) -> None:
        """x [B, *shape]."""
        x = np.asarray(x, np.float64)
        n = x.shape[0]
        # np.add.reduce instead of x.mean/x.var: this runs twice per env step, and the
        # methods' Python wrappers cost more than the arithmetic for a handful of envs
        if n == 1:  # the batch's own spread is 0: the general formula without its "+ 0"
            self._fold_one(x[0])
            return
        b_mean = np.add.reduce(x, 0) / n
        d = x - b_mean
        b_m2 = np.add.reduce(d * d, 0)
        delta = b_mean - self.mean
        tot = self.count + n
        self.mean = self.mean + delta * (n / tot)
        self.var = (self.var * self.count + b_m2 + delta * delta * (self.count * n / tot)) / tot
        self.count = tot

    def update_scalar(self, x: float) -> None:
        """``update(np.array([x]))`` for a scalar stream (shape ``()``), in Python floats: the same IEEE double
        arithmetic in the same order, without numpy's per-call cost (the 1-env reward scaler, every env step)."""
        self.mean, self.var = float(self.mean), float(self.var)  # 0-d arrays after a checkpoint load
        self._fold_one(x)

    def _fold_one(self, x) -> None:
        """Fold one sample ``x`` (an array of ``shape``, or a float with float statistics) into the statistics."""
        delta = x - self.mean
        tot = self.count + 1
        self.mean = self.mean + delta * (1 / tot)
        self.var = (self.var * self.count + delta * delta * (self.count / tot)) / tot
        self.count = tot

    def state_dict(self) -> dict:
        return {"mean": torch.from_numpy(np.array(self.mean, np.float64)),
                "var": torch.from_numpy(np.array(self.var, np.float64)),
                "count": self.count}

    def load_state_dict(self, d: dict) -> None:
        mean, var = np.array(d["mean"].numpy()), np.array(d["var"].numpy())
        if mean.shape != self.mean.shape:
            raise ValueError(f"normaliser shape {mean.shape} does not match {self.mean.shape}")
        self.mean, self.var, self.count = mean.astype(np.float64), var.astype(np.float64), float(d["count"])


class ObsNormalizer:
    """(obs - mean) / sqrt(var + eps), clipped; ``enabled=False`` makes it a float32 cast."""

    def __init__(self, shape, clip: float = 10.0, enabled: bool = True, eps: float = 1e-8):
        self.rms = RunningMeanStd(shape)
        self.clip, self.enabled, self.eps = clip, enabled, eps

    def __call__(self, obs: np.ndarray, update: bool = False) -> np.ndarray:
        """obs [B, obs_dim] -> float32 [B, obs_dim]; ``update`` folds obs into the statistics first."""
        if not self.enabled:
            return np.asarray(obs, np.float32)
        if update:
            self.rms.update(obs)
        out = (obs - self.rms.mean) / np.sqrt(self.rms.var + self.eps)
        return _clip(out, self.clip).astype(np.float32)

    def state_dict(self) -> dict:
        return self.rms.state_dict()

    def load_state_dict(self, d: dict) -> None:
        self.rms.load_state_dict(d)


class RewardScaler:
    """Divide rewards by the running std of the discounted return, then clip.

    The per-env discounted return restarts at every episode boundary
    (terminated or truncated).
    """

    def __init__(self, num_envs: int, gamma: float, clip: float = 10.0, enabled: bool = True,
                 eps: float = 1e-8):
        self.rms = RunningMeanStd(())
        self.returns = np.zeros(num_envs, np.float64)
        self.gamma, self.clip, self.enabled, self.eps = gamma, clip, enabled, eps

    def __call__(self, reward: np.ndarray, done: np.ndarray) -> np.ndarray:
        """reward [N], done [N] (episode ended at this step) -> scaled float32 [N]."""
        if not self.enabled:
            return np.asarray(reward, np.float32)
        if self.returns.shape == (1,):  # one env: the same arithmetic on Python floats (RunningMeanStd.update_scalar)
            ret = float(self.returns[0]) * self.gamma + float(reward[0])
            self.rms.update_scalar(ret)
            self.returns[0] = 0.0 if done[0] else ret
            r = float(reward[0]) / math.sqrt(self.rms.var + self.eps)
            return np.array([min(max(r, -self.clip), self.clip)], np.float32)
        self.returns = self.returns * self.gamma + reward
        self.rms.update(self.returns)
        self.returns[done] = 0.0
        out = reward / np.sqrt(self.rms.var + self.eps)
        return _clip(out, self.clip).astype(np.float32)

    def state_dict(self) -> dict:
        return {"rms": self.rms.state_dict(), "returns": torch.from_numpy(self.returns.copy())}

    def load_state_dict(self, d: dict) -> None:
        self.rms.load_state_dict(d["rms"])
        returns = d["returns"].numpy().astype(np.float64)
        if returns.shape == self.returns.shape:
            self.returns = returns
