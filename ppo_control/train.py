"""``train(cfg)``: the whole training loop.

    for iteration:
        stats = ppo.iteration(ts)             or grpo.iteration(ts)
            (collect_steps, gae, update)          (collect_groups, group_relative, update)
        log(stats); checkpoint every N iterations, on Ctrl-C/kill and at the end
"""
from __future__ import annotations

import signal
import sys
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Optional

import numpy as np

from . import grpo, ppo
from .checkpoint import CHECKPOINT_NAME, CheckpointError, atomic_write_json, load_checkpoint, save_checkpoint
from .config import Config, applied_env_overrides
from .evaluate import Policy, evaluate, load_policy
from .metrics import MetricsLogger, Progress
from .runinfo import environment_info
from .state import TrainState
from .update import NonFiniteError, check_finite


def train(cfg: Optional[Config] = None, resume: Optional[str] = None) -> dict:
    """Train a new run from ``cfg``, or continue the run in directory ``resume``.

    Returns the run summary (also written to ``RUN_DIR/summary.json``).
    """
    if resume is not None:
        run_dir = Path(resume)
        st = load_checkpoint(run_dir)
        cfg = Config.from_dict(st["config"])
    else:
        cfg = cfg or Config()
        run_dir, st = _new_run_dir(cfg), None
    ts = TrainState.build(cfg)
    if st is not None:
        ts.restore(st, run_dir / CHECKPOINT_NAME)
    overrides = applied_env_overrides(cfg)
    if overrides:
        print(f"preset {cfg.preset!r} on {cfg.env_id}: per-env overrides {overrides}", file=sys.stderr)
    atomic_write_json(run_dir / "config.json", {"config": cfg.to_dict(), "environment": environment_info(),
                                                "command": sys.argv, "env_overrides_applied": overrides})
    log = MetricsLogger(run_dir, cfg.tensorboard, ts.iteration if st else None,
                        ts.rollout.global_step if st else None)
    bar = Progress(cfg.total_steps, ts.rollout.global_step, cfg.progress, f"{cfg.algo} {cfg.env_id}")
    good = ts.capture()  # last state known to be sound: what every exit path saves
    try:
        with stop_signals_as_interrupt():
            while not _finished(ts):
                t0 = time.perf_counter()
                stats = _iteration(ts)
                check_finite(ts.policy, ts.critic)
                ts.iteration += 1
                dt = time.perf_counter() - t0
                ts.wall_time += dt
                row = _row(ts, stats, dt)
                if cfg.eval_interval:
                    row["eval/return"] = _periodic_eval(ts, ts.rollout.global_step - row["charts/steps_this_iter"])
                log.log(row)
                bar.update(int(row["charts/steps_this_iter"]), _last_return(ts), row["charts/SPS"])
                good = ts.capture()
                if ts.iteration % cfg.checkpoint_every == 0:
                    save_checkpoint(run_dir / CHECKPOINT_NAME, good)
    except KeyboardInterrupt:
        save_checkpoint(run_dir / CHECKPOINT_NAME, good)
        print(f"\ninterrupted: checkpoint at iteration {good['iteration']} saved; continue with "
              f"`ppo-control train --resume {run_dir}`", file=sys.stderr)
        raise
    except NonFiniteError as e:
        save_checkpoint(run_dir / CHECKPOINT_NAME, good)
        raise NonFiniteError(f"{e}. Training stopped; the last good state (iteration {good['iteration']}) is "
                             f"saved in {run_dir}. Lower lr or max_grad_norm, or enable norm_obs/norm_reward.") \
            from None
    finally:
        bar.close()
        log.close()
        ts.envs.close()
    save_checkpoint(run_dir / CHECKPOINT_NAME, good)
    return _finish(ts, run_dir)


def _finished(ts: TrainState) -> bool:
    if ts.cfg.algo == "ppo":
        return ts.iteration >= ts.cfg.num_iterations
    return ts.rollout.global_step >= ts.cfg.total_steps


def _iteration(ts: TrainState) -> dict:
    cfg = ts.cfg
    if cfg.anneal_lr:
        frac = max(0.0, 1.0 - ts.rollout.global_step / cfg.total_steps)
        for g in ts.optimizer.param_groups:
            g["lr"] = frac * cfg.lr
    return (grpo if cfg.algo == "grpo" else ppo).iteration(ts)


