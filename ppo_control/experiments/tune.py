"""``ppo-control tune``: hyperparameter search with Optuna (TPE + pruning) over runner jobs.

    ppo-control tune --env-id Hopper-v5 --preset fast --space ppo --seeds 1 2 \\
        --total-steps 1000000 --eval-interval 50000 --n-trials 20
    ppo-control tune --env-id Hopper-v5 --preset fast --space ppo ... --report   # report only, no trials

The study lives in ``--storage`` (default ``sqlite:///RESULTS_DIR/STUDY.db``, STUDY = ENV__PRESET__SPACE):
the same command again continues it, the same command in several shells at once shares it
(``--n-trials`` each), and any database URL Optuna takes (``postgresql://...``) serves a cluster.
Options that decide what a trial measures (preset, fixed config, seeds, objective) are stored with
the study; a command that differs in them is refused rather than mixed in.

A trial is one sampled config (``search_space.py``) x every ``--seeds`` seed, each a runner job in
OUT_DIR/STUDY/trial_NNNN/ENV__sSEED. Its value (``--objective eval_last3``) is the seed mean of each
run's mean over its last 3 periodic deterministic evaluations (``eval/return``): the end of
training, less noisy than one evaluation, and free of the exploration noise of training episodes.

Pruning: training runs in the runner's worker processes, which append a metrics.jsonl row per
iteration. The trial's jobs go to ``run_jobs`` (unchanged: skip/resume, log, one process per job)
on a background thread, while this thread polls the run directories every POLL_S seconds, reports
the seed mean at each evaluation step every seed has reached, and on ``should_prune`` sends SIGINT
to the jobs: the runner's own stop path, where each job saves its checkpoint and returns
"interrupted". Jobs start at most ``--workers`` at a time, in chunks, so a pruned trial starts no
further seed; with fewer workers than seeds a seed mean exists only in the last chunk and pruning
acts late, hence the default workers = seeds.

Each trial's TPE sampler is seeded with ``sampler_seed + trial number``: one worker reproduces its
study, and parallel workers (whose trial numbers differ) never draw the same random start-up trials.
"""
from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Dict, Optional, Sequence

from ..config import OUTPUT_ONLY_FIELDS, PRESETS, Config, ConfigError, make_config
from ..metrics import read_metrics
from .jobs import STOP_GRACE_S, config_differences
from .search_space import SPACES, Param, get_space, parse_space, sample_values, space_lines
from .tune_report import cell, hide_password, write_report

POLL_S = 2.0
OBJECTIVES = {
    "eval_last3": "seed mean of each run's mean over its last 3 periodic deterministic evaluations (eval/return)",
    "eval_auc": "seed mean of each run's mean over all its periodic evaluations (area under the eval curve)",
    "final_return": "seed mean of each run's final return (mean of its last 10 training episodes)",
}
PRUNERS = ("median", "halving", "none")


def _optuna():
    try:
        import optuna
    except ImportError:
        raise ConfigError("ppo-control tune needs Optuna: pip install -e '.[tune]'") from None
    return optuna


def make_sampler(seed: int):
    optuna = _optuna()
    with warnings.catch_warnings():  # both options are marked experimental in older Optuna releases
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # multivariate: lr, epochs and batch shape act together; constant liar: parallel workers
        # treat each other's running trials as bad and so spread out
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, constant_liar=True)


def make_pruner(name: str, cfg: Config):
    """``median``: below the median of earlier trials at the same step, never in a run's first quarter
    (early curves cross) nor before 5 trials completed. ``halving``: successive halving, rungs from 1/9
    of the run, keeping a third. ``none``."""
    optuna = _optuna()
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=cfg.total_steps // 4)
    if name == "halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=max(cfg.eval_interval, cfg.total_steps // 9),
                                                      reduction_factor=3)
    if name == "none":
        return optuna.pruners.NopPruner()
    raise ConfigError(f"unknown pruner {name!r}; choose one of {list(PRUNERS)}")


