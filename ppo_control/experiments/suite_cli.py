"""``ppo-control bench SUITE`` and ``ppo-control report SUITE | --all [--check]``.

    ppo-control bench benchmarks/suites/mujoco_1m.toml --tasks Hopper-v5 --seeds 1 2 --workers 2
    ppo-control report mujoco_1m
    ppo-control report --all --check      # exit 1 naming every table or page that would change

``bench`` runs every job of the suite that has no finished run yet (one found anywhere under the
runs root by its config counts), resumes unfinished ones where they lie, and starts the rest in
RUNS_ROOT/SUITE/TASK/SETTING/seed_N; then it writes the suite's report. ``report`` runs nothing.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

from ..config import ConfigError
from . import report as rp
from .suites import RUNS_ROOT, SUITES_DIR, RunIndex, Suite, load_suite, suite_runs


def add_parsers(sub) -> None:
    """Register ``bench`` and ``report`` on the ``ppo-control`` subparsers."""
    from .runner import add_runner_args
    b = sub.add_parser("bench", help="run a benchmark suite (resumable), then write its report",
                       description="Run the jobs of a suite file (benchmarks/suites/*.toml) that have no finished "
                       "run yet, resuming unfinished ones, then write its tables and figures.")
    b.add_argument("suite", help="suite file or name, e.g. benchmarks/suites/mujoco_1m.toml or mujoco_1m")
    b.add_argument("--tasks", nargs="+", metavar="ENV_ID", help="only these tasks")
    b.add_argument("--seeds", nargs="+", type=int, metavar="SEED", help="only these seeds")
    b.add_argument("--settings", nargs="+", metavar="NAME", help="only these settings of the suite")
    b.add_argument("--dry-run", action="store_true", help="list each job and where its run is, run nothing")
    b.add_argument("--no-report", action="store_true", help="skip the tables and figures after the runs")
    b.add_argument("--fresh", action="store_true", help="run each job in its own folder (SUITE/TASK/SETTING/seed_N) "
                   "even where a run of it lies elsewhere: re-measures with the code checked out; the tables then "
                   "read the new runs (a job's own folder wins)")
    b.add_argument("--runs-root", default=str(RUNS_ROOT), help="where runs are found and made (default: %(default)s)")
    add_runner_args(b)
    b.set_defaults(func=_cmd_bench)

    r = sub.add_parser("report", help="write a suite's tables and figures and fill the tables in README/docs",
                       description="Write each suite's tables (.md, .csv) and figures from its runs, then fill every "
                       "'<!-- table: results/PATH.md -->' block in README.md and docs/*.md. Runs nothing.")
    r.add_argument("suites", nargs="*", metavar="SUITE", help="suite names or files")
    r.add_argument("--all", action="store_true", help=f"every suite in {SUITES_DIR}")
    r.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every table or page that "
                   "would change (provenance footers and figures excepted)")
    r.add_argument("--runs-root", default=str(RUNS_ROOT), help="where runs are found (default: %(default)s)")
    r.add_argument("--root", default=".", help="the folder holding README.md and docs/ (default: here)")
    r.set_defaults(func=_cmd_report)

    k = sub.add_parser("pack", help="compress finished runs' metrics (for committing results)",
                       description="Replace the metrics.jsonl of every finished run (one with summary.json) under "
                       "PATH by metrics.jsonl.xz, about 9x smaller; every reader takes it, each row is read back equal "
                       "before the original goes, and a resumed run unpacks it. Runs being written are skipped. "
                       "bench packs the runs it finishes.")
    k.add_argument("paths", nargs="+", metavar="PATH", help="run directories or folders holding them")
    k.add_argument("--into", nargs="+", metavar="SUITE", help="then move each finished run under PATH that a job of "
                   "these suites finds (the first suite that finds it) to RUNS_ROOT/SUITE/TASK/SETTING/seed_N")
    k.add_argument("--runs-root", default=str(RUNS_ROOT), help="with --into: the runs root (default: %(default)s)")
    k.add_argument("--dry-run", action="store_true", help="list the runs that would be packed or moved, change nothing")
    k.set_defaults(func=_cmd_pack)


def _cmd_bench(args: argparse.Namespace) -> int:
    from .runner import report, run_jobs
    suite = load_suite(args.suite)
    index = RunIndex(args.runs_root)
    found = suite_runs(suite, index, args.tasks, args.seeds)
    if args.settings:
        unknown = sorted(set(args.settings) - {st.name for st in suite.settings})
        if unknown:
            raise ConfigError(f"suite {suite.name} has no setting {', '.join(unknown)}; its settings: "
                              f"{', '.join(st.name for st in suite.settings)}")
        found = [(job, d) for job, d in found if job.setting in args.settings]
    if not found and not suite.commands:
        raise ConfigError(f"suite {suite.name}: no job matches --tasks {args.tasks} --seeds {args.seeds}"
                          + (f" --settings {args.settings}" if args.settings else ""))
    jobs, root = [], Path(args.runs_root)
    if args.fresh:  # only a run in the job's own folder counts
        found = [(job, d if d is not None and d.resolve() == (root / job.rel_dir).resolve() else None)
                 for job, d in found]
    first: Dict[str, str] = {}  # a run's config -> the setting whose job runs it
    for job, d in found:
        done = d is not None and (d / "summary.json").exists()
        where = d if d is not None else root / job.rel_dir
        key = json.dumps([job.task, job.seed, job.config.to_dict()], sort_keys=True, default=str)
        same = first.setdefault(key, job.setting)  # two settings that are one config are one run
        if args.dry_run:
            state = f"= {same}" if same != job.setting else "finished" if done else "resume" if d else "new"
            print(f"{state:<8} {job.task} {job.setting} seed {job.seed}: {where}")
        elif not done and same == job.setting:
            jobs.append((str(where.relative_to(root)), job.config))
    if args.dry_run:
        for c in suite.commands:
            print(f"{'command':<8} {c['run']}")
        print(f"{len(found)} jobs, {sum(1 for _, d in found if d is None)} not started; "
              f"{len(suite.commands)} commands")
        return 0
    t0, failed = time.time(), False
    if jobs:
        results = run_jobs(jobs, root, args.workers, args.backend, args.ray_address)
        print(f"runner: {report(results)} in {time.time() - t0:.0f} s")
        failed = any(r.status in ("failed", "conflict") for r in results)
        pack_runs([root / rel for rel, _ in jobs])
    for c in suite.commands:
        print(f"bench: {c['run']}", flush=True)
        failed |= subprocess.run(c["run"], shell=True).returncode != 0
    if not args.no_report:
        write_suite(suite, RunIndex(args.runs_root), _command(args), time.time() - t0)
    return 1 if failed else 0


def pack_runs(paths, dry_run: bool = False) -> int:
    """Pack (:func:`~ppo_control.metrics.pack_metrics`) every finished, unpacked run in or under ``paths``;
    print a line per run and a total; returns how many runs could not be packed."""
    from ..metrics import JSONL_NAME, PackError, pack_metrics
    from ..rundir import RunDirError, RunLock
    runs = sorted({s.parent for p in map(Path, paths) for s in Path(p).rglob("summary.json")  # p's own too
                   if (s.parent / JSONL_NAME).exists()})
    before = after = errors = 0
    for d in runs:
        if dry_run:
            print(f"would pack {d}")
            continue
        try:
            lock = RunLock(d, ["ppo-control", "pack"]).acquire()
        except RunDirError as e:
            print(f"skipped {d}: {e}")
            continue
        try:
            b, a = pack_metrics(d)
            before, after = before + b, after + a
            print(f"packed {d}: {b / 1e6:.2f} -> {a / 1e6:.2f} MB")
        except PackError as e:
            errors += 1
            print(f"not packed: {e}")
        finally:
            lock.release(undo=True)
    if not dry_run:
        print(f"pack: {len(runs) - errors} of {len(runs)} runs, {before / 1e6:.1f} -> {after / 1e6:.1f} MB")
    return errors


def _cmd_pack(args: argparse.Namespace) -> int:
    missing = [p for p in args.paths if not Path(p).is_dir()]
    if missing:
        raise ConfigError(f"not a folder: {', '.join(missing)}; give run directories or folders holding them")
    suites = [load_suite(s) for s in args.into or ()]  # a bad suite name stops it before anything changes
    errors = pack_runs(args.paths, args.dry_run)
    if suites:
        place_runs(args.paths, suites, RunIndex(args.runs_root), args.dry_run)
    return 1 if errors else 0


def place_runs(paths, suites: List[Suite], index: RunIndex, dry_run: bool = False) -> Dict[Path, Path]:
    """Move each finished run in or under ``paths`` to the folder a suite's job gives it
    (``index.root / job.rel_dir``), the first of ``suites`` whose job finds it (:func:`suites.same_run`)
    (a run of a setting since renamed moves to the new name); a run no job finds, one whose place is
    taken, and one in the place of a suite not named, stays. Returns {old: new} for the runs moved (or, with
    ``dry_run``, that would be)."""
    import os
    runs = sorted({s.parent.resolve() for p in map(Path, paths) for s in Path(p).rglob("summary.json")})
    root = index.root.resolve()
    others = {p.stem for p in SUITES_DIR.glob("*.toml")} - {s.name for s in suites}
    runs = [d for d in runs if not _in_place(d, root, others)]  # in another suite's place: stays there
    moved: Dict[Path, Path] = {}
    found = [(job, d.resolve()) for suite in suites for job in suite.jobs() for d in index.matches(job)]
    # runs already where a job of theirs puts them (one of two settings that are one config, say)
    home = {d for job, d in found if d == root / job.rel_dir}
    for job, d in found:
        new = root / job.rel_dir
        if d not in runs or d in moved or d in home:
            continue
        if new.exists() or new in moved.values():
            print(f"stays {d}: {new} is taken")
            continue
        moved[d] = new
    from ..rundir import RunDirError, RunLock
    for old, new in list(moved.items()):
        try:  # a run being extended or resumed stays where its writer expects it
            RunLock(old, ["ppo-control", "pack", "--into"]).acquire().release(undo=True)
        except RunDirError as e:
            print(f"stays {old}: {e}")
            del moved[old]
            continue
        print(f"{'would move' if dry_run else 'moved'} {old.relative_to(root)} -> {new.relative_to(root)}")
        if not dry_run:
            new.parent.mkdir(parents=True, exist_ok=True)
            os.rename(old, new)
    for d in runs:
        if d not in moved and d not in home:
            print(f"stays {d}: no job of {', '.join(s.name for s in suites)} finds it here")
    return moved


def _in_place(d: Path, root: Path, suites) -> bool:
    """Whether ``d`` already lies at a SUITE/TASK/SETTING/seed_N place of one of the suites named."""
    parts = d.relative_to(root).parts if d.is_relative_to(root) else ()
    return len(parts) == 4 and parts[0] in suites and parts[3].startswith("seed_")


def _command(args: argparse.Namespace) -> List[str]:
    return ["ppo-control", *sys.argv[2:]] if sys.argv[1:2] == [args.command] else ["ppo-control", args.command]


def write_suite(suite: Suite, index: RunIndex, command: List[str], wall_time: float) -> List[Path]:
    """Every table (.md with footer, .csv with '#' provenance lines) and figure of ``suite``."""
    md, csv, groups = rp.suite_tables(suite, index, lambda p: Path(p).read_text())
    prov = rp.suite_provenance(command, groups, wall_time)
    paths = []
    for path, body in md.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + rp.footer_text(prov))
        paths.append(path)
    for path, rows in csv.items():
        path.write_text(rp.csv_text(rows, prov))
        paths.append(path)
    paths += rp.write_figures(suite, groups, prov)
    return paths


def _suites(args) -> List[Suite]:
    """The suites to report, those whose tables quote other results files last (they quote the new ones)."""
    if args.all:
        suites = [load_suite(p) for p in sorted(SUITES_DIR.glob("*.toml"))]
    elif not args.suites:
        raise ConfigError("name a suite (e.g. report mujoco_1m) or give --all")
    else:
        suites = [load_suite(s) for s in args.suites]
    return sorted(suites, key=lambda s: any("row" in t for t in s.tables))


def _cmd_report(args: argparse.Namespace) -> int:
    t0 = time.time()
    suites, index = _suites(args), RunIndex(args.runs_root)
    pending: Dict[Path, str] = {}  # results file -> its new body (check mode)
    stale: List[str] = []
    for suite in suites:
        missing = [o for c in suite.commands for o in c.get("out", []) if not Path(o).exists()]
        if missing:
            stale.append(f"{', '.join(missing)} (made by suite {suite.name}'s commands: run bench {suite.name})")
        if args.check:
            md, csv, _ = rp.suite_tables(suite, index, lambda p: pending.get(Path(p)) or Path(p).read_text())
            for path, body in md.items():
                old = path.read_text() if path.exists() else ""
                pending[path] = body
                if rp.body_of(old) != body:
                    stale.append(f"{path} (from suite {suite.name})")
            for path, rows in csv.items():
                old = path.read_text() if path.exists() else ""
                if rp.csv_body(old) != rp.csv_body(rp.csv_text(rows, None)):
                    stale.append(f"{path} (from suite {suite.name})")
        else:
            for p in write_suite(suite, index, ["ppo-control", "report", *shlex.split(" ".join(args.suites)),
                                                *(["--all"] if args.all else [])], time.time() - t0):
                print(f"wrote {p}")
    stale += _fill_pages(Path(args.root), pending, write=not args.check)
    if args.check:
        for s in stale:
            print(f"would change: {s}")
        print(f"report --check: {len(stale)} would change; {len(pending)} tables and "
              f"{len(rp.pages(Path(args.root)))} pages checked ({time.time() - t0:.1f} s)")
        return 1 if stale else 0
    return 0


def _fill_pages(root: Path, pending: Dict[Path, str], write: bool) -> List[str]:
    """Fill (or, with ``write`` False, compare) every table block of README.md and docs/*.md."""
    missing, changed = [], []

    def read(rel: str) -> str:
        p = Path(rel)
        if p in pending:
            return pending[p]
        path = root / rel
        if not path.exists():
            missing.append(rel)
            return ""
        return path.read_text()

    for page in rp.pages(root):
        old = page.read_text()
        new = rp.fill_blocks(old, read)
        if new != old:
            changed.append(f"{page} (a table block)")
            if write:
                page.write_text(new)
                print(f"filled {page}")
    if missing:
        raise ConfigError(f"table blocks name results files that do not exist: {sorted(set(missing))}")
    return changed
