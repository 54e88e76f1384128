"""The report of a ``ppo-control tune`` study: RESULTS_DIR/STUDY.md and .csv, read from the study alone.

STUDY.md: the best trials (state, seed-mean objective, per-seed values, the sampled fields, wall
time), the best trial as a ``ppo-control train`` command line, the study's preset, fixed options
and search space, and provenance (the command, commit, machine, versions; the commits and CPUs
its trials ran at). STUDY.csv: every trial at full precision. Any worker, or a later
``tune ... --report``, can write it: everything comes from the storage.
"""
from __future__ import annotations

import json
import math
import re
import shlex
from collections import Counter
from pathlib import Path
from typing import List, Optional, Sequence

from ..config import OUTPUT_ONLY_FIELDS, Config, make_config
from ..values import option_args

_STATE_ORDER = {"COMPLETE": 0, "PRUNED": 1, "RUNNING": 2, "WAITING": 3, "FAIL": 4}


def ranked_trials(study) -> list:
    """Complete trials best first, then pruned ones (value: their last reported seed mean), running, failed."""
    return sorted(study.get_trials(deepcopy=False), key=lambda t: (
        _STATE_ORDER.get(t.state.name, 5), -(t.value if t.value is not None else -math.inf), t.number))


def trial_config(study, trial, seed: Optional[int] = None) -> Config:
    """The Config one of the trial's runs trained with (first seed unless ``seed``): the study's base config
    as it resolved when the study began (a preset row changed since does not move it) with the trial's values."""
    setup = study.user_attrs["setup"]
    seed = setup["seeds"][0] if seed is None else seed
    values = config_values(trial.user_attrs["values"])
    if "config" in setup:
        return Config.from_saved({**config_values(setup["config"]), **values, "seed": seed})
    return make_config(setup["preset"], **config_values(setup["fixed"]), **values, seed=seed)


def config_values(values: dict) -> dict:
    """Stored (JSON) values back to Config values: lists are tuples there."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}


def train_command(cfg: Config) -> List[str]:
    """``ppo-control train`` options that rebuild ``cfg``: its preset and env plus every field that differs."""
    from .sweep import FIELDS
    from .suites import _GRPO_ONLY
    skip = OUTPUT_ONLY_FIELDS | {"preset", "seed", "run_name", "env_id", "algo"} | (_GRPO_ONLY if cfg.algo == "ppo" else set())
    core = {"env_id": cfg.env_id, "algo": cfg.algo}

    def differing(other: Config) -> dict:
        return {k: getattr(cfg, k) for k in FIELDS if k not in skip and getattr(other, k) != getattr(cfg, k)}
    changes = differing(make_config(cfg.preset, **core))
    # a given option can move a preset default (GRPO's num_envs follows group_size): pin what moved
    changes.update(differing(make_config(cfg.preset, **core, **changes)))
    cmd = ["ppo-control", "train", "--preset", cfg.preset, "--env-id", cfg.env_id]
    cmd += ["--algo", cfg.algo] if cfg.algo != Config.algo else []
    for k in FIELDS:
        if k in changes:
            cmd += option_args(k, changes[k])
    return cmd + ["--seed", str(cfg.seed)]


def cell(v, digits: str = ".4g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (list, tuple)):
        return "x".join(map(str, v))
    return format(v, digits) if isinstance(v, float) else str(v)


def trial_rows(study) -> List[dict]:
    """One row per trial, best first, full precision: the CSV, and the data behind the table."""
    setup = study.user_attrs.get("setup") or {}
    trials = ranked_trials(study)
    fields = list(dict.fromkeys(k for t in trials for k in t.user_attrs.get("values", {})))
    rows = []
    for t in trials:
        a = t.user_attrs
        rows.append({"trial": t.number, "state": t.state.name.lower(), "objective": t.value,
                     **{f"seed {s}": a.get("seed_values", {}).get(str(s)) for s in setup.get("seeds", [])},
                     **{k: a.get("values", {}).get(k) for k in fields},
                     "pruned_at": a.get("pruned_at"), "wall_time_s": a.get("wall_time"), "commit": a.get("commit"),
                     "error": a.get("error")})
    return rows


def write_report(study, stem, command: Sequence[str], storage: str, top: int = 10) -> Path:
    """``stem.md`` (best trials, the best as a train command, the study's setup, provenance) and
    ``stem.csv`` (every trial)."""
    from .aggregate import provenance, provenance_text, write_csv
    setup = study.user_attrs.get("setup") or {}
    rows = trial_rows(study)
    counts = Counter(r["state"] for r in rows)
    prov = provenance(command, setup.get("seeds"))
    prov["trials ran at commits"] = sorted({r["commit"] for r in rows if r["commit"]})
    prov["trials ran on"] = sorted({t.user_attrs["cpu"] for t in study.get_trials(deepcopy=False)
                                    if "cpu" in t.user_attrs})
    lines = [f"# Tuning study `{study.study_name}`", "",
             f"Objective (maximised): {setup.get('objective')}, the {setup.get('objective_doc')}. "
             f"Trials: {', '.join(f'{n} {s}' for s, n in counts.most_common())} ({len(rows)} in all). "
             "A pruned trial's objective is its last reported seed mean, at step `pruned_at`.", "",
             f"## Best trials (top {min(top, len(rows))})", ""]
    shown = [{k: v for k, v in r.items() if k not in ("commit", "error")} for r in rows[:top]]
    if shown:
        lines += ["| " + " | ".join(shown[0]) + " |", "|" + "---|" * len(shown[0])]
        lines += ["| " + " | ".join(cell(v, ".1f" if k == "objective" or k.startswith("seed ") else ".4g")
                                    for k, v in r.items()) + " |" for r in shown]
    failed = [r for r in rows if r["error"]]
    if failed:
        lines += ["", "Failed trials (all errors in the CSV):", ""]
        lines += [f"- trial {r['trial']}: {r['error'][:300]}" for r in failed[:top]]
    complete = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    if complete:
        best = study.best_trial
        lines += ["", "## Best trial as a train command", "",
                  f"Trial {best.number}, objective {best.value:.1f}; run it once per seed "
                  f"({', '.join(map(str, setup['seeds']))}) to reproduce the trial:", "",
                  "    " + shlex.join(train_command(trial_config(study, best)))]
    space = study.user_attrs.get("space", {})
    lines += ["", "## Study", "", f"- study: {study.study_name} in {hide_password(storage)}",
              f"- preset: {setup.get('preset')}; fixed options: {json.dumps(setup.get('fixed', {}))}",
              f"- search space `{space.get('name')}`:"]
    lines += [f"  - {p}" for p in space.get("params", [])]
    lines += [f"- {p}" for p in provenance_text(prov)]
    md = Path(str(stem) + ".md")
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text("\n".join(lines) + "\n")
    write_csv(rows, Path(str(stem) + ".csv"), prov)
    return md


def hide_password(url: str) -> str:
    """A storage URL fit to print: ``postgresql://user:***@host/db``."""
    return re.sub(r"//([^:/@]+):[^@/]*@", r"//\1:***@", url)
