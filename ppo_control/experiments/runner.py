"""Run many training jobs at once: finished runs skipped, interrupted runs resumed, failures recorded.

A job is ``(run_name, Config)`` and lives in ``out_dir/run_name``:

    summary.json                      finished     -> skipped
    checkpoint.pt, no summary.json    interrupted  -> train(resume=run_dir)
    neither                           new          -> train(cfg)

A run directory whose saved config differs from the job's (other than output-only fields) is
a *conflict*: it is reported and left alone rather than silently resumed or skipped.

Local backend: each job gets its own process (a one-worker ``ProcessPoolExecutor``, forkserver
context), at most ``workers`` at a time: a clean process per run, and exact blame when one
dies (a shared pool is "broken" for every job when any worker dies). A failure writes
``run_dir/error.txt`` and a line in ``out_dir/runner.jsonl``; the other jobs go on. Ctrl-C /
SIGTERM on the runner is forwarded as one SIGINT to each job, which takes train's own interrupt
path (checkpoint saved), so the same command run again resumes.

Ray backend (``ray_backend.py``): the same ``run_job`` as a Ray task per job on an existing or a
local cluster; ``out_dir`` must then be on a file system every node sees. The job itself (the
decision above, the run, the log line) is ``jobs.py``, which both backends import and which
imports neither.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

from ..config import Config
from ..train import stop_signals_as_interrupt
from .jobs import LOG_NAME, STOP_GRACE_S, JobResult, _Log, job_action, job_cost, run_job, write_error

BACKENDS = ("local", "ray")


def prepare(jobs: Sequence[Tuple[str, Config]], out_dir) -> List[Config]:
    """Each job's Config placed in ``out_dir/run_name``, progress bars off, ``torch_threads`` and
    ``env_threads`` 0 -> 1.

    0 means "all cores" per process, which oversubscribes as soon as two jobs run. A run name may
    be a relative path (``Hopper-v5/tuned/seed_1``, a suite's layout): its last part is the run name.
    """
    names = [n for n, _ in jobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"run names must be unique; repeated: {dup}")
    bad = [n for n in names if not n or n.startswith("/") or any(p in (".", "..", "") for p in n.split("/"))]
    if bad:
        raise ValueError(f"run names must be folder names or relative paths below out_dir; got {bad}")
    return [cfg.replace(out_dir=str(Path(out_dir, name).parent), run_name=Path(name).name, progress=False,
                        torch_threads=cfg.torch_threads or 1, env_threads=cfg.env_threads or 1)
            for name, cfg in jobs]


def default_workers(cfgs: Sequence[Config]) -> int:
    """Concurrent jobs that fill the cores this process may use without oversubscribing them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max([job_cost(c) for c in cfgs] or [1]))


# The runner -----------------------------------------------------------------------------------

def run_jobs(jobs: Sequence[Tuple[str, Config]], out_dir, workers: Optional[int] = None, backend: str = "local",
             ray_address: Optional[str] = None, echo: Callable[[str], None] = print) -> List[JobResult]:
    """Run every job not yet finished; returns one ``JobResult`` per job, in job order.

    Raises KeyboardInterrupt after a Ctrl-C/SIGTERM, once every running job has saved its checkpoint.
    A script that calls this needs the ``if __name__ == "__main__":`` guard: the worker
    processes' server imports the main module.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} (got {backend!r})")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1 (got {workers})")
    cfgs = prepare(jobs, out_dir)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    log = _Log(Path(out_dir) / LOG_NAME, len(cfgs), echo)
    results, todo = {}, []  # keyed by run directory: run names repeat across a suite's folders
    for cfg in cfgs:
        action, why = job_action(cfg)
        if action in ("skip", "conflict"):
            results[_dir(cfg)] = log.record(JobResult(cfg.run_name, _dir(cfg), action,
                                                      "skipped" if action == "skip" else "conflict", 0.0, why))
        else:
            todo.append(cfg)
    if todo:
        workers = workers or default_workers(todo)
        echo(f"runner: {len(todo)} of {len(cfgs)} jobs to run ({backend}, "
             f"{workers if backend == 'local' else 'cluster'} at a time); log: {log.path}")
        if backend == "local":
            run = _run_local
        else:
            from .ray_backend import run_ray as run
        with stop_signals_as_interrupt():
            for r in run(todo, workers, ray_address, log):
                results[str(Path(r.run_dir))] = r
    return [results[_dir(c)] for c in cfgs]


def _dir(cfg: Config) -> str:
    return str(Path(cfg.out_dir) / cfg.run_name)


def _run_local(cfgs: Sequence[Config], workers: int, ray_address, log: _Log) -> List[JobResult]:
    ctx = _mp_context()
    pending, running, out = deque(cfgs), {}, []
    try:
        while pending or running:
            while pending and len(running) < workers:
                cfg = pending.popleft()
                pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=_worker_init)
                running[pool.submit(run_job, cfg.to_dict())] = (cfg, pool, time.time(), job_action(cfg)[0])
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                cfg, pool, t0, action = running.pop(fut)
                pool.shutdown(wait=True)
                out.append(log.record(_local_result(fut, cfg, t0, action, stopping=False)))
    except KeyboardInterrupt:
        _stop_local(running, log)
        raise
    return out


def _worker_init() -> None:
    # A local worker between start-up and its job has nothing to save: ignore stop signals there.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _mp_context():
    """forkserver with ppo_control preloaded, else spawn; never a plain fork of the runner.

    The fork server imports torch/gymnasium/mujoco once, before any thread exists, and each
    job's process is forked from it: no per-job interpreter start and import (seconds each),
    and none of the runner's threads or state copied into a job.
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ppo_control.experiments.runner", "ppo_control.train"])
    _start_forkserver_on_our_path()
    return ctx


