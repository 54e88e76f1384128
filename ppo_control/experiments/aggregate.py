"""Run directories -> per-setting statistics over seeds -> Markdown and CSV tables.

Per run (finished runs only, i.e. with ``summary.json``):
  final return  mean of the last 10 training episodes (``summary.json``)
  eval return   deterministic evaluation (``eval.json``)
  AUC / step    mean height of the learning curve (see ``curve_auc``)
  late eval     mean of the periodic evaluations over the last 20% of the run's steps (``late_eval``)
  wall time, SPS
Every report reads runs through ``load_run`` (every metrics column is in ``Run.rows``).

Over the seeds of one setting: mean, 95% percentile-bootstrap CI (``scipy.stats.bootstrap``)
and the interquartile mean (IQM, Agarwal et al. 2021) when there are at least 4 seeds.
Below 4 seeds the IQM is reported as missing: trimming 25% of 3 values removes nothing, so
the number would be the plain mean under another name.
"""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ..config import OUTPUT_ONLY_FIELDS
from ..metrics import read_metrics

RETURN_KEY, EVAL_KEY = "charts/episodic_return", "eval/return"
IQM_MIN_SEEDS = 4
LATE_FRACTION = 0.8  # late eval: the periodic evaluations at or after this share of the run's total steps


@dataclass(frozen=True)
class Run:
    """One run directory, read once. Curve arrays hold only iterations that finished an episode."""
    path: Path
    config: dict
    steps: np.ndarray  # [I] global_step at the end of the iteration
    wall: np.ndarray  # [I] cumulative training wall time, seconds
    returns: np.ndarray  # [I] mean episodic return of the episodes finished in that iteration
    summary: Optional[dict]
    error: Optional[str]
    curve_key: str = RETURN_KEY  # the metric ``returns`` follows
    rows: List[dict] = field(default_factory=list, repr=False, compare=False)  # every metrics row, every column

    @property
    def status(self) -> str:
        if self.summary is not None:
            return "finished"
        return "failed" if self.error is not None else "unfinished"

    @property
    def name(self) -> str:
        return self.path.name

    def column(self, key: str) -> Tuple[np.ndarray, np.ndarray]:
        """(global_step [K], value [K]) of metrics column ``key`` over the iterations that logged a finite value."""
        pts = [(r["global_step"], r[key]) for r in self.rows if _is_finite(r.get(key))]
        return np.array([p[0] for p in pts], dtype=float), np.array([p[1] for p in pts], dtype=float)

    def metric(self, key: str) -> float:
        """``final_return``, ``eval_return``, ``auc``, ``late_eval``, ``wall_time``, ``SPS`` or ``global_step``
        (NaN if absent)."""
        if key == "auc":
            return curve_auc(self.steps, self.returns)
        if key == "late_eval":
            return late_eval(self)
        if key == "hold_1m":
            return hold_ratio(self)
        v = (self.summary or {}).get(key)
        return float(v) if v is not None else float("nan")


def _is_finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def late_eval(run: "Run", fraction: float = LATE_FRACTION) -> float:
    """Mean of a run's periodic deterministic evaluations (``eval/return``) at or after ``fraction`` of its
    ``total_steps`` (8M-10M of a 10M run); NaN without any. One number per seed that a single unlucky final
    evaluation (a fall on Hopper) moves less than the final eval."""
    steps, values = run.column(EVAL_KEY)
    start = fraction * float(run.config.get("total_steps") or 0)
    late = values[steps >= start]
    return float(np.mean(late)) if len(late) else float("nan")


def hold_ratio(run: "Run", at: float = 1_000_000) -> float:
    """The run's final deterministic evaluation (summary's ``eval_return``) divided by its periodic evaluation
    (``eval/return``) at the first evaluation at or after ``at`` steps: below 1 where the policy lost return
    after ``at`` (0.9 = 10% below). NaN without either, or where the evaluation at ``at`` is not positive."""
    steps, values = run.column(EVAL_KEY)
    after = values[steps >= at]
    final = (run.summary or {}).get("eval_return")
    if not len(after) or final is None or not after[0] > 0:
        return float("nan")
    return float(final) / float(after[0])


def find_run_dirs(paths: Iterable) -> List[Path]:
    """Every run directory (one holding ``config.json``) at or below each path, sorted, without repeats."""
    found = []
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist")
        if (p / "config.json").exists():
            found.append(p)
        else:
            found.extend(c.parent for c in p.rglob("config.json"))
    return sorted(set(found))


