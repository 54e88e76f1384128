"""Grid sweeps as runner jobs, and the ``sweep``/``plot`` commands (suites: ``suite_cli.py``).

    ppo-control sweep --env-id Hopper-v5 --grid gae_lambda=0.9,0.95,0.99 --grid ent_coef=0,0.01 \\
        --seeds 1 2 3 --total-steps 1000000 --out-dir runs/hopper_lambda_ent
    ppo-control plot runs/hopper_lambda_ent --out results/hopper.png --heatmap gae_lambda ent_coef

Every grid cell x seed is one job with a deterministic run name
(``Hopper-v5__gae_lambda=0.9__ent_coef=0__s1``), so the same command run again skips what is
finished and resumes what was interrupted. Grid values are parsed with the Config field's type
and every cell's Config is built (and so validated) before anything runs.
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path
from typing import List, Sequence, Tuple

from ..cliargs import add_config_args, add_preset_args, preset_of
from ..config import Config, ConfigError, make_config
from ..values import FIELDS, field_name, flag, option_args
from ..values import parse_text as parse_value  # noqa: F401 (the grid's values: text typed by field)
from .aggregate import format_value

# Set by the sweep itself (seed via --seeds, names generated) or meaningless to sweep over.
NOT_SWEPT = {"seed": "use --seeds", "run_name": "run names are generated", "out_dir": "use --out-dir",
             "preset": "use --preset", "progress": "the runner turns progress bars off"}

Job = Tuple[str, Config]


def parse_grid(specs: Sequence[str]) -> List[Tuple[str, list]]:
    """``["gae_lambda=0.9,0.95", "ent_coef=0,0.01"]`` -> ``[("gae_lambda", [0.9, 0.95]), ("ent_coef", [0.0, 0.01])]``."""
    grid, seen = [], set()
    for spec in specs:
        if "=" not in spec:
            raise ConfigError(f"--grid {spec!r}: expected FIELD=V1,V2,... e.g. gae_lambda=0.9,0.95,0.99")
        key, _, values = spec.partition("=")
        name = field_name(key)
        if name in NOT_SWEPT:
            raise ConfigError(f"--grid {name}: not a sweep field ({NOT_SWEPT[name]})")
        if name in seen:
            raise ConfigError(f"--grid {name} is given twice; put all its values in one --grid")
        texts = [v for v in values.split(",") if v.strip()]
        if not texts:
            raise ConfigError(f"--grid {spec!r}: no values after '='")
        parsed = [parse_value(name, v) for v in texts]
        if len(set(map(format_value, parsed))) < len(parsed):
            raise ConfigError(f"--grid {name}: repeated value in {values!r}")
        grid.append((name, parsed))
        seen.add(name)
    return grid


def run_name(cfg: Config, cell: Sequence[Tuple[str, object]]) -> str:
    """``ENV__field=value__...__sSEED``: readable, and the same for the same cell and seed."""
    parts = [cfg.env_id] + [f"{k}={format_value(v)}" for k, v in cell if k != "env_id"] + [f"s{cfg.seed}"]
    return "__".join(parts).replace("/", "_")


def expand_grid(preset: str, overrides: dict, grid: Sequence[Tuple[str, list]], seeds: Sequence[int]) -> List[Job]:
    """Every grid cell x seed as ``(run_name, Config)``; cells vary fastest in the last grid field.

    Each Config is built from ``preset`` + ``overrides`` + the cell + the seed, so an invalid
    combination fails here, before any run starts, with the cell named.
    """
    both = sorted(set(overrides) & {k for k, _ in grid})
    if both:
        raise ConfigError(f"{both} given both as a fixed option and in --grid; keep one")
    if not seeds or len(set(seeds)) < len(seeds):
        raise ConfigError(f"--seeds must be distinct integers (got {list(seeds)})")
    jobs = []
    for values in itertools.product(*[v for _, v in grid]):
        cell = list(zip([k for k, _ in grid], values))
        for seed in seeds:
            try:
                cfg = make_config(preset, **overrides, **dict(cell), seed=seed)
            except ConfigError as e:
                label = ", ".join(f"{k}={format_value(v)}" for k, v in cell) or "the base config"
                raise ConfigError(f"grid cell {label}: {e}") from None
            jobs.append((run_name(cfg, cell), cfg))
    return jobs


# Commands -----------------------------------------------------------------------------------

def add_parsers(sub) -> None:
    """Register ``sweep`` and ``plot`` on the ``ppo-control`` subparsers."""
    from .plotting import X_AXES
    from .runner import add_runner_args

    s = sub.add_parser("sweep", help="grid sweep x seeds through the multi-run runner",
                       description="Run every --grid cell x seed (skips finished runs, resumes interrupted "
                       "ones), then write OUT_DIR/sweep.{md,csv,png} (and sweep_heatmap.png for two grid fields).")
    s.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2",
                   help="config field and its values, e.g. gae_lambda=0.9,0.95 or hidden_sizes=64x64,256x256 "
                        "(repeat for more fields)")
    _common(s, add_runner_args)
    add_config_args(s, skip=("preset", "seed", "run_name"))
    s.set_defaults(func=_cmd_sweep)

    p = sub.add_parser("plot", help="learning curves, tables and heatmaps from run directories",
                       description="Read run directories (or folders holding them) and write learning curves "
                       "(seed mean with 95% bootstrap CI band) to --out, the table to the same path with .md "
                       "and .csv, and optionally a heatmap.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories or folders that hold them")
    p.add_argument("--out", help="PNG path, e.g. results/hopper.png (default: RUN_DIR.png beside a single "
                   "RUN_DIR, else plot.png in the current directory)")
    p.add_argument("--group-by", nargs="+", default=None, metavar="FIELD",
                   help="config fields that define a line (default: every field that differs between runs)")
    p.add_argument("--x", choices=X_AXES, default="steps", help="x axis: env steps or training wall time")
    p.add_argument("--curve", default="charts/episodic_return", metavar="METRIC",
                   help="what the curves follow: charts/episodic_return (training episodes), eval/return (the "
                        "periodic deterministic evaluation of runs trained with --eval-interval) or any metric "
                        "the runs logged")
    p.add_argument("--also", nargs="+", default=[], metavar="METRIC",
                   help="diagnostics beside the curve, one panel each, in OUT_diagnostics.png (runs of one task), "
                        "e.g. policy/std_mean losses/approx_kl charts/learning_rate: a collapse in one figure")
    p.add_argument("--heatmap", nargs=2, metavar=("ROW_FIELD", "COL_FIELD"),
                   help="also write OUT_heatmap.png of the seed-mean --metric per cell")
    p.add_argument("--metric", choices=("final_return", "eval_return", "auc"), default="final_return",
                   help="heatmap value (default: final_return)")
    p.set_defaults(func=_cmd_plot)


def _common(p, add_runner_args) -> None:
    add_preset_args(p, default="default")
    p.add_argument("--seeds", nargs="+", type=int, default=[1], metavar="SEED", help="seeds (default: 1)")
    p.add_argument("--dry-run", action="store_true", help="list the jobs and exit")
    p.add_argument("--no-report", action="store_true", help="skip the tables and plots after the runs")
    add_runner_args(p)


def _overrides(args: argparse.Namespace) -> dict:
    return {k: v for k, v in vars(args).items() if k in FIELDS and k not in ("seed", "run_name", "preset")}


def _cmd_sweep(args: argparse.Namespace) -> int:
    grid = parse_grid(args.grid)
    overrides = _overrides(args)
    out_dir = overrides.pop("out_dir", Config.out_dir)
    jobs = expand_grid(preset_of(args), overrides, grid, args.seeds)
    by = [k for k, _ in grid if not (k == "env_id" and len(grid) > 1)]
    heatmap = by if len(by) == 2 else None
    return _run_and_report(args, jobs, out_dir, "sweep", by, heatmap)


def _run_and_report(args, jobs: List[Job], out_dir: str, name: str, by: List[str], heatmap) -> int:
    from .runner import run_jobs, report
    if args.dry_run:
        for n, cfg in jobs:
            print(Path(out_dir) / n)
        print(f"{len(jobs)} jobs")
        return 0
    t0 = time.time()
    results = run_jobs(jobs, out_dir, args.workers, args.backend, args.ray_address)
    print(f"runner: {report(results)} in {time.time() - t0:.0f} s")
    if not args.no_report:
        _report(args, [r.run_dir for r in results], by, Path(out_dir) / f"{name}.png", "steps", heatmap,
                "final_return", args.seeds, time.time() - t0)
    return 1 if any(r.status in ("failed", "conflict") for r in results) else 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from .aggregate import find_run_dirs, load_run, varying_fields
    runs = [load_run(d, args.curve) for d in find_run_dirs(args.run_dirs)]
    if not runs:
        raise ConfigError(f"no run directories (folders with config.json) under {args.run_dirs}")
    for key in [args.curve, *args.also]:  # an empty figure or panel would look like a plotting bug
        if not any(len(r.column(key)[0]) for r in runs):
            hint = " (runs trained with --eval-interval N log it)" if key == "eval/return" else ""
            raise ConfigError(f"none of the {len(runs)} runs logged {key}{hint}; nothing plotted")
    if args.also and len({r.config.get("env_id") for r in runs}) > 1:
        raise ConfigError("--also draws one task's diagnostics; give the runs of one env id")
    by = args.group_by if args.group_by is not None else [f for f in varying_fields(runs) if f != "env_id"]
    seeds = sorted({r.config.get("seed") for r in runs})
    heatmap = [field_name(f) for f in args.heatmap] if args.heatmap else None
    out = args.out or default_plot_path(args.run_dirs)
    _report(args, [r.path for r in runs], [field_name(f) for f in by], out, args.x, heatmap, args.metric,
            seeds, None)
    if args.also:
        from .aggregate import provenance
        from .plotting import diagnostics_figure
        path = diagnostics_figure(runs, [field_name(f) for f in by], [args.curve, *args.also], out, args.x,
                                  provenance(["ppo-control"] + sys.argv[1:], seeds=seeds))
        print(f"wrote {path}")
    return 0


def default_plot_path(run_dirs: Sequence[str]) -> Path:
    """``RUN_DIR.png`` beside a single run directory (or folder of runs), else ``plot.png`` here."""
    if len(run_dirs) == 1:
        d = Path(run_dirs[0]).resolve()
        return d.with_name(d.name + ".png")
    return Path("plot.png")


def _report(args, run_dirs, by, out, x, heatmap, metric, seeds, wall_time) -> None:
    from .aggregate import load_run, markdown_table, provenance, summarize
    from .plotting import write_report
    curve = getattr(args, "curve", "charts/episodic_return")
    runs = [load_run(d, curve) for d in map(Path, run_dirs) if (Path(d) / "config.json").exists()]
    if not runs:
        print("report: no run directories to report on")
        return
    prov = provenance(command_line(args), seeds, wall_time)
    paths = write_report(runs, by, out, x, prov, heatmap, metric)
    envs = {r.config.get("env_id") for r in runs}
    print(markdown_table(summarize(runs, (["env_id"] if len(envs) > 1 and "env_id" not in by else []) + by)))
    print("wrote " + ", ".join(map(str, paths)))


def command_line(args: argparse.Namespace) -> List[str]:
    """The command as parsed, in canonical form (defaults spelled out): what results record.

    Rebuilt from the namespace rather than taken from ``sys.argv``, which is the caller's
    command line when ``cli.main(argv)`` is called from Python.
    """
    cmd, positional = ["ppo-control", args.command], []
    given = dict(vars(args))
    if given.get("config"):  # --config replaces --preset (whose default is spelled out otherwise)
        given["preset"] = None
    for key, value in given.items():
        if key in FIELDS and key != "preset":  # fields appear only when given
            cmd += option_args(key, value)
        elif key in ("command", "func") or value is None or value is False or value == []:
            continue
        elif key == "run_dirs":
            positional = list(value)
        elif key == "grid":
            cmd += [part for spec in value for part in (flag(key), spec)]
        elif value is True:
            cmd.append(flag(key))
        elif isinstance(value, (list, tuple)):
            cmd += [flag(key), *map(str, value)]
        else:
            cmd += [flag(key), str(value)]
    return cmd + positional