def default_storage(results_dir, study_name: str) -> str:
    return f"sqlite:///{Path(results_dir) / (study_name + '.db')}"


def _storage(url: str):
    optuna = _optuna()
    try:
        if url.startswith("sqlite:///"):
            Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
            # workers sharing one file wait for its lock instead of failing after SQLite's 5 s
            return optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}})
        return optuna.storages.RDBStorage(url)
    except Exception as e:  # a malformed URL, a missing database driver, a server that refuses
        raise ConfigError(f"--storage {hide_password(url)}: {type(e).__name__}: {e}") from None


def load_study(study_name: str, storage: str):
    try:
        return _optuna().load_study(study_name=study_name, storage=_storage(storage))
    except KeyError:
        raise ConfigError(f"no study {study_name!r} in {hide_password(storage)}") from None


# Reading the runs ------------------------------------------------------------------------------

def eval_curve(run_dir, interval: int) -> Dict[int, float]:
    """``{step: eval/return}`` of a run so far, step = the multiple of ``interval`` the evaluation is for."""
    rows = read_metrics(run_dir)
    return {int(r["global_step"]) // interval * interval: float(r["eval/return"])
            for r in rows if r.get("eval/return") is not None}


def run_value(objective: str, run_dir, interval: int) -> float:
    """One run's contribution to the objective (NaN when it has none)."""
    if objective == "final_return":
        path = Path(run_dir) / "summary.json"
        return float(json.loads(path.read_text()).get("final_return", math.nan)) if path.exists() else math.nan
    curve = eval_curve(run_dir, interval) if interval else {}
    values = [curve[s] for s in sorted(curve)]
    values = values[-3:] if objective == "eval_last3" else values
    return sum(values) / len(values) if values else math.nan


class _Reporter:
    """Reports the seed mean at each evaluation step all runs have reached; says when to prune."""

    def __init__(self, trial, run_dirs: Sequence[Path], interval: int):
        self.trial, self.run_dirs, self.interval, self.last, self.pruned_at = trial, run_dirs, interval, -1, None

    def poll(self, judge: bool = True) -> bool:
        if not self.interval:
            return False
        curves = [eval_curve(d, self.interval) for d in self.run_dirs]
        for step in sorted(set.intersection(*(set(c) for c in curves))):
            if step > self.last:
                self.trial.report(sum(c[step] for c in curves) / len(curves), step)
                self.last = step
                if judge and self.trial.should_prune():
                    self.pruned_at = step
                    return True
        return False


# Running a trial's jobs under watch ------------------------------------------------------------

def run_watched(jobs, out_dir, workers: int, poll, echo=print):
    """``run_jobs`` on a background thread, ``workers`` jobs per chunk; ``poll()`` every POLL_S seconds,
    and when it returns True the running jobs are stopped (checkpoint saved) and no chunk follows.
    Returns ``(results, stopped)``."""
    from .runner import run_jobs
    results = []
    for start in range(0, len(jobs), workers):
        box, done = {}, threading.Event()

        def target(chunk=jobs[start:start + workers]):
            try:
                box["results"] = run_jobs(chunk, out_dir, workers, echo=echo)
            except BaseException as e:  # handed to the main thread below
                box["error"] = e
            finally:
                done.set()

        # An Event, not Thread.join: a join cut by Ctrl-C can leave is_alive() False while the thread runs
        # (CPython before 3.13), and the jobs would go on unstopped.
        threading.Thread(target=target, name="tune-runner", daemon=True).start()
        stop_since = None
        try:
            while not done.wait(POLL_S):
                if stop_since is None and poll():
                    stop_since = time.monotonic()
                if stop_since is not None:  # again each round: a job still starting up ignores SIGINT
                    _signal_jobs(stop_since)
        except KeyboardInterrupt:
            since = time.monotonic()
            while not done.is_set():
                _signal_jobs(since)
                done.wait(1.0)
            raise
        if "error" in box:
            raise box["error"]
        results += box["results"]
        if stop_since is not None:
            return results, True
    return results, False


