"""Issue 12, experiment 1: the GRPO ablation (start source x CRN x advantage x horizon) as tables and a figure.

    python -m benchmarks.studies.grpo_factorial_report [--runs results/runs/grpo_factorial] [--out results/grpo_factorial/factorial]

No training: reads the run directories of ``benchmarks/grpo_factorial.sh``. Writes OUT.md with, per task,

- every cell's final deterministic evaluation (10 episodes of the final policy): mean over its finished seeds
  [95% percentile-bootstrap CI] and the number of seeds, one column per horizon setting;
- main effects: each factor level's mean over all cells of that level, on the seeds every cell has (a
  balanced comparison; the extra seeds of the best cells are left out of it), and the same restricted to
  one horizon, because the factors interact with it;
- paired contrasts on the same seeds (CRN on - off, per_step - outcome, each pair of start sources): the
  difference between two cells that differ in that factor alone, its mean over such pairs with a bootstrap CI
  and how many pairs it favours, so an effect can be told from noise and from one outlying cell;
- per cell, the run-mean GRPO diagnostics (within-group share of the return variance — with CRN the share
  the branch action explains —, zero-signal groups, group return std, approx KL, clipfrac) and updates;

OUT.csv (one row per cell) and OUT.png (per task: every cell's mean with its CI, and PPO's default preset
at 1M as a reference line).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from benchmarks.studies.grpo_diagnostics import KEYS, run_means
from ppo_control.experiments.aggregate import (bootstrap_ci, load_runs, provenance, provenance_text,
                                              seed_stats, write_csv)

FACTORS = ("start_state", "crn", "grpo_advantage")
LEVELS = {"start_state": ("reset", "visited", "branch"), "crn": (False, True), "grpo_advantage": ("outcome", "per_step")}
# the paired contrasts of the report: (factor, level a, level b), reported as a - b
CONTRASTS = (("crn", True, False), ("grpo_advantage", "per_step", "outcome"), ("start_state", "visited", "reset"),
             ("start_state", "branch", "reset"), ("start_state", "branch", "visited"))
PPO_DEFAULT = Path("results/runs/mujoco_suite/ppo_default")


def _n(x, d=0):
    return "—" if x is None or not math.isfinite(x) else f"{x:,.{d}f}"


def _label(v):
    return {False: "off", True: "on"}.get(v, str(v)) if isinstance(v, bool) else str(v)


def _cell_key(r):
    """A run's cell: its level of each factor in FACTORS, then its (horizon, gamma)."""
    return tuple(r.config[f] for f in FACTORS) + ((r.config["horizon"], r.config["gamma"]),)


def _cell(runs, key):
    return [r for r in runs if tuple(r.config[f] for f in FACTORS) == key]


def _ci(s):
    return f"{_n(s['mean'])} [{_n(s['ci_low'])}, {_n(s['ci_high'])}]" if s["n"] >= 2 else _n(s["mean"])


