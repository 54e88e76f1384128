"""One job: decided from its run directory (new, resume, skip, conflict), run, and logged.

What the local runner's worker processes and the Ray tasks (``ray_backend.py``) both execute, so
it imports neither of them. A job is a prepared ``Config`` (``out_dir/run_name`` its run
directory); ``run_job`` takes and returns plain dicts so that it pickles into either backend.
"""
from __future__ import annotations

import dataclasses
import json
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from ..checkpoint import CHECKPOINT_NAME
from ..config import OUTPUT_ONLY_FIELDS, Config
from ..rundir import RunInUseError

LOG_NAME, ERROR_NAME = "runner.jsonl", "error.txt"
STOP_GRACE_S = 120.0  # time a stopped job gets to write its checkpoint before it is killed


@dataclass(frozen=True)
class JobResult:
    run_name: str
    run_dir: str
    action: str  # new | resume | skip | conflict
    status: str  # finished | skipped | failed | interrupted | conflict
    wall_time: float
    error: Optional[str] = None
    summary: Optional[dict] = None


def config_differences(saved: dict, cfg: dict) -> List[str]:
    """Fields (present in both, not output-only) whose values differ."""
    return sorted(k for k in set(saved) & set(cfg) - OUTPUT_ONLY_FIELDS if saved[k] != cfg[k])


def job_action(cfg: Config) -> Tuple[str, Optional[str]]:
    """("skip" | "resume" | "new" | "conflict", why) for a prepared job, from its run directory."""
    run_dir = Path(cfg.out_dir) / cfg.run_name
    done, ckpt = (run_dir / "summary.json").exists(), (run_dir / CHECKPOINT_NAME).exists()
    if (done or ckpt) and (run_dir / "config.json").exists():
        saved = json.loads((run_dir / "config.json").read_text())["config"]
        diff = config_differences(saved, cfg.to_dict())
        if diff:
            return "conflict", (f"{run_dir} holds a run whose config differs in {diff} "
                                f"({', '.join(f'{k}: {saved[k]!r} there, {getattr(cfg, k)!r} here' for k in diff)}); "
                                f"use another out_dir or delete that run")
    return ("skip" if done else "resume" if ckpt else "new"), None


def job_cost(cfg: Config) -> int:
    """Cores one job keeps busy: its torch threads, or its env processes (async) or MuJoCo threads
    (batched) if more (collection and updates alternate, so they do not add up); one more where the
    critic's update runs in a second process beside the policy's (``critic_process``)."""
    envs = {"async": cfg.num_envs, "batched": max(1, cfg.env_threads)}.get(cfg.vectorization, 1)
    return max(max(1, cfg.torch_threads), envs) + (1 if splits_critic(cfg) else 0)


def splits_critic(cfg: Config) -> bool:
    """Whether a run of ``cfg`` (as the runner prepares it: torch_threads 0 -> 1) puts its critic's update in a
    second process on this machine: the run's own decision, ``critic_process.run_plans``."""
    import torch

    from .. import algorithms
    from ..critic_process import run_plans
    device = torch.device("cpu" if cfg.device == "auto" else cfg.device)  # auto picks the CPU (state.resolve_device)
    return run_plans(cfg.replace(torch_threads=cfg.torch_threads or 1), device, algorithms.get(cfg.algo))[1][0]


# The job, as run inside a local worker process or a Ray task ---------------------------

def run_job(cfg_dict: dict) -> dict:
    """Run one prepared job here and now; returns a ``JobResult`` as a dict (picklable, Ray-safe).

    Decides new/resume/skip from the run directory at start, so a retried or restarted job
    resumes from whatever checkpoint the previous attempt left.
    """
    cfg = Config.from_dict(cfg_dict)
    run_dir = Path(cfg.out_dir) / cfg.run_name
    action, why = job_action(cfg)
    t0 = time.time()
    status, error, summary = {"skip": "skipped", "conflict": "conflict"}.get(action), why, None
    if status is None:
        try:
            from ..train import stop_signals_as_interrupt, train
            # set here, not inherited: a local worker starts with both stop signals ignored, and Ray's
            # cancel simulates a SIGINT; one KeyboardInterrupt per stop, so a repeat (the runner's
            # forward after a terminal's Ctrl-C) cannot cut the checkpoint save short
            with stop_signals_as_interrupt():
                (run_dir / ERROR_NAME).unlink(missing_ok=True)
                summary = train(resume=str(run_dir)) if action == "resume" else train(cfg)
            status = "finished"
        except KeyboardInterrupt:
            status = "interrupted"
        except RunInUseError as e:  # another writer's run: its directory gets no error.txt from this job
            status, error = "failed", str(e)
        except Exception:
            status, error = "failed", traceback.format_exc()
            write_error(run_dir, error)
    return dataclasses.asdict(JobResult(cfg.run_name, str(run_dir), action, status, time.time() - t0, error,
                                        summary))


def write_error(run_dir, text: str) -> None:
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    (Path(run_dir) / ERROR_NAME).write_text(text)


class _Log:
    """Appends each result to ``runner.jsonl`` and echoes a one-line status."""

    def __init__(self, path: Path, total: int, echo: Callable[[str], None]):
        self.path, self.total, self.echo, self.count = path, total, echo, 0

    def record(self, r: JobResult) -> JobResult:
        self.count += 1
        line = dict(dataclasses.asdict(r), time=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        line["summary"] = {k: r.summary.get(k) for k in ("final_return", "eval_return", "global_step",
                                                         "wall_time")} if r.summary else None
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")
        extra = ""
        if r.status == "finished" and r.summary:
            extra = f" final_return={r.summary.get('final_return', float('nan')):.1f}"
        elif r.error:
            extra = " " + r.error.strip().splitlines()[-1][:200]
        self.echo(f"[{self.count}/{self.total}] {r.status:<11} {r.run_name} ({r.action}, {r.wall_time:.0f} s){extra}")
        return r