def _signal_jobs(since: float) -> None:
    """SIGINT to every job process (the runner's stop: checkpoint, then "interrupted"); SIGKILL once
    STOP_GRACE_S has passed. This process runs one trial at a time, so its children are that trial's jobs."""
    sig = signal.SIGINT if time.monotonic() - since < STOP_GRACE_S else signal.SIGKILL
    for p in multiprocessing.active_children():
        try:
            os.kill(p.pid, sig)
        except ProcessLookupError:
            pass


# The study --------------------------------------------------------------------------------------

def _jsonable(values: dict) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def open_study(study_name: str, storage: str, setup: dict, params: Sequence[Param], pruner):
    """Create or load the study; refuse one whose stored setup measures something else."""
    optuna = _optuna()
    study = optuna.create_study(study_name=study_name, storage=_storage(storage), direction="maximize",
                                load_if_exists=True, sampler=make_sampler(0), pruner=pruner)
    saved = study.user_attrs.get("setup")
    if saved is None:
        study.set_user_attr("setup", setup)
        return study
    searched = {p.name for p in params}
    diff = [k for k in ("preset", "seeds", "objective") if saved.get(k) != setup[k]]
    diff += [k for k in config_differences(saved["config"], setup["config"]) if k not in searched]
    if diff:
        there = ", ".join(f"{k}: {saved.get(k, saved['config'].get(k))!r} there, "
                          f"{setup.get(k, setup['config'].get(k))!r} here" for k in diff)
        raise ConfigError(f"study {study_name!r} in {hide_password(storage)} was made with other settings "
                          f"({there}); its trials would not compare. Use the same options or another --study-name")
    return study


def run_study(study_name: str, storage: str, space: dict, preset: str = "default", fixed: Optional[dict] = None,
              seeds: Sequence[int] = (1, 2), n_trials: int = 10, out_dir="runs", workers: Optional[int] = None,
              pruner="median", objective: str = "eval_last3", sampler_seed: int = 0, space_name: str = "custom",
              echo=print):
    """Run ``n_trials`` more trials of the study (created if new); returns the Optuna study.

    ``fixed``: Config options every trial shares; ``pruner``: a name in PRUNERS or an Optuna pruner.
    """
    from ..train import stop_signals_as_interrupt
    fixed = dict(fixed or {})
    params = parse_space(space, preset, fixed, f"search space {space_name!r}")
    base = make_config(preset, **fixed)
    if objective not in OBJECTIVES:
        raise ConfigError(f"unknown objective {objective!r}; choose one of {list(OBJECTIVES)}")
    if (objective != "final_return" or pruner not in (None, "none")) and not base.eval_interval:
        raise ConfigError(f"objective {objective} and pruning read the periodic evaluation: set --eval-interval "
                          f"(e.g. {max(1, base.total_steps // 20)}, 20 evaluations per run)")
    if n_trials < 0:
        raise ConfigError(f"--n-trials must be >= 0 (got {n_trials})")
    if not seeds or len(set(seeds)) < len(seeds):
        raise ConfigError(f"--seeds must be distinct integers (got {list(seeds)})")
    if not study_name or "/" in study_name or study_name in (".", ".."):
        raise ConfigError(f"study name {study_name!r} must be a plain folder name (it names OUT_DIR/STUDY)")
    searched = {p.name for p in params}
    setup = {"preset": preset, "fixed": _jsonable(fixed), "seeds": list(seeds), "objective": objective,
             "objective_doc": OBJECTIVES[objective],
             "config": {k: v for k, v in base.to_dict().items()
                        if k not in searched and k not in OUTPUT_ONLY_FIELDS and k != "seed"}}
    if isinstance(pruner, str) or pruner is None:
        pruner = make_pruner(pruner or "none", base)
    study = open_study(study_name, storage, setup, params, pruner)
    study.set_user_attr("space", {"name": space_name, "params": space_lines(params)})
    with stop_signals_as_interrupt():
        for _ in range(n_trials):
            run_trial(study, params, preset, fixed, seeds, objective, Path(out_dir) / study_name, workers,
                      sampler_seed, echo)
    return study


