"""Why does tuned PPO fall on Ant-v5 at 10M steps when its 1M runs end at ~1,530?

    python -m benchmarks.studies.ppo_ant_10m_diag [--out results/grpo_10m/ant_ppo_diag.md]

No training: reads the finished tuned-PPO Ant runs of the 1M study (results/runs/tuned_1m/Ant), of the 10M
suite mujoco_10m with the learning rate annealed over the run (results/runs/mujoco_10m/Ant-v5/tuned_anneal_lr)
and of its lr-schedule controls (the same preset with
lr_decay_steps=1M, lr_floor=0.1: setting tuned_lr_decay_1m; a KL-adaptive lr: setting tuned_lr_adapt_kl),
and, for comparison, PPO's default preset at 1M (results/runs/mujoco_suite/ppo_default) and at 10M
(results/runs/grpo_10m/ppo_default); it prints, at fixed env steps, each group's seed mean of
the logged learning rate, policy std, approximate KL, clip fraction and training episode length (iterations
within 50k steps of the mark), plus the deterministic periodic evaluation nearest the mark. Within a preset the
1M and 10M groups run the same settings; `anneal_lr` ties the linear decay to `total_steps`, so at 1M steps the 1M runs are at lr ~0 while the
10M runs are still at 0.9 of the peak. The table shows what that does; the control group tests it (a group with
no finished run yet is listed as missing, not dropped silently). Groups in IN_PROGRESS are read while their runs
still train (a learning-rate schedule that does not depend on the run's length: lr_adapt_kl), each run up to the
step it has reached, which the list of runs states.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ppo_control.checkpoint import atomic_write_text
from ppo_control.experiments.aggregate import load_run, provenance, provenance_text
from ppo_control.metrics import metrics_file

GROUPS = {"1M runs (tuned_1m)": "results/runs/tuned_1m/Ant/Ant-v5__s*",
          "10M runs, lr annealed (mujoco_10m, tuned_anneal_lr)": "results/runs/mujoco_10m/Ant-v5/tuned_anneal_lr/seed_*",
          "10M control: lr_decay_steps=1M, lr_floor=0.1": "results/runs/mujoco_10m/Ant-v5/tuned_lr_decay_1m/seed_*",
          "default preset, 1M runs (mujoco_suite)": "results/runs/mujoco_suite/ppo_default/Ant-v5__ppo__s*",
          "default preset, 10M runs (grpo_10m/ppo_default)": "results/runs/grpo_10m/ppo_default/Ant-v5__s*",
          "10M, KL-adaptive lr (lr_adapt_kl=0.01, no anneal)": "results/runs/mujoco_10m/Ant-v5/tuned_lr_adapt_kl/seed_*"}
IN_PROGRESS = {"10M, KL-adaptive lr (lr_adapt_kl=0.01, no anneal)"}
MARKS = [0.25e6, 0.5e6, 1e6, 2e6, 5e6, 10e6]
KEYS = [("lr", "charts/learning_rate", "{:.5f}"), ("std", "policy/std_mean", "{:.3f}"),
        ("approx KL", "losses/approx_kl", "{:.3f}"), ("clip frac", "losses/clipfrac", "{:.2f}"),
        ("episode len", "charts/episodic_length", "{:.0f}")]


def finished(patterns: str, in_progress: bool = False) -> list:
    """The run directories matching any of the space-separated glob ``patterns``."""
    return sorted(d for pattern in patterns.split() for d in Path(".").glob(pattern) if (d / "summary.json").exists()
                  or (in_progress and metrics_file(d) is not None))


def at(run: list, mark: float) -> dict | None:
    near = [r for r in run if abs(r["global_step"] - mark) < 50e3]
    if not near:
        return None
    out = {}
    for name, k, _ in KEYS:
        v = [r[k] for r in near if r.get(k) is not None]
        out[name] = float(np.mean(v)) if v else float("nan")
    ev = [(abs(r["global_step"] - mark), r["eval/return"]) for r in run if r.get("eval/return") is not None]
    out["eval"] = min(ev)[1] if ev and min(ev)[0] < 125e3 else float("nan")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="results/grpo_10m/ant_ppo_diag.md")
    args = p.parse_args()
    lines = ["# PPO on Ant-v5: the same preset at 1M and at 10M steps (tuned preset, its lr control, default preset)", "",
             "Seed means at each mark (iterations within 50k steps of it); eval = deterministic periodic evaluation "
             "nearest the mark; diverging = iterations flagged `charts/diverging` (approx KL > 1) per run, whole run.", "",
             "| runs | seeds | steps | " + " | ".join(n for n, _, _ in KEYS) + " | eval |",
             "|---|---:|---:|" + "---:|" * (len(KEYS) + 1)]
    seeds_all, made = [], []
    for label, pattern in GROUPS.items():
        dirs = finished(pattern, label in IN_PROGRESS)
        if not dirs:
            print(f"no finished runs under {pattern}; the group is left out", file=sys.stderr)
            made.append(f"- {label}: no finished runs yet ({pattern})")
            continue
        loaded = [load_run(d) for d in dirs]
        runs = [r.rows for r in loaded]
        cfgs = [json.loads((d / "config.json").read_text()) for d in dirs]
        seeds_all += [c.get("config", {}).get("seed") for c in cfgs]
        walls = [r.metric("wall_time") if r.status == "finished" else r.rows[-1]["wall_time"] for r in loaded]
        commits = sorted({(c.get("environment", {}).get("commit") or "?")[:7] for c in cfgs})
        cpus = sorted({c.get("environment", {}).get("cpu") or "?" for c in cfgs})
        reached = [f"{d.name} at {r.rows[-1]['global_step'] / 1e6:.2f}M steps" for d, r in zip(dirs, loaded)
                   if r.status != "finished"]
        made.append(f"- {label}: {len(dirs)} runs ({', '.join(d.name for d in dirs)}), made at commit(s) "
                    f"{', '.join(commits)} on {', '.join(cpus)}, {np.median(walls) / 60:.0f} min median wall time each"
                    + (f"; still training: {', '.join(reached)}" if reached else ""))
        div = [sum(1 for r in run if r.get("charts/diverging")) for run in runs]
        for mark in MARKS:
            pts = [x for x in (at(run, mark) for run in runs) if x is not None]
            if not pts:
                continue
            cells = [fmt.format(np.nanmean([x[n] for x in pts])) for n, _, fmt in KEYS]
            ev = np.nanmean([x["eval"] for x in pts])
            lines.append(f"| {label} | {len(pts)} | {mark / 1e6:g}M | " + " | ".join(cells) + f" | {ev:,.0f} |")
        lines.append(f"| {label}: diverging iterations per run | {len(dirs)} | | " + ", ".join(map(str, div))
                     + " |" + " |" * len(KEYS))
    lines += ["", "The same seed numbers are different runs in different groups (different total_steps, so a "
              "different schedule from the first update on).", "", "The runs read:", *made, "",
              "This table:"]
    prov = provenance(["python"] + sys.argv, seeds=sorted(set(s for s in seeds_all if s is not None)))
    text = "\n".join(lines) + "\n" + "\n".join(f"- {x}" for x in provenance_text(prov)) + "\n"
    atomic_write_text(args.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