def _start_forkserver_on_our_path() -> None:
    """Start the fork server with this process's ``sys.path``, so jobs run the code the runner runs.

    Python 3.11 starts the server as ``python -c ...`` in the current directory, puts that directory
    first on its path and ignores the parent's ``sys.path``: a ``ppo_control`` folder there (a checkout
    beside a pinned worktree on PYTHONPATH, say) would be the code every job trained with. Once
    started (here or by an earlier call) the server keeps its path, so this is a no-op after that.

    The server starts with SIGTERM ignored (an ignored signal survives exec): a stop sent to the whole
    process group (``timeout``, ``kill -- -PGID``) must not kill it, since the runner learns whether
    its workers live through it; with it gone, stopped jobs' idle workers were left waiting forever.
    It still exits with the runner (it watches a pipe from it).
    """
    from multiprocessing import forkserver
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "PYTHONSAFEPATH")}
    os.environ["PYTHONPATH"] = os.pathsep.join(p or os.getcwd() for p in sys.path)
    os.environ["PYTHONSAFEPATH"] = "1"  # no current directory in front of it
    try:
        old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except ValueError:  # not the main thread
        old_term = None
    try:
        forkserver.ensure_running()
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _local_result(fut, cfg: Config, t0: float, action: str, stopping: bool) -> JobResult:
    run_dir = Path(cfg.out_dir) / cfg.run_name
    exc = fut.exception()
    if exc is None:
        return JobResult(**fut.result())
    if stopping:  # a worker killed while starting up or stopping: nothing failed
        return JobResult(cfg.run_name, str(run_dir), action, "interrupted", time.time() - t0)
    error = (f"the worker process running this job died ({type(exc).__name__}: {exc}); "
             f"e.g. killed for memory or a crash in native code\n")
    write_error(run_dir, error)
    return JobResult(cfg.run_name, str(run_dir), action, "failed", time.time() - t0, error)


def _stop_local(running: dict, log: _Log) -> None:
    log.echo(f"runner: stopping {len(running)} running job(s); each saves a checkpoint ...")
    for p in multiprocessing.active_children():
        try:
            os.kill(p.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
    done, late = wait(running, timeout=STOP_GRACE_S)
    for p in multiprocessing.active_children() if late else ():
        p.kill()
    for fut in done:
        cfg, pool, t0, action = running[fut]
        log.record(_local_result(fut, cfg, t0, action, stopping=True))
    for fut, (cfg, pool, _, _) in running.items():
        # a worker whose job returned waits in the pool for its next call, ignoring stop signals (_worker_init):
        # only the pool's shutdown message ends it, so wait for that here. Without the wait the runner could exit
        # first, and the worker lived on after a Ctrl-C to the group, holding the run directory's lock.
        pool.shutdown(wait=fut in done, cancel_futures=True)


def add_runner_args(p) -> None:
    """``--workers``, ``--backend`` and ``--ray-address`` on an argparse parser."""
    g = p.add_argument_group("runner")
    g.add_argument("--workers", type=_positive_int, default=None,
                   help="jobs at once (local backend; default: usable cores // cores per job)")
    g.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local: processes on this machine; ray: one Ray task per job (pip install ray)")
    g.add_argument("--ray-address", default=None,
                   help="Ray cluster to join, e.g. ray://host:10001 or auto (default: RAY_ADDRESS or a local one)")


def _positive_int(text: str) -> int:
    import argparse
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (got {n})")
    return n


def report(results: Sequence[JobResult]) -> str:
    """One line of counts per status, e.g. 'finished 4, skipped 2, failed 1'."""
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
