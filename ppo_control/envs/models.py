"""Each MuJoCo model compiled once per process, and MuJoCo's compiler warnings printed once.

gymnasium's MujocoEnv compiles its XML in every env it makes: 64 envs compile HalfCheetah 64 times, and
each compile prints MuJoCo's ``settotalmass`` deprecation and appends it to MUJOCO_LOG.TXT in the working
directory (MuJoCo's default warning handler). Here the first compile of a file runs with a handler that
collects its warnings (so nothing is written to the working directory) and prints each new one once to
stderr; every later env gets a copy of that model (``mj_copyModel``: the same numbers).
"""
from __future__ import annotations

import copy
import sys
import threading

_models: dict = {}
_printed: set = set()
_lock = threading.Lock()


def compiled(path: str):
    """A private copy of the MjModel compiled from ``path``, compiling it on first use."""
    import mujoco
    with _lock:
        if path not in _models:
            caught = []
            previous = mujoco.get_mju_user_warning()
            mujoco.set_mju_user_warning(caught.append)
            try:
                _models[path] = mujoco.MjModel.from_xml_path(path)
            finally:
                mujoco.set_mju_user_warning(previous)
            for message in caught:
                if message not in _printed:
                    _printed.add(message)
                    print(f"MuJoCo warning ({path.rsplit('/', 1)[-1]}): {message}", file=sys.stderr)
        return copy.deepcopy(_models[path])


def _initialize_simulation(self):
    # gymnasium's MujocoEnv._initialize_simulation (1.x), with the compile replaced by a copy
    import mujoco
    model = compiled(self.fullpath)
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, self.width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, self.height)
    return model, mujoco.MjData(model)


def install() -> None:
    """Make gymnasium's MuJoCo envs use ``compiled`` (idempotent; without mujoco, nothing to do)."""
    try:
        from gymnasium.envs.mujoco.mujoco_env import MujocoEnv
    except ImportError:  # pragma: no cover - gymnasium without its mujoco extra
        return
    MujocoEnv._initialize_simulation = _initialize_simulation
