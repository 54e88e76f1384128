"""Benchmark suites: one TOML file per benchmark, its jobs, and the committed runs that belong to it.

A suite file (``benchmarks/suites/NAME.toml``) declares what to run and what to write::

    description = "Tuned PPO on the MuJoCo v5 tasks at 1M steps"
    tasks = ["HalfCheetah-v5", "Hopper-v5"]
    preset = "tuned"
    seeds = [1, 2, 3, 4, 5]
    total_steps = 1_000_000
    eval_interval = 50_000                    # optional, like every config field
    overrides = { num_envs = 64 }             # optional: every run
    seeds_for = { "HalfCheetah-v5" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }   # optional: per-task seeds

    [settings.tuned]                          # setting name -> config overrides ({} = the preset)
    [settings.default]
    preset = "default"                        # also: tasks, seeds, seeds_for, for a setting of its own
    [grid]                                    # optional: more settings, one per combination
    gae_lambda = [0.9, 0.95]                  # named "gae_lambda=0.9,ent_coef=0"
    ent_coef = [0.0, 0.01]

    [[table]]                                 # see report.py: out, settings, metrics, baseline
    [[figure]]                                # see report.py: out, settings, curve, x, heatmap
    [[command]]                               # a measurement the suite runs as a shell command
    run = "python benchmarks/speed.py env"

A run is identified by what it is, not where it lies: the (task, setting, seed) job's Config,
built as a run of the suite would be, is looked for among every run directory under the runs
root (its saved ``config.json``, compared as the runner compares a resumed run), so runs made
before the suite existed, under any folder, are found. New runs go to
``RUNS_ROOT/SUITE/TASK/SETTING/seed_N``.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..config import Config, ConfigError, make_config
from ..values import file_value
from .aggregate import format_value, saved_config
from .jobs import config_differences

RUNS_ROOT = Path("results/runs")
SUITES_DIR = Path("benchmarks/suites")
_FIELDS = {f.name: f for f in dataclasses.fields(Config)}
_SUITE_KEYS = {"description", "tasks", "preset", "seeds", "seeds_for", "overrides", "settings", "grid", "table",
               "figure", "command"}
_SETTING_KEYS = {"preset", "tasks", "seeds", "seeds_for"}
_NOT_SET = {"seed", "env_id", "run_name", "out_dir", "progress"}
_GRPO_ONLY = frozenset(n for n, f in _FIELDS.items() if f.metadata.get("help", "").startswith("GRPO"))
# options that change how much is simulated, not the training data (grpo_freeze_ended: "the same training
# data for less simulation"): a run made either way is the same run
SAME_DATA_FIELDS = frozenset({"grpo_freeze_ended"})


@dataclass(frozen=True)
class Setting:
    name: str
    preset: str
    overrides: dict
    tasks: Tuple[str, ...]
    seeds: Dict[str, Tuple[int, ...]]  # task -> seeds


@dataclass(frozen=True)
class Job:
    suite: str
    task: str
    setting: str
    seed: int
    config: Config

    @property
    def rel_dir(self) -> Path:
        """Where a run of this job made by the suite lives, below the runs root."""
        return Path(self.suite) / self.task / self.setting / f"seed_{self.seed}"


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    description: str
    settings: Tuple[Setting, ...]
    tables: Tuple[dict, ...]
    figures: Tuple[dict, ...]
    commands: Tuple[dict, ...]

    @property
    def tasks(self) -> List[str]:
        return list(dict.fromkeys(t for s in self.settings for t in s.tasks))

    def jobs(self, tasks: Optional[Sequence[str]] = None, seeds: Optional[Sequence[int]] = None) -> List[Job]:
        """Every (task, setting, seed) job, task-major; ``tasks`` / ``seeds`` keep a subset."""
        out = []
        for task in self.tasks:
            for s in self.settings:
                for seed in s.seeds.get(task, ()):
                    if (tasks and task not in tasks) or (seeds and seed not in seeds):
                        continue
                    out.append(Job(self.name, task, s.name, seed, _config(s, task, seed)))
        return out


def _config(s: Setting, task: str, seed: int) -> Config:
    try:
        return make_config(s.preset, **s.overrides, env_id=task, seed=seed)
    except ConfigError as e:
        raise ConfigError(f"setting {s.name!r} on {task}: {e}") from None


def suite_path(name_or_path) -> Path:
    """``mujoco_1m`` -> ``benchmarks/suites/mujoco_1m.toml``; a path is kept."""
    p = Path(name_or_path)
    return p if p.suffix == ".toml" else SUITES_DIR / f"{p}.toml"


def load_suite(name_or_path) -> Suite:
    path = suite_path(name_or_path)
    if not path.exists():
        known = sorted(p.stem for p in SUITES_DIR.glob("*.toml")) if SUITES_DIR.is_dir() else []
        raise ConfigError(f"no suite file {path}" + (f"; suites: {', '.join(known)}" if known else ""))
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}") from None
    return parse_suite(data, path.stem, path)


def parse_suite(data: dict, name: str, path: Path = Path("-")) -> Suite:
    """A Suite from a suite file's parsed TOML; every job's Config is built (so validated) here."""
    unknown = sorted(set(data) - _SUITE_KEYS - set(_FIELDS))
    if unknown:
        raise ConfigError(f"{path}: unknown keys {unknown}; keys: {sorted(_SUITE_KEYS)} and config fields")
    base = {k: v for k, v in data.items() if k in _FIELDS and k != "preset"}
    base.update(data.get("overrides", {}))
    bad = sorted(set(base) - set(_FIELDS) | set(base) & (_NOT_SET | {"preset"}))
    if bad:
        raise ConfigError(f"{path}: {bad} cannot be set for every run (not config fields, or set by the suite: "
                          f"{sorted(_NOT_SET | {'preset'})}; preset = ... at the top or in a setting)")
    tasks, preset = list(data.get("tasks", [])), data.get("preset", "default")
    seeds, seeds_for = data.get("seeds", [1]), data.get("seeds_for", {})
    named = dict(data.get("settings", {}))
    grid = data.get("grid", {})
    for values in itertools.product(*grid.values()) if grid else ():
        cell = dict(zip(grid, values))
        named[",".join(f"{k}={format_value(v)}" for k, v in cell.items())] = cell
    if not named:
        named = {preset: {}}
    settings = []
    for sname, spec in named.items():
        bad = sorted(set(spec) - _SETTING_KEYS - set(_FIELDS) | set(spec) & _NOT_SET)
        if bad:
            raise ConfigError(f"{path}: setting {sname!r}: {bad} cannot be set here (config fields other than "
                              f"{sorted(_NOT_SET)}, or {sorted(_SETTING_KEYS)})")
        s_tasks = list(spec.get("tasks", tasks))
        # the nearest word wins: the setting's seeds_for, then its seeds, then the suite's seeds_for, then seeds
        inherited = {t: spec["seeds"] if "seeds" in spec else seeds_for.get(t, seeds) for t in s_tasks}
        s_seeds = {t: tuple(spec.get("seeds_for", {}).get(t, inherited[t])) for t in s_tasks}
        try:
            overrides = _typed({**base, **{k: v for k, v in spec.items() if k in _FIELDS and k != "preset"}})
        except ConfigError as e:
            raise ConfigError(f"{path}: setting {sname!r}: {e}") from None
        settings.append(Setting(sname, spec.get("preset", preset), overrides, tuple(s_tasks), s_seeds))
    suite = Suite(name, path, data.get("description", ""), tuple(settings), tuple(data.get("table", [])),
                  tuple(data.get("figure", [])), tuple(data.get("command", [])))
    suite.jobs()  # validate every Config now, not when its run would start
    return suite


def _typed(values: dict) -> dict:
    """Each value as a preset file reads it (``values.file_value``): TOML lists for tuple fields (hidden
    sizes) as tuples, "none" for an Optional field that is off (a setting can undo a preset row's value)."""
    return {k: file_value(k, v) for k, v in values.items()}


# Finding the runs ---------------------------------------------------------------------------------

class RunIndex:
    """Every run directory's saved config under a runs root, read once, looked up by (env id, seed)."""

    def __init__(self, root=RUNS_ROOT):
        self.root = Path(root)
        self.loaded: dict = {}  # run directory -> aggregate.Run, filled by report.load_suite_runs
        self.by_key: Dict[Tuple[str, int], List[Tuple[Path, dict]]] = {}
        for p in sorted(self.root.rglob("config.json")) if self.root.is_dir() else []:
            try:
                cfg = json.loads(p.read_text())["config"]
            except (ValueError, KeyError, OSError):
                continue
            self.by_key.setdefault((cfg.get("env_id"), cfg.get("seed")), []).append((p.parent, cfg))

    def matches(self, job: Job) -> List[Path]:
        """Every run directory holding a run of ``job`` (``same_run``), sorted by path."""
        want = job.config.to_dict()
        return [d for d, cfg in self.by_key.get((job.task, job.seed), []) if same_run(cfg, want)]


def same_run(saved: dict, want: dict) -> bool:
    """Whether a saved config is the run ``want`` describes: every field but the output-only ones equal,
    a field the run did not save taking the value it had (``aggregate.saved_config``: the default, or
    ``config.SAVED_BEFORE``). GRPO's options are not compared for a PPO run, which never reads them, nor
    ``SAME_DATA_FIELDS``."""
    full = saved_config(saved)
    skip = SAME_DATA_FIELDS | (_GRPO_ONLY if want.get("algo") == "ppo" else frozenset())
    return not config_differences(full, {k: v for k, v in want.items() if k not in skip})


def suite_runs(suite: Suite, index: RunIndex, tasks=None, seeds=None) -> List[Tuple[Job, Optional[Path]]]:
    """Each job with its run directory (None: not run yet). Where several folders hold the same run
    (one config run twice, e.g. a sweep's cell that is also a preset), the job's own folder wins, then
    a finished run, then the folder holding most of that task and setting's seeds, so that a
    setting's seeds come from one place; then the path."""
    jobs = suite.jobs(tasks, seeds)
    hits = {j: index.matches(j) for j in jobs}
    share: Dict[Tuple[str, str, Path], int] = {}
    for j, ds in hits.items():
        for d in ds:
            share[(j.task, j.setting, d.parent)] = share.get((j.task, j.setting, d.parent), 0) + 1

    def rank(j: Job, d: Path):
        return (d != index.root / j.rel_dir, not (d / "summary.json").exists(),
                -share[(j.task, j.setting, d.parent)], str(d))
    return [(j, min(hits[j], key=lambda d: rank(j, d)) if hits[j] else None) for j in jobs]