def load_run(path, curve_key: str = RETURN_KEY) -> Run:
    """``curve_key``: the metric the curve follows — training episodes (``charts/episodic_return``)
    or the periodic deterministic evaluation (``eval/return``, runs with ``eval_interval``)."""
    path = Path(path)
    cfg = saved_config(json.loads((path / "config.json").read_text())["config"])
    all_rows = read_metrics(path)
    rows = [r for r in all_rows if _is_finite(r.get(curve_key))]
    summary = json.loads((path / "summary.json").read_text()) if (path / "summary.json").exists() else None
    error = (path / "error.txt").read_text() if (path / "error.txt").exists() else None
    return Run(path, cfg, np.array([r["global_step"] for r in rows], dtype=float),
               np.array([r["wall_time"] for r in rows], dtype=float),
               np.array([r[curve_key] for r in rows], dtype=float), summary, error, curve_key, all_rows)


def saved_config(saved: dict) -> dict:
    """A run's saved config with every field: fields added to Config after the run was made take their
    defaults, so old and new runs of the same setting group together; those whose default changed what
    a run does take the value the run had (``config.SAVED_BEFORE``)."""
    from ..config import SAVED_BEFORE
    return {**_config_defaults(), **SAVED_BEFORE, **saved}


def _config_defaults() -> dict:
    import dataclasses

    from ..config import Config
    return {f.name: (list(f.default) if isinstance(f.default, tuple) else f.default)
            for f in dataclasses.fields(Config)}


def load_runs(paths: Iterable, curve_key: str = RETURN_KEY) -> List[Run]:
    return [load_run(p, curve_key) for p in find_run_dirs(paths)]


def curve_auc(steps: np.ndarray, returns: np.ndarray) -> float:
    """Area under the piecewise-linear curve return(step) divided by its step span.

    steps, returns: [I]. Equals the curve's average height, so runs of any length compare on
    the return scale. One point gives that return; none gives NaN.
    """
    steps, returns = np.asarray(steps, float), np.asarray(returns, float)
    if len(steps) == 0:
        return float("nan")
    if len(steps) == 1 or steps[-1] == steps[0]:
        return float(np.mean(returns))
    area = np.sum((returns[1:] + returns[:-1]) / 2 * np.diff(steps))  # trapezoid rule
    return float(area / (steps[-1] - steps[0]))


def iqm(values: Sequence[float]) -> float:
    """Mean of the middle 50% (``scipy.stats.trim_mean`` at 0.25, as rliable); NaN below 4 values."""
    from scipy.stats import trim_mean
    x = _finite(values)
    return float(trim_mean(x, 0.25)) if len(x) >= IQM_MIN_SEEDS else float("nan")


