"""Learning curves (seed mean + 95% CI band), per-environment panels and sweep heatmaps, as PNG.

Uses ``matplotlib.figure.Figure`` directly (Agg canvas, no pyplot), so plotting never touches a
global backend or needs a display, and figures are freed when they go out of scope.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from matplotlib.figure import Figure

from .aggregate import Run, format_value, group_runs

X_AXES = ("steps", "time")
GRID_POINTS = 200


def run_curve(run: Run, x: str = "steps") -> Tuple[np.ndarray, np.ndarray]:
    """(x [I], return [I]) of one run; x is env steps or cumulative training wall time (s)."""
    if x not in X_AXES:
        raise ValueError(f"x must be one of {X_AXES} (got {x!r})")
    return (run.steps if x == "steps" else run.wall), run.returns


def common_grid(curves: Sequence[Tuple[np.ndarray, np.ndarray]], points: int = GRID_POINTS) -> np.ndarray:
    """[P] x values where every curve has data (their overlap), so the band is never extrapolated.

    Seeds of one setting cover the same steps, but wall-time axes differ per seed; where the
    curves do not overlap at all the union is used and ``np.interp`` holds the end values.
    """
    starts = [c[0][0] for c in curves if len(c[0])]
    ends = [c[0][-1] for c in curves if len(c[0])]
    if not starts:
        return np.zeros(0)
    lo, hi = max(starts), min(ends)
    if lo >= hi:
        lo, hi = min(starts), max(ends)
    return np.linspace(lo, hi, points) if hi > lo else np.array([lo])


def resample(curves: Sequence[Tuple[np.ndarray, np.ndarray]], grid: np.ndarray) -> np.ndarray:
    """[S, P]: each non-empty curve linearly interpolated onto ``grid`` [P]."""
    return np.stack([np.interp(grid, xs, ys) for xs, ys in curves if len(xs)])


def mean_band(y: np.ndarray, confidence: float = 0.95, n_resamples: int = 2000,
              seed: int = 0) -> Tuple[np.ndarray, Optional[np.ndarray], Optional[np.ndarray]]:
    """Seed mean [P] and percentile-bootstrap CI bounds [P] (None with one seed) of ``y`` [S, P]."""
    from scipy.stats import bootstrap
    mean = y.mean(axis=0)
    if y.shape[0] < 2:
        return mean, None, None
    spread = np.ptp(y, axis=0) > 0
    lo, hi = mean.copy(), mean.copy()
    if spread.any():  # points where all seeds agree have a zero-width band; bootstrap only the rest
        res = bootstrap((y[:, spread],), np.mean, axis=0, vectorized=True, method="percentile",
                        confidence_level=confidence, n_resamples=n_resamples, batch=500,
                        rng=np.random.default_rng(seed))
        lo[spread], hi[spread] = res.confidence_interval.low, res.confidence_interval.high
    return mean, lo, hi


def draw_curves(ax, groups: Dict[str, List[Run]], x: str = "steps") -> None:
    """One line (seed mean) with a shaded 95% CI band per group label on ``ax``.

    A group's finished runs are drawn when it has any, else its unfinished ones (a run still
    going would cut the common grid of its finished seeds short).
    """
    scale, unit = _x_scale(groups, x)
    for i, (label, runs) in enumerate(groups.items()):
        done = [r for r in runs if r.status == "finished"]
        curves = [run_curve(r, x) for r in (done or runs)]
        curves = [c for c in curves if len(c[0])]
        if not curves:
            continue
        grid = common_grid(curves)
        mean, lo, hi = mean_band(resample(curves, grid))
        color = f"C{i % 10}"
        ax.plot(grid / scale, mean, color=color, lw=1.6, label=f"{label} (n={len(curves)})")
        if lo is not None:
            ax.fill_between(grid / scale, lo, hi, color=color, alpha=0.2, lw=0)
    ax.set_xlabel({"steps": "environment steps", "time": "training wall time"}[x] + (f" ({unit})" if unit else ""))
    keys = {r.curve_key for rs in groups.values() for r in rs}
    names = {"eval/return": "deterministic evaluation return", "charts/episodic_return": "episodic return (training)"}
    ax.set_ylabel(names.get(next(iter(keys)), next(iter(keys))) if len(keys) == 1 else "value")
    ax.grid(alpha=0.3)


def _x_scale(groups: Dict[str, List[Run]], x: str) -> Tuple[float, str]:
    top = max((float(run_curve(r, x)[0].max()) for rs in groups.values() for r in rs if len(r.steps)), default=0.0)
    if x == "time":
        return (3600.0, "h") if top > 3 * 3600 else ((60.0, "min") if top > 180 else (1.0, "s"))
    return (1e6, "M") if top >= 1e6 else ((1e3, "k") if top >= 1e4 else (1.0, ""))


LEGEND_INSIDE_MAX = 60  # characters: a longer label puts the legend under the axes


def plot_learning_curves(groups: Dict[str, List[Run]], out, x: str = "steps", title: Optional[str] = None,
                         provenance: Optional[dict] = None) -> Path:
    """One figure: a line per group (label -> its seeds' runs). Returns the PNG path."""
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    draw_curves(ax, groups, x)
    ax.set_title(title or "")
    handles, labels = ax.get_legend_handles_labels()
    if labels and max(map(len, labels)) > LEGEND_INSIDE_MAX:
        # long labels (many group-by fields) would cover the curves or leave the figure: below the axes
        fig.set_figheight(4.5 + 0.17 * len(labels))
        fig.legend(handles, labels, fontsize=7, loc="outside lower center")
    elif labels:
        ax.legend(fontsize=8, loc="best")
    return save_figure(fig, out, provenance)


def plot_panels(panels: Dict[str, Dict[str, List[Run]]], out, x: str = "steps",
                provenance: Optional[dict] = None, cols: int = 3,
                marks: Optional[Dict[str, Dict[str, float]]] = None) -> Path:
    """One subplot per panel title (e.g. per environment), each drawn like ``plot_learning_curves``;
    ``marks``: panel title -> {label: y}, drawn as dashed horizontal lines (e.g. a published number)."""
    n = max(1, len(panels))
    cols = min(cols, n)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(4.2 * cols, 3.3 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (title, groups) in zip(axes, panels.items()):
        draw_curves(ax, groups, x)
        for i, (label, y) in enumerate((marks or {}).get(title, {}).items()):
            ax.axhline(y, color="0.3", linestyle=("--", ":", "-.")[i % 3], linewidth=1, label=label)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, loc="best")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    return save_figure(fig, out, provenance)


def heatmap_values(runs: Sequence[Run], row_field: str, col_field: str, metric: str = "final_return"):
    """(row values [R], col values [C], seed-mean of ``metric`` [R, C], finished seeds [R, C]).

    Only finished runs count; a cell without one is NaN.
    """
    done = [r for r in runs if r.status == "finished"]
    rows = list(dict.fromkeys(k[0] for k in group_runs(done, [row_field])))
    cols = list(dict.fromkeys(k[0] for k in group_runs(done, [col_field])))
    mean = np.full((len(rows), len(cols)), np.nan)
    count = np.zeros((len(rows), len(cols)), dtype=int)
    for (rv, cv), members in group_runs(done, [row_field, col_field]).items():
        vals = [v for v in (m.metric(metric) for m in members) if math.isfinite(v)]
        i, j = rows.index(rv), cols.index(cv)
        count[i, j] = len(vals)
        mean[i, j] = np.mean(vals) if vals else np.nan
    return rows, cols, mean, count


def plot_heatmap(runs: Sequence[Run], row_field: str, col_field: str, out, metric: str = "final_return",
                 title: Optional[str] = None, provenance: Optional[dict] = None) -> Path:
    """Cell = seed mean of ``metric`` for one (row_field, col_field) value pair, annotated with n."""
    rows, cols, mean, count = heatmap_values(runs, row_field, col_field, metric)
    fig = Figure(figsize=(1.4 * len(cols) + 2.5, 0.8 * len(rows) + 1.8), layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(np.ma.masked_invalid(mean), cmap="viridis", aspect="auto")
    fig.colorbar(im, ax=ax, label=metric.replace("_", " "))
    ax.set_xticks(range(len(cols)), [format_value(c) for c in cols])
    ax.set_yticks(range(len(rows)), [format_value(r) for r in rows])
    ax.set_xlabel(col_field)
    ax.set_ylabel(row_field)
    finite = mean[np.isfinite(mean)]
    mid = (finite.min() + finite.max()) / 2 if finite.size else 0.0
    for i in range(len(rows)):
        for j in range(len(cols)):
            text = "—" if not np.isfinite(mean[i, j]) else f"{mean[i, j]:.1f}\nn={count[i, j]}"
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="black" if np.isfinite(mean[i, j]) and mean[i, j] > mid else "white")
    ax.set_title(title or f"{metric.replace('_', ' ')}: mean over seeds")
    return save_figure(fig, out, provenance)


def save_figure(fig: Figure, out, provenance: Optional[dict] = None) -> Path:
    """Write a PNG; provenance goes into PNG text chunks (full) and a small footer (short)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"Software": "ppo_control"}
    if provenance:
        meta["Description"] = json.dumps(provenance, sort_keys=True)
        short = " · ".join(str(v) for v in (provenance.get("commit", "")[:10] if provenance.get("commit") else None,
                                              provenance.get("cpu"), provenance.get("created")) if v)
        engine = fig.get_layout_engine()
        strip = 0.12 / fig.get_size_inches()[1]
        top = bool(fig.legends)  # a legend placed under the axes takes the bottom edge: the footer goes on top
        if engine is not None:  # keep the footer's strip free
            engine.set(rect=(0, 0, 1, 1 - strip) if top else (0, strip, 1, 1 - strip))
        fig.text(0.005, 0.998 if top else 0.002, short, fontsize=5, color="gray", ha="left",
                 va="top" if top else "bottom")
    write_png(fig, out, meta)
    return out


def write_png(fig: Figure, out: Path, text: Dict[str, str]) -> None:
    """``fig`` as a 256-colour palette PNG with ``text`` as its text chunks, written atomically.

    Curves, bands and labels on white use few colours: the palette image looks the same and is about 3x
    smaller than matplotlib's RGBA file (a 10-panel figure: 602 -> 181 kB), which keeps results/ small."""
    import io

    from PIL import Image, PngImagePlugin

    from ..checkpoint import atomic_write_bytes
    buf = io.BytesIO()
    fig.savefig(buf, dpi=130, format="png")
    img = Image.open(buf).convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    info = PngImagePlugin.PngInfo()
    for k, v in text.items():
        info.add_text(k, v)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True, pnginfo=info)
    atomic_write_bytes(out, buf.getvalue())


