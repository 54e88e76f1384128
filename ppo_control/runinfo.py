"""Provenance recorded beside every run and result: commit, machine, versions."""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


# Tracked paths that hold what the code writes, not the code: a run in progress (or a table command that has
# just rewritten its own output) changes them, and that says nothing about which code produced a result.
DATA_DIRS = ("results/",)


def dirty_paths(porcelain: str) -> list[str]:
    """The changed paths in `git status --porcelain` output (paths relative to the repository root) that are
    code or docs rather than results; a rename counts by its new path."""
    paths = []
    for line in porcelain.splitlines():
        if len(line) < 4:
            continue
        path = line[3:].split(" -> ")[-1].strip('"')
        if not path.startswith(DATA_DIRS):
            paths.append(path)
    return paths


def git_commit(path=None) -> dict:
    """HEAD's sha, and `dirty`: whether any tracked file outside results/ differs from it (results written
    beside the command, such as other runs' metrics, do not count)."""
    path = Path(path or Path(__file__).resolve().parent)
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True,
                             timeout=10).stdout.strip() or None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=path,
                                capture_output=True, text=True, timeout=10)
        dirty = bool(dirty_paths(status.stdout)) if status.returncode == 0 else None
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


SIMD_FLAGS = ("avx512f", "avx2", "avx", "sse4_2")  # widest first


def cpu_id(cpuinfo: str | None = None) -> dict:
    """CPU vendor, family, model number and the widest SIMD extension: two machines that both say "AMD EPYC"
    can differ in all of these, and float results (MuJoCo, torch kernels) differ with them."""
    if cpuinfo is None:
        try:
            cpuinfo = open("/proc/cpuinfo").read()
        except OSError:
            return {}
    fields = {}
    for line in cpuinfo.split("\n\n")[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    flags = set(fields.get("flags", "").split())
    return {"cpu_vendor": fields.get("vendor_id"), "cpu_family": fields.get("cpu family"),
            "cpu_model_number": fields.get("model"), "cpu_simd": next((f for f in SIMD_FLAGS if f in flags), None)}


def environment_info() -> dict:
    import gymnasium
    import mujoco
    import numpy
    import torch
    info = {"python": platform.python_version(), "torch": torch.__version__, "gymnasium": gymnasium.__version__,
            "mujoco": mujoco.__version__, "numpy": numpy.__version__, "platform": platform.platform(),
            "cpu": cpu_model(), **cpu_id(), "cores": os.cpu_count(),
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    info.update(git_commit())
    return info