def ask(study, params: Sequence[Param], sampler_seed: int):
    """A new trial and its sampled ``{field: value}``, drawn by a TPE sampler seeded with sampler_seed +
    its trial number (Optuna samples at the first suggest, so the sampler set after ``ask`` draws)."""
    trial = study.ask()
    study.sampler = make_sampler(sampler_seed + trial.number)
    return trial, sample_values(trial, params)


def run_trial(study, params, preset, fixed, seeds, objective, root: Path, workers, sampler_seed, echo) -> None:
    """Ask, run the sampled config x seeds (pruned on the way), tell. Any exception, Ctrl-C included,
    marks the trial failed before it propagates, so no trial is left "running" in the study."""
    from optuna.trial import TrialState
    trial, values = ask(study, params, sampler_seed)
    try:
        state, value, error = _run_trial(trial, values, preset, fixed, seeds, objective, root, workers, echo)
    except KeyboardInterrupt:
        _tell(study, trial, TrialState.FAIL, echo, error="interrupted (Ctrl-C/SIGTERM); its runs are checkpointed")
        raise
    except BaseException as e:
        _tell(study, trial, TrialState.FAIL, echo, error=f"{type(e).__name__}: {e}")
        raise
    _tell(study, trial, getattr(TrialState, state), echo, value, error)


def _run_trial(trial, values, preset, fixed, seeds, objective, root: Path, workers, echo):
    """``(state, value, error)`` of one trial whose values are drawn."""
    from .runner import default_workers
    run_out = root / f"trial_{trial.number:04d}"
    for k, v in {"values": _jsonable(values), "run_dir": str(run_out), **_machine()}.items():
        trial.set_user_attr(k, v)
    try:
        cfgs = [make_config(preset, **fixed, **values, seed=s) for s in seeds]
    except ConfigError as e:
        return "FAIL", None, f"invalid combination: {e}"
    jobs = [(f"{cfg.env_id}__s{cfg.seed}", cfg) for cfg in cfgs]
    interval = cfgs[0].eval_interval
    reporter = _Reporter(trial, [run_out / n for n, _ in jobs], interval)
    echo(f"tune: trial {trial.number}: {', '.join(f'{k}={cell(v)}' for k, v in values.items())}; "
         f"{len(jobs)} runs in {run_out}")
    t0 = time.time()
    results, pruned = run_watched(jobs, run_out, workers or min(len(jobs), default_workers(cfgs)), reporter.poll, echo)
    reporter.poll(judge=False)  # evaluations that landed after the last poll, for later pruning decisions
    trial.set_user_attr("wall_time", round(time.time() - t0, 1))
    conflict = [r.error for r in results if r.status == "conflict"]
    if conflict:  # OUT_DIR holds runs of another study under this name: nothing later would run either
        raise ConfigError(conflict[0])
    if pruned:
        trial.set_user_attr("pruned_at", reporter.pruned_at)
        return "PRUNED", None, None
    bad = [r for r in results if r.status not in ("finished", "skipped")]
    if bad:
        last_line = (bad[0].error or "").strip().splitlines()[-1:]
        return "FAIL", None, f"{bad[0].run_name} {bad[0].status}" + "".join(f": {x}" for x in last_line)
    per_seed = {str(cfg.seed): run_value(objective, run_out / n, interval) for n, cfg in jobs}
    trial.set_user_attr("seed_values", per_seed)
    if not all(math.isfinite(v) for v in per_seed.values()):
        return "FAIL", None, f"no {objective} value for some seed: {per_seed}"
    return "COMPLETE", sum(per_seed.values()) / len(per_seed), None


def _tell(study, trial, state, echo, value=None, error=None) -> None:
    if error:
        trial.set_user_attr("error", error)
    study.tell(trial, value, state=state, skip_if_finished=True)
    what = (f"value {value:.1f}" if value is not None else
            f"pruned at step {trial.user_attrs.get('pruned_at')}" if state.name == "PRUNED" else f"failed: {error}")
    echo(f"tune: trial {trial.number}: {what}")