def bootstrap_ci(values: Sequence[float], confidence: float = 0.95, n_resamples: int = 10_000,
                 seed: int = 0) -> Tuple[float, float]:
    """Percentile-bootstrap CI of the mean over seeds; (NaN, NaN) below 2 values.

    Percentile rather than BCa: with 2-10 seeds BCa's corrections are themselves noise, and
    percentile intervals stay inside the data's range. Seeded, so tables are reproducible.
    """
    from scipy.stats import bootstrap
    x = _finite(values)
    if len(x) < 2:
        return float("nan"), float("nan")
    if np.ptp(x) == 0:
        return float(x[0]), float(x[0])
    res = bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_resamples, method="percentile",
                    vectorized=True, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def ratio_ci(num: Sequence[float], den: Sequence[float], confidence: float = 0.95, n_resamples: int = 10_000,
             seed: int = 0) -> Tuple[float, float]:
    """Percentile-bootstrap CI of ``mean(num) / mean(den)`` for two independent sets of seeds (each
    side resampled on its own, e.g. one algorithm's seeds against another's); (NaN, NaN) with fewer
    than 2 values on a side."""
    from scipy.stats import bootstrap
    a, b = _finite(num), _finite(den)
    if len(a) < 2 or len(b) < 2:
        return float("nan"), float("nan")
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return float(a[0] / b[0]), float(a[0] / b[0])

    def stat(x, y, axis=-1):
        return np.mean(x, axis=axis) / np.mean(y, axis=axis)

    res = bootstrap((a, b), stat, confidence_level=confidence, n_resamples=n_resamples, method="percentile",
                    paired=False, vectorized=True, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def seed_stats(values: Sequence[float]) -> dict:
    """{n, mean, ci_low, ci_high, iqm} of one metric over seeds (NaN values dropped)."""
    x = _finite(values)
    lo, hi = bootstrap_ci(x)
    return {"n": len(x), "mean": float(np.mean(x)) if len(x) else float("nan"), "ci_low": lo, "ci_high": hi,
            "iqm": iqm(x)}


def _finite(values) -> np.ndarray:
    x = np.asarray(list(values), dtype=float)
    return x[np.isfinite(x)]


# Grouping -----------------------------------------------------------------------------------

def varying_fields(runs: Sequence[Run], ignore: Iterable[str] = ()) -> List[str]:
    """Config fields whose values differ between runs, other than the seed and output-only fields."""
    skip = set(ignore) | OUTPUT_ONLY_FIELDS | {"seed"}
    names = sorted({k for r in runs for k in r.config} - skip)
    return [k for k in names if len({json.dumps(r.config.get(k)) for r in runs}) > 1]


def group_runs(runs: Sequence[Run], by: Sequence[str]) -> Dict[tuple, List[Run]]:
    """{values of ``by`` fields: runs}, keys sorted (numbers numerically, None first)."""
    for f in by:
        if runs and all(f not in r.config for r in runs):
            raise KeyError(f"no run has config field {f!r}; fields: {sorted(runs[0].config)}")
    groups: Dict[tuple, List[Run]] = {}
    for r in runs:
        groups.setdefault(tuple(_hashable(r.config.get(f)) for f in by), []).append(r)
    return {k: groups[k] for k in sorted(groups, key=lambda k: tuple(_sort_key(v) for v in k))}


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


def _sort_key(v):
    if v is None:
        return (0, 0, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (1, v, "")
    return (2, 0, str(v))


def format_value(v) -> str:
    """Short, stable text for a config value: 0.0 -> '0', (64, 64) -> '64x64', None -> 'none'."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return repr(v)[:-2] if repr(v).endswith(".0") else repr(v)
    if isinstance(v, (tuple, list)):
        return "x".join(format_value(x) for x in v)
    return str(v)


def group_label(by: Sequence[str], key: tuple) -> str:
    if not by:
        return "all runs"
    if list(by) == ["env_id"]:
        return str(key[0])
    return ", ".join(f"{f}={format_value(v)}" for f, v in zip(by, key))


# Tables -------------------------------------------------------------------------------------

STAT_METRICS = ("final_return", "eval_return", "auc")


def summarize(runs: Sequence[Run], by: Sequence[str]) -> List[dict]:
    """One row per group: its ``by`` values, seed counts and per-metric seed statistics."""
    rows = []
    for key, members in group_runs(runs, by).items():
        done = [r for r in members if r.status == "finished"]
        row = {f: format_value(v) for f, v in zip(by, key)}
        row.update(setting=group_label(by, key), seeds=" ".join(str(r.config.get("seed")) for r in done),
                   n_finished=len(done), n_unfinished=sum(r.status == "unfinished" for r in members),
                   n_failed=sum(r.status == "failed" for r in members))
        for m in STAT_METRICS:
            s = seed_stats([r.metric(m) for r in done])
            row.update({f"{m}_{k}": v for k, v in s.items() if k != "n"})
        for m in ("wall_time", "SPS", "global_step"):
            row[f"{m}_mean"] = float(np.mean([r.metric(m) for r in done])) if done else float("nan")
        row["peak_mean_eval"] = peak_of_mean_eval(done)
        rows.append(row)
    return rows


def peak_of_mean_eval(runs: Sequence[Run]) -> float:
    """Tianshou's way of reporting: the highest point of the seed-mean periodic evaluation curve
    (``eval/return``), over the evaluation points every seed reached; NaN without periodic evals.

    An evaluation is placed by ``global_step // eval_interval`` (the multiple of the interval its
    iteration crossed), so seeds line up.  Being a maximum over points, it is >= the final value:
    compare it only with numbers reported the same way."""
    curves = []
    for r in runs:
        k = int(r.config.get("eval_interval") or 0)
        steps, values = r.column(EVAL_KEY)
        if k <= 0 or not len(steps):
            return float("nan")
        curves.append({int(s) // k: float(v) for s, v in zip(steps, values)})
    common = set.intersection(*(set(c) for c in curves)) if curves else set()
    return max((float(np.mean([c[i] for c in curves])) for i in common), default=float("nan"))


def _num(x: float, digits: int = 1) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:,.{digits}f}"


def _mean_ci(row: dict, m: str) -> str:
    s = _num(row[f"{m}_mean"])
    if math.isfinite(row[f"{m}_ci_low"]):
        s += f" [{_num(row[f'{m}_ci_low'])}, {_num(row[f'{m}_ci_high'])}]"
    return s


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "—"
    if seconds < 10:
        return f"{seconds:.1f} s"
    return f"{seconds:.0f} s" if seconds < 120 else (f"{seconds / 60:.1f} min" if seconds < 7200
                                                       else f"{seconds / 3600:.1f} h")


def markdown_table(rows: Sequence[dict]) -> str:
    """Rows from ``summarize`` as a Markdown table (mean [95% CI] over seeds, IQM for >= 4 seeds)."""
    head = ["setting", "seeds", "final return", "final IQM", "eval return", "eval IQM", "peak mean eval", "AUC/step",
            "wall time", "SPS", "steps"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for r in rows:
        seeds = str(r["n_finished"]) + (f" (+{r['n_unfinished']} unfinished)" if r["n_unfinished"] else "") + \
            (f" (+{r['n_failed']} failed)" if r["n_failed"] else "")
        cells = [r["setting"], seeds, _mean_ci(r, "final_return"), _num(r["final_return_iqm"]),
                 _mean_ci(r, "eval_return"), _num(r["eval_return_iqm"]), _num(r["peak_mean_eval"]),
                 _mean_ci(r, "auc"),
                 _duration(r["wall_time_mean"]), _num(r["SPS_mean"], 0), _num(r["global_step_mean"], 0)]
        lines.append("| " + " | ".join(cells) + " |")
    notes = ("Mean over seeds [95% percentile-bootstrap CI]; final return = mean of the last 10 training "
             "episodes; eval = deterministic policy; peak mean eval = highest point of the seed-mean periodic "
             "evaluation curve (Tianshou's reporting; needs eval_interval); AUC/step = mean height of the training curve; "
             f"IQM only with >= {IQM_MIN_SEEDS} seeds; wall time and SPS are per-run means.")
    return "\n".join(lines) + "\n\n" + notes + "\n"


def provenance_text(prov: Optional[dict]) -> List[str]:
    """``key: value`` lines describing how a result was made (command, commit, machine, ...)."""
    if not prov:
        return []
    return [f"{k}: {v if isinstance(v, str) else json.dumps(v)}" for k, v in prov.items()]


def write_tables(rows: Sequence[dict], stem, provenance: Optional[dict] = None) -> Tuple[Path, Path]:
    """Write ``stem.md`` (table + provenance) and ``stem.csv`` (provenance as leading ``#`` lines)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    md, cs = stem.with_name(stem.name + ".md"), stem.with_name(stem.name + ".csv")
    prov = provenance_text(provenance)
    md.write_text(markdown_table(rows) + ("\n" + "\n".join(f"- {p}" for p in prov) + "\n" if prov else ""))
    return md, write_csv(rows, cs, provenance)


def write_csv(rows: Sequence[dict], path, provenance: Optional[dict] = None) -> Path:
    """Rows as CSV, preceded by provenance as ``# key: value`` lines (``pandas.read_csv(comment="#")``)."""
    buf = io.StringIO()
    buf.writelines(f"# {p}\n" for p in provenance_text(provenance))
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(buf.getvalue())
    return Path(path)


def run_rows(runs: Sequence[Run]) -> List[dict]:
    """One row per run (status, seed, per-run metrics): the data behind every summary table."""
    return [{"run": r.name, "env_id": r.config.get("env_id"), "algo": r.config.get("algo"),
             "seed": r.config.get("seed"), "status": r.status,
             **{m: r.metric(m) for m in ("final_return", "eval_return", "auc", "wall_time", "SPS", "global_step")}}
            for r in runs]


def provenance(command: Sequence[str], seeds: Optional[Sequence[int]] = None,
               wall_time: Optional[float] = None) -> dict:
    """Command line, git commit, machine and versions (``runinfo.environment_info``), seeds, wall time."""
    import shlex
    from datetime import datetime, timezone
    from ..runinfo import environment_info
    info = environment_info()
    prov = {"command": shlex.join(command), "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "commit": info.get("commit"), "dirty": info.get("dirty"), "cpu": info.get("cpu"),
            "cores": info.get("cores"),
            "versions": {k: info.get(k) for k in ("python", "torch", "gymnasium", "mujoco", "numpy")}}
    if seeds is not None:
        prov["seeds"] = list(seeds)
    if wall_time is not None:
        prov["wall_time_s"] = round(wall_time, 1)
    return prov