def label_fields(by: Sequence[str], keys: Sequence[tuple]):
    """The group-by fields whose value differs between the groups ``keys`` (one tuple per group, in
    ``by``'s order), and the keys cut down to them: a curve's label names only what tells it from the
    others (the tables keep every field).  With a single group every field is kept."""
    if len(keys) < 2:
        return list(by), list(keys)
    keep = [i for i in range(len(by)) if len({k[i] for k in keys}) > 1]
    return [by[i] for i in keep], [tuple(k[i] for i in keep) for k in keys]


def write_report(runs: Sequence[Run], by: Sequence[str], out, x: str = "steps",
                 provenance: Optional[dict] = None, heatmap: Optional[Sequence[str]] = None,
                 metric: str = "final_return") -> List[Path]:
    """Learning curves ``out`` (PNG), tables ``out``.md/.csv and optionally heatmap(s); returns the paths.

    Runs of several environments get one panel per environment (grouped by ``by`` inside each)
    and ``env_id`` as the first table column, since returns of different tasks do not share a scale.
    """
    from .aggregate import group_label, summarize, write_tables
    out = Path(out)
    stem = out.with_suffix("")
    envs = sorted({str(r.config.get("env_id")) for r in runs})
    split = len(envs) > 1 and "env_id" not in by
    paths = list(write_tables(summarize(runs, (["env_id"] if split else []) + list(by)), stem, provenance))

    def labelled(members: Sequence[Run], default: str) -> Dict[str, List[Run]]:
        groups = group_runs(members, by)
        fields, keys = label_fields(by, list(groups))
        return {group_label(fields, k) if fields else default: v for k, v in zip(keys, groups.values())}

    if split:
        per_env = {e: labelled([r for r in runs if r.config.get("env_id") == e], e) for e in envs}
        paths.append(plot_panels(per_env, out, x, provenance))
    else:
        only = envs[0] if len(envs) == 1 else None
        paths.append(plot_learning_curves(labelled(runs, only or "all runs"), out, x, only, provenance))
    if heatmap:
        row_field, col_field = heatmap
        for e in envs:
            members = [r for r in runs if r.config.get("env_id") == e]
            name = f"{stem.name}_heatmap" + (f"_{e}" if len(envs) > 1 else "") + ".png"
            paths.append(plot_heatmap(members, row_field, col_field, stem.with_name(name), metric,
                                      f"{e}: {metric.replace('_', ' ')} (mean over seeds)", provenance))
    return paths


