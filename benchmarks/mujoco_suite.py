"""The MuJoCo v5 suite: every environment x seed through the multi-run runner, then tables and curves.

    python benchmarks/mujoco_suite.py                                   # all 10 envs, PPO, seeds 1-3, 1M steps
    python benchmarks/mujoco_suite.py --envs Hopper-v5 Walker2d-v5 --seeds 1 2 3 4 5
    python benchmarks/mujoco_suite.py --algo grpo --group-size 16 --num-envs 16 --tag grpo_g16
    python benchmarks/mujoco_suite.py --envs Ant-v5 Humanoid-v5 --total-steps 10000000 --tag ppo_10m
    python benchmarks/mujoco_suite.py --report-only                     # tables/plots from what exists

Runs go to RUNS_DIR/TAG/ENV__ALGO__sSEED (checkpoints and TensorBoard files stay out of git);
the same command run again skips finished runs and resumes interrupted ones, so the suite can
be built up across sessions. A run directory whose config differs from the requested one is
reported as a conflict and left alone: give runs with other settings their own --tag.

Results (RESULTS_DIR/TAG*), each recording the command, git commit, CPU model, cores, versions,
seeds and wall time:
    TAG.md / TAG.csv    per env: final return, eval return, AUC (mean [95% CI], IQM for >= 4 seeds),
                        wall time, SPS
    TAG_runs.csv        one row per run, the data behind the table
    TAG.png             return vs env steps, one panel per env (seed mean, 95% CI band)
    TAG_time.png        return vs training wall time
    TAG.json            provenance and every job's runner status
Compare tags (e.g. PPO vs GRPO) with ``ppo-control plot RUNS_DIR --out results/x.png --group-by algo``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ppo_control.cliargs import add_config_args
from ppo_control.config import PRESETS, make_config
from ppo_control.experiments.aggregate import (load_runs, provenance, run_rows, summarize, write_csv,
                                              write_tables)
from ppo_control.experiments.plotting import plot_panels
from ppo_control.experiments.runner import add_runner_args, report, run_jobs

# Per-environment settings on top of --preset (and of config.ENV_OVERRIDES, the measured per-env
# adjustments of each preset, e.g. Swimmer's gamma in 'default'). 1M steps everywhere, the budget of Schulman et al. (2017)
# and of most public PPO tables, so numbers compare with published ones. Ant and Humanoid are
# still improving at 1M: run them longer under their own --tag for asymptotic returns.
SUITE = {
    "HalfCheetah-v5": dict(total_steps=1_000_000),
    "Hopper-v5": dict(total_steps=1_000_000),
    "Walker2d-v5": dict(total_steps=1_000_000),
    "Ant-v5": dict(total_steps=1_000_000),
    "Humanoid-v5": dict(total_steps=1_000_000),
    "Swimmer-v5": dict(total_steps=1_000_000),
    "InvertedPendulum-v5": dict(total_steps=1_000_000),
    "InvertedDoublePendulum-v5": dict(total_steps=1_000_000),
    "Reacher-v5": dict(total_steps=1_000_000),
    "Pusher-v5": dict(total_steps=1_000_000),
}
CONFIG_FIELDS_SET_HERE = ("preset", "seed", "run_name", "env_id", "out_dir", "progress")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", nargs="+", default=list(SUITE), metavar="ENV_ID",
                   help=f"environments (default: all of {', '.join(SUITE)})")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3], metavar="SEED", help="seeds (default: 1 2 3)")
    p.add_argument("--preset", default="default", choices=sorted(PRESETS), help="starting configuration")
    p.add_argument("--tag", default=None, help="name of this configuration's runs and results "
                   "(default: ALGO_PRESET, e.g. ppo_default)")
    p.add_argument("--runs-dir", default="results/runs/mujoco_suite", help="where run directories go")
    p.add_argument("--results-dir", default="results/mujoco_suite", help="where tables and plots go")
    p.add_argument("--dry-run", action="store_true", help="list the jobs and exit")
    p.add_argument("--report-only", action="store_true", help="run nothing; tables and plots from existing runs")
    add_runner_args(p)
    add_config_args(p, skip=CONFIG_FIELDS_SET_HERE)
    return p


def make_jobs(args: argparse.Namespace) -> list:
    """``(ENV__ALGO__sSEED, Config)`` per env x seed: SUITE row, then command-line overrides."""
    unknown = [e for e in args.envs if e not in SUITE]
    if unknown:
        raise SystemExit(f"mujoco_suite: {unknown} not in the suite table; choose from {list(SUITE)}")
    overrides = {k: v for k, v in vars(args).items() if k in _config_fields()}
    jobs = []
    for env in args.envs:
        for seed in args.seeds:
            cfg = make_config(args.preset, **{**SUITE[env], **overrides, "env_id": env, "seed": seed})
            jobs.append((f"{env}__{cfg.algo}__s{seed}", cfg))
    return jobs


def _config_fields() -> set:
    import dataclasses
    from ppo_control.config import Config
    return {f.name for f in dataclasses.fields(Config)} - set(CONFIG_FIELDS_SET_HERE)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    jobs = make_jobs(args)
    tag = args.tag or f"{jobs[0][1].algo}_{args.preset}"
    out_dir, results = Path(args.runs_dir) / tag, Path(args.results_dir)
    command = ["python", "benchmarks/mujoco_suite.py"] + (sys.argv[1:] if argv is None else list(argv))
    if args.dry_run:
        for name, cfg in jobs:
            print(out_dir / name, f"total_steps={cfg.total_steps}")
        return 0
    t0, statuses = time.time(), []
    if not args.report_only:
        try:
            res = run_jobs(jobs, out_dir, args.workers, args.backend, args.ray_address)
        except KeyboardInterrupt:
            print("mujoco_suite: interrupted; run the same command again to resume", file=sys.stderr)
            return 130
        statuses = [{"run": r.run_name, "status": r.status, "action": r.action, "wall_time": r.wall_time}
                    for r in res]
        print(f"runner: {report(res)} in {time.time() - t0:.0f} s")
        if any(r.status == "conflict" for r in res):
            print("mujoco_suite: some run directories hold other settings; use --tag to keep them apart")
    return write_results(out_dir, results, tag, command, time.time() - t0, statuses)


def write_results(out_dir: Path, results: Path, tag: str, command: list, wall_time: float, statuses: list) -> int:
    """Tables and plots over every run under ``out_dir`` (this and earlier sessions' runs)."""
    runs = load_runs([out_dir]) if out_dir.exists() else []
    if not runs:
        print(f"mujoco_suite: no runs under {out_dir} yet")
        return 1
    seeds = sorted({r.config.get("seed") for r in runs})
    prov = provenance(command, seeds, wall_time)
    prov["total_run_wall_time_s"] = round(sum(r.metric("wall_time") for r in runs if r.status == "finished"), 1)
    envs = [e for e in SUITE if any(r.config.get("env_id") == e for r in runs)]
    envs += sorted({r.config.get("env_id") for r in runs} - set(envs))
    per_env = {e: {e: [r for r in runs if r.config.get("env_id") == e]} for e in envs}
    paths = [*write_tables(summarize(runs, ["env_id"]), results / tag, prov),
             plot_panels(per_env, results / f"{tag}.png", "steps", prov),
             plot_panels(per_env, results / f"{tag}_time.png", "time", prov),
             write_csv(run_rows(runs), results / f"{tag}_runs.csv", prov)]
    (results / f"{tag}.json").write_text(json.dumps({"provenance": prov, "jobs": statuses}, indent=2) + "\n")
    print((results / f"{tag}.md").read_text())
    print("wrote " + ", ".join(str(p) for p in paths + [results / f"{tag}.json"]))
    return 0


if __name__ == "__main__":  # required: the runner spawns worker processes that re-import this file
    sys.exit(main())
