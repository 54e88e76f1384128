"""Provenance recorded beside every run and result: commit, machine, versions."""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


def git_commit(path=None) -> dict:
    path = Path(path or Path(__file__).resolve().parent)
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True,
                             timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=path,
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        sha, dirty = None, None
    return {"commit": sha, "dirty": dirty}


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment_info() -> dict:
    import gymnasium
    import mujoco
    import numpy
    import torch
    info = {"python": platform.python_version(), "torch": torch.__version__, "gymnasium": gymnasium.__version__,
            "mujoco": mujoco.__version__, "numpy": numpy.__version__, "platform": platform.platform(),
            "cpu": cpu_model(), "cores": os.cpu_count(),
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    info.update(git_commit())
    return info
