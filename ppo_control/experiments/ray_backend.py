"""The runner's Ray backend: each job becomes a Ray task (``jobs.run_job``) on an existing or a local
cluster.  ``out_dir`` must be on a file system every node sees.  Ray is an optional extra."""
from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional, Sequence

from ..config import Config
from .jobs import STOP_GRACE_S, JobResult, _Log, job_action, job_cost, run_job, write_error


def run_ray(cfgs: Sequence[Config], workers: int, ray_address: Optional[str], log: _Log) -> List[JobResult]:
    try:
        import ray
    except ImportError:
        raise RuntimeError("--backend ray needs Ray, an optional extra: pip install 'ppo_control[ray]' "
                           "(or pip install ray)") from None
    if not ray.is_initialized():
        ray.init(address=ray_address)  # None: RAY_ADDRESS if set, else a new local cluster
    # max_retries re-runs a task whose worker or node died; run_job then resumes from the checkpoint
    task = ray.remote(run_job)
    refs = {task.options(num_cpus=job_cost(c), max_retries=2, name=c.run_name).remote(c.to_dict()):
            (c, time.time(), job_action(c)[0]) for c in cfgs}
    out = []
    try:
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1)
            for ref in done:
                out.append(log.record(_result(ray, ref, *refs.pop(ref))))
    except KeyboardInterrupt:
        log.echo(f"runner: cancelling {len(refs)} Ray task(s); running ones save a checkpoint ...")
        for ref in refs:
            ray.cancel(ref)  # not forced: raises KeyboardInterrupt inside the task, so train checkpoints
        done, _ = ray.wait(list(refs), num_returns=len(refs), timeout=STOP_GRACE_S)
        for ref in done:
            log.record(_result(ray, ref, *refs[ref]))
        raise
    return out


def _result(ray, ref, cfg: Config, t0: float, action: str) -> JobResult:
    run_dir = Path(cfg.out_dir) / cfg.run_name
    try:
        return JobResult(**ray.get(ref))
    except ray.exceptions.TaskCancelledError:
        return JobResult(cfg.run_name, str(run_dir), action, "interrupted", time.time() - t0)
    except ray.exceptions.RayError as e:
        error = f"Ray could not run this job: {type(e).__name__}: {e}\n"
        write_error(run_dir, error)
        return JobResult(cfg.run_name, str(run_dir), action, "failed", time.time() - t0, error)
