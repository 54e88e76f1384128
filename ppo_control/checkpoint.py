"""Atomic checkpoint files, loaded with ``weights_only=True``.

A checkpoint is a plain dict of tensors and Python primitives (no pickled
objects), so loading it never executes code from the file.
"""
from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

# Version 2: what an algorithm carries is one "algorithm" entry (Algorithm.state_dict()). Version 1
# (until the algorithm interface) kept GRPO's reference policy in "ref_policy" and its start-state pool
# and branch trunks in "extra"; load_checkpoint upgrades those, so old runs resume unchanged.
FORMAT_VERSION = 2
FORMAT = f"ppo_control/checkpoint-v{FORMAT_VERSION}"
_READABLE = {f"ppo_control/checkpoint-v{v}": v for v in range(1, FORMAT_VERSION + 1)}
CHECKPOINT_NAME = "checkpoint.pt"


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupted, or does not fit the run."""


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


# mkstemp makes 0600 files; run outputs get the mode any other new file would (0644 under umask 022)
_FILE_MODE = 0o666 & ~_umask()


class _WriteErrors:
    """A file whose failed writes are remembered: torch.save reports a full disk as "[enforce fail at
    inline_container.cc] unexpected pos ...", and the OSError it swallowed says what happened."""

    def __init__(self, f):
        self.f, self.error = f, None

    def write(self, data):
        try:
            return self.f.write(data)
        except OSError as e:
            self.error = e
            raise

    def __getattr__(self, name):
        return getattr(self.f, name)


def _atomic_write(path: Path, write) -> None:
    """``write(f)`` into a temporary file beside ``path``, then rename it over ``path``: a crash or a full
    disk mid-write keeps the old file. A full disk raises OSError(ENOSPC) naming ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    f = None
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as raw:
            f = _WriteErrors(raw)
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        err = e if isinstance(e, OSError) else getattr(f, "error", None)
        if err is not None and err.errno == errno.ENOSPC:
            raise OSError(errno.ENOSPC, "no space left on device", str(path)) from None
        raise


def atomic_write_json(path, obj: Any) -> None:
    _atomic_write(Path(path), lambda f: f.write((json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()))


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (reports and tables: a crash mid-write keeps the old file)."""
    _atomic_write(Path(path), lambda f: f.write(text.encode()))


def atomic_write_bytes(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (figures: a crash mid-write keeps the old file)."""
    _atomic_write(Path(path), lambda f: f.write(data))


def save_checkpoint(path, state: dict) -> None:
    """Write ``state`` (with the format tag added) atomically: a crash mid-write keeps the old file."""
    state = dict(state, format=FORMAT)
    _atomic_write(Path(path), lambda f: torch.save(state, f))


def to_tensors(x):
    """numpy arrays -> tensors, recursively, copied (checkpoints hold no pickled numpy objects)."""
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x.copy())
    if isinstance(x, dict):
        return {k: to_tensors(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_tensors(v) for v in x]
    return x


def to_arrays(x):
    """The inverse of ``to_tensors``: tensors -> numpy arrays, recursively, copied."""
    if isinstance(x, torch.Tensor):
        return x.numpy().copy()
    if isinstance(x, dict):
        return {k: to_arrays(v) for k, v in x.items()}
    if isinstance(x, list):
        return [to_arrays(v) for v in x]
    return x


def _upgrade(state: dict, version: int) -> dict:
    """A checkpoint of an older format version in today's layout (the content is the same)."""
    if version == 1:
        state = dict(state)
        algorithm = dict(state.pop("extra", None) or {})
        ref = state.pop("ref_policy", None)
        if ref is not None:
            algorithm["ref_policy"] = ref
        state["algorithm"] = algorithm
    return dict(state, format=FORMAT)


def load_checkpoint(path, map_location="cpu") -> dict:
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    if not path.exists():
        raise CheckpointError(f"no checkpoint at {path}; pass a run directory that holds {CHECKPOINT_NAME}")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # truncated file, wrong format, unsafe pickle ...
        raise CheckpointError(f"checkpoint {path} is corrupted or not a ppo_control checkpoint "
                              f"({type(e).__name__}: {str(e).splitlines()[0][:200]}); "
                              f"delete it to start over or restore a backup") from None
    if not isinstance(state, dict) or state.get("format") not in _READABLE:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{path} is not a ppo_control checkpoint of format version 1 to {FORMAT_VERSION} "
                              f"(found {found!r})")
    return _upgrade(state, _READABLE[state["format"]])


def load_module_state(module: torch.nn.Module, sd: dict, what: str, path="checkpoint") -> None:
    """load_state_dict with a message that says which part does not match."""
    try:
        module.load_state_dict(sd)
    except RuntimeError as e:
        raise CheckpointError(f"the {what} in {path} does not match this configuration "
                              f"(different env or network sizes?): {str(e).splitlines()[0]}") from None


# Identity: which run a checkpoint belongs to ----------------------------------------------------
# Written into config.json when a run starts and into every checkpoint, and compared before a
# resume or an evaluation touches anything, so a checkpoint copied into another run's directory is
# refused instead of silently replacing that run's config and metrics.
_LEGACY_KEYS = ("env_id", "algo", "num_envs", "hidden_sizes", "actor_hidden_sizes", "critic_hidden_sizes",
                "activation", "layer_norm")


def run_identity(run_id: str, config: dict, obs_dim: int, policy: dict, critic) -> dict:
    """run id, env id, algorithm, observation size and every network tensor's shape.

    ``policy``/``critic`` are state dicts (tensors) or already ``{name: shape}`` dicts.
    """
    shapes = lambda sd: None if sd is None else {k: list(getattr(v, "shape", v)) for k, v in sd.items()}  # noqa: E731
    return {"run_id": run_id, "env_id": config["env_id"], "algo": config["algo"], "obs_dim": int(obs_dim),
            "policy": shapes(policy), "critic": shapes(critic)}


def checkpoint_identity(state: dict) -> dict:
    """The identity a checkpoint carries (run_id None for checkpoints written before run ids)."""
    ident = state.get("identity")
    if ident is not None:
        return ident
    return run_identity(None, state["config"], state["obs_norm"]["mean"].shape[0], state["policy"], state.get("critic"))


def check_belongs(state: dict, record, path) -> None:
    """Refuse a checkpoint that is not the run's own: ``record`` is the run's config.json (None: no record).

    Compares the identities (run id first, then env id, algorithm, sizes); for runs from before
    run ids, the config fields that define the networks and envs.
    """
    if not record:
        return
    mine, theirs = checkpoint_identity(state), record.get("identity")
    if theirs is None:  # a run directory written before identities: compare what the configs define
        mine = {k: state["config"].get(k) for k in _LEGACY_KEYS}
        theirs = {k: record.get("config", {}).get(k) for k in _LEGACY_KEYS}
    elif mine.get("run_id") is None:
        theirs = dict(theirs, run_id=None)
    for key in ("env_id", "algo", "run_id", *sorted(set(mine) | set(theirs))):
        if mine.get(key) != theirs.get(key):
            a, b = mine.get(key), theirs.get(key)
            what = (f"{key} {a!r}, the run's config.json {b!r}" if not isinstance(a, dict)
                    else f"{key} network shapes differ from the run's config.json")
            raise CheckpointError(f"{path} does not belong to the run in {Path(path).parent}: the checkpoint has "
                                  f"{what}; nothing was changed (put the run's own checkpoint back, or resume/"
                                  f"evaluate the run the checkpoint came from)")
