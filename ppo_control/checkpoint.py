"""Atomic checkpoint files, loaded with ``weights_only=True``.

A checkpoint is a plain dict of tensors and Python primitives (no pickled
objects), so loading it never executes code from the file.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

FORMAT = "ppo_control/checkpoint-v1"
CHECKPOINT_NAME = "checkpoint.pt"


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupted, or does not fit the run."""


def _atomic_write(path: Path, write) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path, obj: Any) -> None:
    _atomic_write(Path(path), lambda f: f.write((json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()))


def save_checkpoint(path, state: dict) -> None:
    """Write ``state`` (with the format tag added) atomically: a crash mid-write keeps the old file."""
    state = dict(state, format=FORMAT)
    _atomic_write(Path(path), lambda f: torch.save(state, f))


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
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{path} is not a {FORMAT} checkpoint (found {found!r})")
    return state


def load_module_state(module: torch.nn.Module, sd: dict, what: str, path="checkpoint") -> None:
    """load_state_dict with a message that says which part does not match."""
    try:
        module.load_state_dict(sd)
    except RuntimeError as e:
        raise CheckpointError(f"the {what} in {path} does not match this configuration "
                              f"(different env or network sizes?): {str(e).splitlines()[0]}") from None