def _row(ts: TrainState, stats: dict, dt: float) -> dict:
    eps = ts.rollout.drain_episodes()
    ts.recent_returns = (ts.recent_returns + [r for r, _ in eps])[-100:]
    std = ts.policy.std().detach().cpu()
    row = {"iteration": ts.iteration, "global_step": ts.rollout.global_step, "wall_time": round(ts.wall_time, 3),
           "charts/episodic_return": float(np.mean([r for r, _ in eps])) if eps else float("nan"),
           "charts/episodic_length": float(np.mean([n for _, n in eps])) if eps else float("nan"),
           "charts/episodes": len(eps),
           "charts/SPS": stats.get("charts/steps_this_iter", 0) / max(dt, 1e-9),
           "charts/learning_rate": ts.optimizer.param_groups[0]["lr"],
           "policy/std_mean": float(std.mean()), "policy/log_std_mean": float(std.log().mean())}
    row.update(stats)
    return row


def _periodic_eval(ts: TrainState, prev_step: int) -> float:
    """Deterministic return when this iteration crossed a multiple of eval_interval, else NaN.
    Uses its own env and seeds, so training RNGs (and exact resume) are untouched."""
    k = ts.cfg.eval_interval
    if ts.rollout.global_step // k == prev_step // k:
        return float("nan")
    pol = Policy(ts.policy, ts.obs_norm, ts.envs.action_low, ts.envs.action_high, ts.cfg)
    return evaluate(pol, ts.cfg.env_id, ts.cfg.eval_interval_episodes, seed=ts.cfg.seed + 20_000)["mean_return"]


def _last_return(ts: TrainState) -> float:
    return float(np.mean(ts.recent_returns[-10:])) if ts.recent_returns else float("nan")


def _finish(ts: TrainState, run_dir: Path) -> dict:
    cfg = ts.cfg
    summary = {"run_dir": str(run_dir), "env_id": cfg.env_id, "algo": cfg.algo, "seed": cfg.seed,
               "preset": cfg.preset, "global_step": ts.rollout.global_step, "iterations": ts.iteration,
               "wall_time": ts.wall_time, "SPS": ts.rollout.global_step / max(ts.wall_time, 1e-9),
               "final_return": _last_return(ts), "final_return_episodes": min(10, len(ts.recent_returns))}
    if cfg.eval_episodes > 0:
        ev = evaluate(load_policy(run_dir), cfg.env_id, cfg.eval_episodes, seed=cfg.seed + 10_000)
        atomic_write_json(run_dir / "eval.json", ev)
        summary["eval_return"] = ev["mean_return"]
        summary["eval_return_std"] = ev["std_return"]
    # never NaN: short-horizon GRPO trains on no whole episode, so a deterministic evaluation stands in
    summary["final_return_source"] = "training_episodes"
    if not np.isfinite(summary["final_return"]):
        from .metrics import read_jsonl
        rows = read_jsonl(run_dir / "metrics.jsonl") if (run_dir / "metrics.jsonl").exists() else []
        periodic = [r["eval/return"] for r in rows if r.get("eval/return") is not None
                    and np.isfinite(r["eval/return"])]  # NaN is written as null
        if "eval_return" in summary:
            summary["final_return"], summary["final_return_source"] = summary["eval_return"], "final_eval"
        elif periodic:
            summary["final_return"], summary["final_return_source"] = periodic[-1], "periodic_eval"
        else:
            summary["final_return"] = evaluate(load_policy(run_dir), cfg.env_id, cfg.eval_interval_episodes,
                                               seed=cfg.seed + 10_000)["mean_return"]
            summary["final_return_source"] = "final_eval"
    atomic_write_json(run_dir / "summary.json", summary)
    return summary


def _new_run_dir(cfg: Config) -> Path:
    name = cfg.run_name or f"{cfg.env_id}__{cfg.algo}__s{cfg.seed}__{datetime.now():%Y%m%d-%H%M%S}"
    run_dir = Path(cfg.out_dir) / name
    if (run_dir / CHECKPOINT_NAME).exists():
        raise CheckpointError(f"{run_dir} already holds a run; continue it with --resume {run_dir} "
                              f"or choose another --run-name")
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


@contextmanager
def stop_signals_as_interrupt():
    """SIGTERM (``kill``, a scheduler's stop) raises KeyboardInterrupt, so it saves/stops like Ctrl-C.

    So does SIGINT where it arrives ignored: a shell starts background jobs (``cmd &``) with
    SIGINT ignored, and then ``kill -INT`` / ``pkill -INT`` would otherwise do nothing.
    """
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    sigs = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        sigs.append(signal.SIGINT)
    try:
        old = {sig: signal.signal(sig, handler) for sig in sigs}
    except ValueError:  # not in the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