_MACHINE: Dict[str, object] = {}


def _machine() -> dict:
    """Commit and CPU of this worker, kept per trial: a study's trials may come from several machines."""
    if not _MACHINE:
        from ..runinfo import cpu_model, git_commit
        c = git_commit()
        _MACHINE.update(commit=(c["commit"] or "unknown")[:12] + ("+dirty" if c["dirty"] else ""), cpu=cpu_model())
    return dict(_MACHINE)


# The command ------------------------------------------------------------------------------------

def add_parsers(sub) -> None:
    """Register ``tune`` on the ``ppo-control`` subparsers."""
    from ..cliargs import add_config_args
    from .runner import _positive_int
    t = sub.add_parser("tune", help="hyperparameter search: Optuna TPE + pruning over runner jobs",
                       description="Run --n-trials trials of an Optuna study (TPE sampler, pruned on the periodic "
                       "evaluation): each trial a config drawn from --space x every --seed, run as runner jobs in "
                       "OUT_DIR/STUDY/trial_NNNN. The same command again continues the study; several at once "
                       "share it. Then writes RESULTS_DIR/STUDY.md and .csv.")
    g = t.add_argument_group("study")
    g.add_argument("--space", default="ppo", choices=sorted(SPACES),
                   help="named search space in ppo_control/experiments/search_space.py (default: ppo)")
    g.add_argument("--study-name", default=None, help="default: ENV_ID__PRESET__SPACE")
    g.add_argument("--storage", default=None, help="Optuna storage URL (default: sqlite:///RESULTS_DIR/STUDY.db); "
                   "e.g. postgresql://user@host/db for workers on several machines")
    g.add_argument("--results-dir", default="results/tune",
                   help="folder of the default SQLite study and the report (default: results/tune)")
    g.add_argument("--n-trials", type=int, default=10, help="trials this process runs (default: 10; 0 = none)")
    g.add_argument("--seeds", nargs="+", type=int, default=[1, 2], metavar="SEED",
                   help="seeds every trial runs; its value is their mean (default: 1 2)")
    g.add_argument("--workers", type=_positive_int, default=None,
                   help="runs at once (default: one per seed, at most usable cores // cores per run)")
    g.add_argument("--pruner", choices=PRUNERS, default="median", help=make_pruner.__doc__.replace("%", "%%")
                   .replace("``", "") + " (default: median)")
    g.add_argument("--objective", choices=sorted(OBJECTIVES), default="eval_last3",
                   help="; ".join(f"{k}: {v}" for k, v in OBJECTIVES.items()) + " (default: eval_last3)")
    g.add_argument("--sampler-seed", type=int, default=0, help="TPE seed; trial N uses this + N (default: 0)")
    g.add_argument("--report", action="store_true", help="only write the report of the study as it stands")
    t.add_argument("--preset", default="default", choices=sorted(PRESETS), help="starting configuration")
    add_config_args(t, skip=("preset", "seed", "run_name"))
    t.set_defaults(func=_cmd_tune)


def _cmd_tune(args) -> int:
    from .sweep import FIELDS, command_line
    fixed = {k: v for k, v in vars(args).items() if k in FIELDS and k not in ("seed", "run_name", "preset")}
    out_dir = fixed.pop("out_dir", Config.out_dir)
    name = args.study_name or f"{make_config(args.preset, **fixed).env_id}__{args.preset}__{args.space}"
    storage = args.storage or default_storage(args.results_dir, name)
    _optuna().logging.set_verbosity(_optuna().logging.WARNING)  # trials are echoed here, one line each
    if args.report:
        study = load_study(name, storage)
    else:
        study = run_study(name, storage, get_space(args.space), args.preset, fixed, args.seeds, args.n_trials,
                          out_dir, args.workers, args.pruner, args.objective, args.sampler_seed, args.space)
    print(f"wrote {write_report(study, Path(args.results_dir) / name, command_line(args), storage)}")
    return 0
