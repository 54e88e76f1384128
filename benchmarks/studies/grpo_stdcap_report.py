"""Does capping the policy std stop batch-scaled GRPO's std drift, and what does it cost? (issue 12)

    python -m benchmarks.studies.grpo_stdcap_report [--out results/grpo_10m/hopper_stdcap_table.md] RUN_DIR [RUN_DIR ...]

No training: reads finished 10M GRPO run directories (``benchmarks/grpo_10m.sh`` with
SETTINGS=grpo:visited:512:0.998:batch and grpo:visited:512:0.998:batch:log_std_max=0), groups them by
``log_std_max`` and prints, per group, each seed's final deterministic evaluation, the mean of its periodic
evaluations from 8M steps on, the mean return and length of its training members from 8M on (the stochastic
policy over H-step rollouts, the one the std drift touches: with visited starts no whole training episode
exists, so ``final_return`` is the final evaluation again) and its policy std at 1M, 5M and 10M steps (mean over
iterations within 50k steps of the mark). Below the table: each group's mean [95% bootstrap CI] and the ratio of the capped group's mean to the
uncapped one's [95% CI, each side's seeds resampled]. ``--log-std-max`` clamps log_std where it is used, so a
capped run whose log_std reaches the cap keeps std = exp(cap) from then on (no gradient passes the clamp).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ppo_control.checkpoint import atomic_write_text
from ppo_control.experiments.aggregate import (LATE_FRACTION, bootstrap_ci, late_eval, load_run, provenance,
                                               provenance_text, ratio_ci)

MARKS = (1e6, 5e6, 10e6)


def std_at(rows: list, mark: float) -> float:
    v = [r["policy/std_mean"] for r in rows
         if abs(r["global_step"] - mark) < 50e3 and r.get("policy/std_mean") is not None]
    return float(np.mean(v)) if v else float("nan")


def read_run(d: Path) -> dict:
    run = load_run(d, curve_key="eval/return")  # config with defaults filled in, summary, periodic evals
    env = json.loads((d / "config.json").read_text()).get("environment", {})
    rows = run.rows
    late_from = LATE_FRACTION * run.config["total_steps"]
    tail = [r for r in rows if r["global_step"] >= late_from and r.get("grpo/group_return_mean") is not None]
    return {"seed": run.config["seed"], "cap": run.config["log_std_max"], "eval": run.metric("eval_return"),
            "late": late_eval(run),
            "train": float(np.mean([r["grpo/group_return_mean"] for r in tail])) if tail else float("nan"),
            "len": float(np.mean([r["grpo/member_len_mean"] for r in tail])) if tail else float("nan"),
            "std": [std_at(rows, m) for m in MARKS], "wall": run.metric("wall_time"),
            "commit": (env.get("commit") or "?")[:7], "cpu": env.get("cpu") or "?"}


def _ci(xs) -> str:
    lo, hi = bootstrap_ci(xs)
    return f"{np.mean(xs):,.0f} [{lo:,.0f}, {hi:,.0f}]"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="finished run directories (both groups)")
    p.add_argument("--out", default="results/grpo_10m/hopper_stdcap_table.md")
    args = p.parse_args(argv)
    dirs = [Path(r) for r in args.runs]
    bad = [str(d) for d in dirs if not (d / "summary.json").exists()]
    if bad:
        p.error(f"not a finished run directory (no summary.json): {', '.join(bad)}; pass finished runs only")
    runs = sorted((read_run(d) for d in dirs), key=lambda r: (r["cap"], r["seed"]))
    caps = sorted({r["cap"] for r in runs}, reverse=True)
    if len(caps) != 2:
        p.error(f"expected runs of exactly two log_std_max values (uncapped and capped), got {caps}")
    lines = ["# GRPO on Hopper at 10M, batch-scaled advantages: uncapped std against --log-std-max", "",
             "| log_std_max (std cap) | seed | final eval | late eval (8-10M) | member return (8-10M) | "
             "member length | std at 1M | 5M | 10M | wall min | commit | cpu |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in runs:
        s = " | ".join(f"{x:.2f}" for x in r["std"])
        lines.append(f"| {r['cap']:g} ({np.exp(r['cap']):.2f}) | {r['seed']} | {r['eval']:,.0f} | {r['late']:,.0f} | "
                     f"{r['train']:,.0f} | {r['len']:.0f} | {s} | {r['wall'] / 60:.1f} | {r['commit']} | {r['cpu']} |")
    lines += ["", "| log_std_max | seeds | final eval | late eval (8-10M) | member return (8-10M) | std at 10M |",
              "|---|---:|---:|---:|---:|---:|"]
    by = {c: [r for r in runs if r["cap"] == c] for c in caps}
    for c in caps:
        g = by[c]
        lines.append(f"| {c:g} | {len(g)} | {_ci([r['eval'] for r in g])} | {_ci([r['late'] for r in g])} | "
                     f"{_ci([r['train'] for r in g])} | {np.mean([r['std'][2] for r in g]):.2f} |")
    lines.append("")
    hi_cap, lo_cap = caps
    for key, name in (("eval", "final eval"), ("late", "late eval"), ("train", "member return")):
        a = [r[key] for r in by[lo_cap]]
        b = [r[key] for r in by[hi_cap]]
        lo, hi = ratio_ci(a, b)
        lines.append(f"- {name}: capped / uncapped = {100 * np.mean(a) / np.mean(b):.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]")
    lines += ["", "Mean [95% percentile-bootstrap CI] over seeds; ratios resample each group's seeds on its own "
              "(10,000 draws). Final eval: 10 deterministic episodes of the final policy; late eval: each seed's mean "
              "periodic evaluation (every 250k steps, 5 episodes) from 8M steps on; "
              "member return: mean return of the training members' H-step rollouts from 8M steps on "
              "(stochastic policy, visited starts, up to 512 steps; member length is how many of them they last)."]
    seeds = sorted({r["seed"] for r in runs})
    lines += [""] + [f"- {x}" for x in provenance_text(provenance(["python"] + sys.argv, seeds))]
    atomic_write_text(args.out, "\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