def with_curve(run: Run, key: str) -> Run:
    """``run`` with its curve following metrics column ``key`` (from the rows already read)."""
    import dataclasses
    rows = [r for r in run.rows if isinstance(r.get(key), (int, float)) and np.isfinite(r[key])]
    return dataclasses.replace(run, steps=np.array([r["global_step"] for r in rows], dtype=float),
                               wall=np.array([r["wall_time"] for r in rows], dtype=float),
                               returns=np.array([r[key] for r in rows], dtype=float), curve_key=key)


def diagnostics_figure(runs: Sequence[Run], by: Sequence[str], keys: Sequence[str], out, x: str = "steps",
                       provenance: Optional[dict] = None) -> Path:
    """``OUT_diagnostics.png``: one panel per metric in ``keys`` (the return first, then e.g. the policy std,
    approx KL and learning rate), the same lines (groups by ``by``) in each."""
    from .aggregate import group_label
    panels = {}
    for key in keys:
        groups = group_runs([with_curve(r, key) for r in runs], by)
        fields, labels = label_fields(by, list(groups))
        panels[key] = {group_label(fields, k) if fields else "all runs": v for k, v in zip(labels, groups.values())}
    out = Path(out)
    return plot_panels(panels, out.with_name(out.stem + "_diagnostics.png"), x, provenance, cols=2)
