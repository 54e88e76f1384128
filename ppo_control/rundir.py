"""A run directory with exactly one writer.

``create_run_dir`` (a new run) and ``open_run_dir`` (a resume) take an exclusive ``flock`` on
``RUN_DIR/.lock`` and keep it for the life of the run; a second writer stops at once with an
error naming the holder (pid, host, start time, command, written into the lock file). The kernel
drops the lock when the holder exits, however it exits (``kill -9`` included), so there are no
stale locks to clean up; the lock file itself stays.

A start that is refused leaves nothing behind: a directory this process created is removed
again, and so is a lock file it added to an existing directory.
"""
from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import socket
import sys
import warnings
import weakref
from datetime import datetime
from pathlib import Path
from typing import List, Optional

try:
    import fcntl
except ImportError:  # Windows: no flock; runs work, unguarded (README, "Resume, interrupts, failures")
    fcntl = None

LOCK_NAME = ".lock"
_HELD: "weakref.WeakSet[RunLock]" = weakref.WeakSet()  # this process's locks with an open descriptor


class RunDirError(RuntimeError):
    """A run directory that cannot be created, is in use, or holds something else."""


class RunInUseError(RunDirError):
    """A run directory whose lock another live writer holds: the directory is that writer's."""


def default_run_name(env_id: str, algo: str, seed: int) -> str:
    """``ENV__ALGO__sSEED__YYYYmmdd-HHMMSS-xxxx``: the random suffix keeps runs started in the same
    second apart (and ``create_run_dir`` still draws another one if a name is taken)."""
    return f"{env_id}__{algo}__s{seed}__{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def check_out_dir(out_dir) -> None:
    """Refuse an ``out_dir`` that is, or lies under, a file, or that cannot be written, before anything is made."""
    p = Path(out_dir)
    for q in [p, *p.parents]:
        if q.exists():
            if not q.is_dir():
                what = "is a file" if q == p else f"lies under {q}, which is a file"
                raise RunDirError(f"--out-dir {str(out_dir)!r} {what}; choose a directory")
            if not os.access(q, os.W_OK | os.X_OK):
                raise RunDirError(f"--out-dir {str(out_dir)!r}: cannot write in {q} (permission denied); "
                                  f"choose a writable --out-dir")
            return


class RunLock:
    """An exclusive, non-blocking ``flock`` on ``RUN_DIR/.lock`` that records its holder in the file."""

    def __init__(self, run_dir: Path, command: Optional[list] = None):
        self.path, self.command = Path(run_dir) / LOCK_NAME, list(sys.argv if command is None else command)
        self.fd: Optional[int] = None
        self.created, self.previous = False, b""

    def acquire(self) -> "RunLock":
        self.created = not self.path.exists()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # no O_TRUNC: the holder's record stays readable
        if fcntl is None:
            warnings.warn("no fcntl on this platform: the run directory is not locked against a second writer")
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                self.created = False  # the file is the holder's
                raise RunInUseError(f"{self.path.parent} is in use by another writer ({self._holder()}); "
                                  f"wait for it to finish or stop it, then resume") from None
        self.fd = fd
        _HELD.add(self)
        self.previous = os.read(fd, 1 << 16)  # the last holder's record, put back if this start is refused
        record = {"pid": os.getpid(), "host": socket.gethostname(),
                  "started": datetime.now().astimezone().isoformat(timespec="seconds"), "command": self.command}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        return self

    def _holder(self) -> str:
        try:
            h = json.loads(self.path.read_text())
            return (f"pid {h['pid']} on {h['host']}, started {h['started']}: "
                    f"{' '.join(map(str, h.get('command', [])))}")
        except (OSError, ValueError, KeyError, TypeError):
            return "holder not recorded yet"

    def release(self, undo: bool = False) -> None:
        """Drop the lock; ``undo`` (a refused start) leaves the lock file as it was found: removed if
        this process created it, else with the previous holder's record."""
        if self.fd is None:
            return
        if undo and self.created:
            self.path.unlink(missing_ok=True)
        elif undo:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, self.previous, 0)
        os.close(self.fd)  # closing the descriptor releases the flock
        self.fd = None


class RunDir:
    """A locked run directory, and what this process created of it (so a refused start can undo it)."""

    def __init__(self, path: Path, lock: RunLock, created: List[Path]):
        self.path, self.lock, self.created = path, lock, created

    def abandon(self) -> None:
        """Undo a start that is refused: remove what this process made, release the lock."""
        if self.created:
            shutil.rmtree(self.created[0], ignore_errors=True)  # the outermost folder this process made
            self.lock.release()
        else:
            self.lock.release(undo=True)

    def close(self) -> None:
        self.lock.release()


def _mkdirs(path: Path) -> List[Path]:
    """``mkdir -p`` that returns the folders it made (outermost first); a taken leaf raises FileExistsError."""
    made = []
    for q in reversed([path, *path.parents]):
        if q.exists() and q != path:
            continue
        try:
            q.mkdir()
        except FileExistsError:
            if q == path:
                raise
            continue
        made.append(q)
    return made


def create_run_dir(out_dir: str, run_name: Optional[str], default_name, command: Optional[list] = None) -> RunDir:
    """Make and lock ``out_dir/run_name`` for a new run (``default_name()`` when ``run_name`` is None).

    Refused, with nothing left behind, when the folder is locked by another writer or already
    holds a checkpoint (a run to ``--resume``).
    """
    from .checkpoint import CHECKPOINT_NAME
    check_out_dir(out_dir)
    for _ in range(100):
        path = Path(out_dir) / (run_name or default_name())
        try:
            made = _mkdirs(path)
            break
        except FileExistsError:
            if run_name is not None:
                made = []
                break  # an existing folder of that name: checked under its lock below
        except OSError as e:
            raise RunDirError(f"cannot create the run directory {path}: {e.strerror or e}") from None
    else:
        raise RunDirError(f"no free run name under {out_dir}")
    if not path.is_dir():
        _undo(made)
        raise RunDirError(f"{path} exists and is not a directory; choose another --run-name")
    try:
        lock = RunLock(path, command).acquire()
    except BaseException:
        _undo(made)
        raise
    rd = RunDir(path, lock, made)
    if (path / CHECKPOINT_NAME).exists():
        rd.abandon()
        raise RunDirError(f"{path} already holds a run; continue it with --resume {path} "
                          f"or choose another --run-name")
    return rd


def open_run_dir(path, command: Optional[list] = None) -> RunDir:
    """Lock an existing run directory for a resume (a checkpoint file names its directory)."""
    path = Path(path)
    if path.is_file():
        path = path.parent
    if not path.is_dir():
        raise RunDirError(f"no run directory at {path}; pass the folder of a run (it holds checkpoint.pt)")
    return RunDir(path, RunLock(path, command).acquire(), [])


def _close_locks_in_child() -> None:
    # A forked child (the critic's process of a run, an async env) shares the lock's open file, and the kernel
    # drops a flock only when every descriptor of it is closed: the child closes its copy, so the lock ends with
    # the process that took it and a second writer is not refused by a leftover child.
    for lock in list(_HELD):
        if lock.fd is not None:
            os.close(lock.fd)
            lock.fd = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_locks_in_child)


def _undo(made: List[Path]) -> None:
    if made:
        shutil.rmtree(made[0], ignore_errors=True)