def task_report(env, runs):
    """Markdown lines and CSV rows for one task's cells."""
    horizons = sorted({(r.config["horizon"], r.config["gamma"]) for r in runs})
    keys = [(s, c, a) for s in LEVELS["start_state"] for c in LEVELS["crn"] for a in LEVELS["grpo_advantage"]]
    by_h = {h: [r for r in runs if (r.config["horizon"], r.config["gamma"]) == h] for h in horizons}
    ppo = [r.metric("eval_return") for r in load_runs(sorted(PPO_DEFAULT.glob(f"{env}__ppo__s*")))] \
        if PPO_DEFAULT.exists() else []
    ppo_mean = float(np.mean(ppo)) if ppo else math.nan
    lines = [f"### {env}", "", "Final deterministic eval, mean over seeds [95% CI] (seeds); PPO default preset at 1M: "
             f"{_n(ppo_mean)} ({len(ppo)} seeds).", "",
             "| start | CRN | advantage | " + " | ".join(f"H {h} / gamma {g}" for h, g in horizons) + " |",
             "|---|---|---|" + "---:|" * len(horizons)]
    rows, best = [], None
    for key in keys:
        cells = []
        for h in horizons:
            done = [r for r in _cell(by_h[h], key) if r.status == "finished"]
            s = seed_stats([r.metric("eval_return") for r in done])
            diag = [run_means(r.path) for r in done]
            row = dict(env_id=env, start_state=key[0], crn=key[1], grpo_advantage=key[2], horizon=h[0], gamma=h[1],
                       seeds=" ".join(str(r.config["seed"]) for r in done), n=s["n"], eval_mean=s["mean"],
                       eval_ci_low=s["ci_low"], eval_ci_high=s["ci_high"],
                       wall_min=float(np.mean([r.metric("wall_time") for r in done])) / 60 if done else math.nan,
                       of_ppo_default=s["mean"] / ppo_mean if ppo else math.nan,
                       **{k: float(np.mean([d[k] for d in diag])) if diag else math.nan for k in KEYS + ("updates",)})
            rows.append(row)
            if s["n"] and (best is None or s["mean"] > best["eval_mean"]):
                best = row
            cells.append(f"{_ci(s)} ({s['n']})" if s["n"] else "not run")
        lines.append(f"| {key[0]} | {_label(key[1])} | {key[2]} | " + " | ".join(cells) + " |")
    if best:
        lines += ["", f"Best cell: start {best['start_state']}, CRN {_label(best['crn'])}, {best['grpo_advantage']}, "
                      f"H {best['horizon']} / gamma {best['gamma']}: {_n(best['eval_mean'])} ({best['n']} seeds, "
                      f"{_n(100 * best['of_ppo_default'])}% of PPO default)."]
    lines += main_effects(runs, horizons) + ["", "Diagnostics (run means over all updates, mean over seeds):", "",
                                              "| start | CRN | advantage | H | within-group share | zero-signal frac | "
                                              "group return std | approx KL | clipfrac | updates | wall / run |",
                                              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["n"]:
            lines.append(f"| {r['start_state']} | {_label(r['crn'])} | {r['grpo_advantage']} | {r['horizon']} | "
                         + " | ".join(_n(r[k], 3) for k in KEYS) + f" | {_n(r['updates'])} | {r['wall_min']:.1f} min |")
    return lines + [""], rows, ppo_mean


def main_effects(runs, horizons):
    """Each factor level's mean over the cells of that level, on the seeds that every cell of the scope
    has (all horizons, then each horizon alone); a scope with a cell not yet run is left out."""
    done = [r for r in runs if r.status == "finished"]
    n_cells = len(LEVELS["start_state"]) * len(LEVELS["crn"]) * len(LEVELS["grpo_advantage"])

    def balanced(hs):
        rs = [r for r in done if _cell_key(r)[-1] in hs]
        seeds = {}
        for r in rs:
            seeds.setdefault(_cell_key(r), set()).add(r.config["seed"])
        common = set.intersection(*seeds.values()) if len(seeds) == n_cells * len(hs) else set()
        return [r for r in rs if r.config["seed"] in common], sorted(common)

    scopes = [(name, *balanced(hs)) for name, hs in [("all horizons", horizons)] +
              [(f"H {h} / gamma {g}", [(h, g)]) for h, g in horizons]]
    scopes = [sc for sc in scopes if sc[2]]
    if not scopes:
        return ["", "Main effects: not yet (no horizon has every cell finished with a common seed)."]
    lines = ["", "Main effects (mean final eval over the cells of each level, on the seeds every cell of the column "
             "has: " + "; ".join(f"{name}: seeds {seeds}" for name, _, seeds in scopes) + "):", "",
             "| factor | level | " + " | ".join(name for name, _, _ in scopes) + " |", "|---|---|" + "---:|" * len(scopes)]
    for f in FACTORS:
        for lv in LEVELS[f]:
            vals = [np.mean([r.metric("eval_return") for r in rs if r.config[f] == lv]) for _, rs, _ in scopes]
            lines.append(f"| {f} | {_label(lv)} | " + " | ".join(_n(v) for v in vals) + " |")
    lines += ["", "Paired contrasts, on the same seeds: level a minus level b, per pair of cells that differ only in "
              "that factor (same other factors and horizon, each cell its mean over the seeds); mean difference "
              "[95% bootstrap CI over the pairs] (pairs where a is higher / pairs):", "",
              "| factor | a - b | " + " | ".join(name for name, _, _ in scopes) + " |", "|---|---|" + "---:|" * len(scopes)]
    per_scope = [contrasts(rs) for _, rs, _ in scopes]
    for i, (f, a, b) in enumerate(CONTRASTS):
        cells = []
        for c in per_scope:
            d = c[i]["diffs"]
            lo, hi = bootstrap_ci(d)
            cells.append(f"{_n(np.mean(d))} [{_n(lo)}, {_n(hi)}] ({int((d > 0).sum())}/{len(d)})" if len(d) else "—")
        lines.append(f"| {f} | {_label(a)} - {_label(b)} | " + " | ".join(cells) + " |")
    return lines


def contrasts(runs):
    """Per entry of CONTRASTS (factor, level a, level b): ``{"factor", "a", "b", "diffs"}``, where ``diffs``
    holds, for every cell at level a whose partner at level b (same other factors, same horizon/gamma) also
    has runs, the partner's mean final eval subtracted from the cell's. Cells are means over their runs."""
    evals = {}
    for r in runs:
        evals.setdefault(_cell_key(r), []).append(r.metric("eval_return"))
    means = {k: float(np.mean(v)) for k, v in evals.items()}
    out = []
    for f, a, b in CONTRASTS:
        i = FACTORS.index(f)
        partners = {k: k[:i] + (b,) + k[i + 1:] for k in sorted(means, key=repr) if k[i] == a}
        diffs = [means[k] - means[p] for k, p in partners.items() if p in means]
        out.append({"factor": f, "a": a, "b": b, "diffs": np.asarray(diffs, dtype=float)})
    return out


def plot(per_task, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(per_task), figsize=(7 * len(per_task), 8), squeeze=False)
    colours = {"reset": "tab:grey", "visited": "tab:blue", "branch": "tab:orange"}
    for ax, (env, (rows, ppo_mean)) in zip(axes[0], per_task.items()):
        rows = [r for r in rows if r["n"]]
        y = np.arange(len(rows))
        means = np.array([r["eval_mean"] for r in rows])
        lo = np.array([r["eval_ci_low"] if math.isfinite(r["eval_ci_low"]) else r["eval_mean"] for r in rows])
        hi = np.array([r["eval_ci_high"] if math.isfinite(r["eval_ci_high"]) else r["eval_mean"] for r in rows])
        bars = ax.barh(y, means, xerr=[means - lo, hi - means], color=[colours[r["start_state"]] for r in rows])
        for bar, r in zip(bars, rows):  # CRN on: hatched
            bar.set_hatch("//" if r["crn"] else "")
        ax.set_yticks(y, [f"{r['start_state']}, CRN {_label(r['crn'])}, {r['grpo_advantage']}, H {r['horizon']} "
                          f"({r['n']})" for r in rows], fontsize=8)
        if math.isfinite(ppo_mean):
            ax.axvline(ppo_mean, color="k", ls="--", lw=1, label=f"PPO default preset, 1M ({_n(ppo_mean)})")
            ax.legend(loc="lower right", fontsize=8)
        ax.set_title(f"{env}: GRPO ablation at 1M steps")
        ax.set_xlabel("final deterministic eval return (mean over seeds, 95% CI; seeds in brackets)")
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="results/runs/grpo_factorial")
    p.add_argument("--out", default="results/grpo_factorial/factorial")
    a = p.parse_args(argv)
    runs = load_runs([a.runs], curve_key="eval/return")
    if not runs:
        sys.exit(f"no runs under {a.runs}; run bash benchmarks/grpo_factorial.sh first")
    lines, all_rows, per_task = [], [], {}
    for env in sorted({r.config["env_id"] for r in runs}):
        task_lines, rows, ppo_mean = task_report(env, [r for r in runs if r.config["env_id"] == env])
        lines += task_lines
        all_rows += rows
        per_task[env] = (rows, ppo_mean)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    prov = provenance(["python"] + sys.argv, sorted({int(r.config["seed"]) for r in runs}))
    write_csv(all_rows, out.with_suffix(".csv"), prov)
    plot(per_task, out.with_suffix(".png"))
    out.with_suffix(".md").write_text(
        "# GRPO ablation at 1M steps (issue 12, experiment 1)\n\n"
        "Runs: `bash benchmarks/grpo_factorial.sh` (G 8, 64 envs, init log-std -0.5, every member step trained, "
        "lr 3e-4 annealed, 10 epochs, 32 minibatches, no KL term; each run's config.json has its command). "
        "Final eval = deterministic evaluation of the final policy, 10 episodes. Wall time: 2 shared cores, two runs "
        "at a time, not a speed measurement.\n\n" + "\n".join(lines) + "\n" +
        "\n".join(f"- {x}" for x in provenance_text(prov)) + "\n")
    print(f"wrote {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
