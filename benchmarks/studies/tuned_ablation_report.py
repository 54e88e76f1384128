"""The tuned preset's ablation: one change at a time against the tuned runs, per task.

    python -m benchmarks.studies.tuned_ablation_report [--base results/runs/tuned_1m] \
        [--runs results/runs/tuned_ablation] [--out results/tuned_ablation/ablation]

The baseline of a task is its tuned run directories (``BASE/<Task>``); each change is a folder
``RUNS/<Task>/<change>`` made by ``benchmarks/tuned_ablation.sh``. Only seeds that finished in both
the baseline and the change are compared (so a change is judged on the same seeds). Writes OUT.md
(final return per setting with 95% bootstrap CIs; the change's effect = its mean minus the
baseline's on those seeds, with a 95% bootstrap CI of that difference; the peak of the seed-mean
eval curve) and OUT.png (the effects, one panel per task).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ppo_control.experiments.aggregate import load_runs, peak_of_mean_eval, provenance, provenance_text, seed_stats
from ppo_control.experiments.plotting import save_figure

CHANGES = {"logstd0": "log_std starts at 0 (not -0.5)", "critic64": "critic 64x64 (not 256x256)",
           "details": "+ adv. every epoch, value-target norm., vf 0.25", "lr3e-4": "lr 3e-4 (not 1e-3)"}


def difference_ci(a, b, n_resamples: int = 10_000, seed: int = 0):
    """mean(a) - mean(b) with a 95% percentile-bootstrap CI, the two samples resampled independently."""
    from scipy.stats import bootstrap
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2:
        return d, float("nan"), float("nan")
    res = bootstrap((a, b), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis), confidence_level=0.95,
                    n_resamples=n_resamples, method="percentile", vectorized=True, rng=np.random.default_rng(seed))
    return d, float(res.confidence_interval.low), float(res.confidence_interval.high)


def _finished(path: Path) -> dict:
    return {int(r.config["seed"]): r for r in load_runs([path], curve_key="eval/return") if r.status == "finished"}


def _n(x):
    return "—" if x is None or not math.isfinite(x) else f"{x:,.0f}"


def _ci(lo, hi):
    return "[—, —]" if not (math.isfinite(lo) and math.isfinite(hi)) else f"[{lo:+,.0f}, {hi:+,.0f}]"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="results/runs/tuned_1m")
    p.add_argument("--base-for", nargs="*", default=[], metavar="TASK=DIR",
                   help="a task's baseline runs elsewhere than BASE/TASK (e.g. moved to its suite's folder)")
    p.add_argument("--runs", default="results/runs/tuned_ablation")
    p.add_argument("--out", default="results/tuned_ablation/ablation")
    a = p.parse_args(argv)
    rows, seeds_used = [], set()
    base_for = dict(x.split("=", 1) for x in a.base_for)
    for task_dir in sorted(Path(a.runs).iterdir()) if Path(a.runs).is_dir() else []:
        base = _finished(Path(base_for.get(task_dir.name, Path(a.base) / task_dir.name)))
        for change, label in CHANGES.items():
            if not (task_dir / change).is_dir():
                continue
            ablated = _finished(task_dir / change)
            seeds = sorted(set(base) & set(ablated))
            if not seeds:
                continue
            seeds_used |= set(seeds)
            fb = [base[s].metric("final_return") for s in seeds]
            fa = [ablated[s].metric("final_return") for s in seeds]
            d, lo, hi = difference_ci(fa, fb)
            sb, sa = seed_stats(fb), seed_stats(fa)
            rows.append({"task": base[seeds[0]].config["env_id"], "change": change, "label": label, "seeds": seeds,
                         "base": sb, "ablated": sa, "diff": (d, lo, hi),
                         "peak_base": peak_of_mean_eval([base[s] for s in seeds]),
                         "peak_ablated": peak_of_mean_eval([ablated[s] for s in seeds]),
                         "wall": float(np.mean([ablated[s].metric("wall_time") for s in seeds]))})
    if not rows:
        sys.exit(f"no finished ablation runs under {a.runs} with finished baselines under {a.base}")
    prov = provenance(["python"] + sys.argv, sorted(seeds_used))
    lines = ["| task | change from tuned | seeds | tuned: final return | changed: final return | effect [95% CI] | "
             "peak mean eval, tuned -> changed | wall / run |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        d, lo, hi = r["diff"]
        lines.append(f"| {r['task']} | {r['label']} | {' '.join(map(str, r['seeds']))} | "
                     f"{_n(r['base']['mean'])} [{_n(r['base']['ci_low'])}, {_n(r['base']['ci_high'])}] | "
                     f"{_n(r['ablated']['mean'])} [{_n(r['ablated']['ci_low'])}, {_n(r['ablated']['ci_high'])}] | "
                     f"**{d:+,.0f}** {_ci(lo, hi)} | {_n(r['peak_base'])} -> {_n(r['peak_ablated'])} | "
                     f"{r['wall'] / 60:.1f} min |")
    lines.append("\nfinal return = mean of the last 10 training episodes at 1M steps, mean over seeds [95% percentile "
                 "bootstrap CI]; effect = changed minus tuned on the same seeds (negative: the tuned setting helps); "
                 "peak mean eval = highest point of the seed-mean deterministic eval curve. \"tuned\" is the preset "
                 "as it stood when the ablation ran (commits 2dca118-6b8c87b, the runs in BASE); the `details` change has "
                 "since entered the HalfCheetah-v5, Hopper-v5, Walker2d-v5 and Ant-v5 rows (config.TUNED_ROWS).\n")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    md = out.with_suffix(".md")
    md.write_text("# Tuned preset: one change at a time (1M steps)\n\n" + "\n".join(lines) + "\n" +
                  "\n".join(f"- {x}" for x in provenance_text(prov)) + "\n")
    tasks = sorted({r["task"] for r in rows})
    fig = Figure(figsize=(4.2 * len(tasks), 2.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(tasks), sharey=True))
    for ax, task in zip(axes, tasks):
        mine = [r for r in rows if r["task"] == task]
        y = np.arange(len(mine))
        d = np.array([r["diff"][0] for r in mine])
        err = np.array([[r["diff"][0] - r["diff"][1], r["diff"][2] - r["diff"][0]] for r in mine]).T
        ax.barh(y, d, xerr=np.nan_to_num(err), color=["tab:red" if v < 0 else "tab:green" for v in d], capsize=3)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_yticks(y, [r["label"] for r in mine], fontsize=7)
        ax.set_title(f"{task} (seeds: {len(mine[0]['seeds'])})", fontsize=9)
        ax.set_xlabel("final return, changed - tuned", fontsize=8)
    png = save_figure(fig, out.with_suffix(".png"), prov)
    print(f"wrote {md}, {png}")


if __name__ == "__main__":
    main()
