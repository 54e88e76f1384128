"""Per-run means of the GRPO diagnostics over a whole run, as a Markdown table (issue 12).

    python -m benchmarks.studies.grpo_diagnostics results/runs/grpo_pilot > results/grpo_pilot/diagnostics.md

Columns: eval return at the end (summary.json), and the mean over all iterations of
grpo/within_group_share (share of the return variance inside groups; with CRN it is the share the
branch action explains, see advantages.within_group_share), grpo/zero_signal_frac,
grpo/group_return_std, losses/approx_kl, losses/clipfrac, and the number of updates.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

from ppo_control.experiments.aggregate import load_run

KEYS = ("grpo/within_group_share", "grpo/zero_signal_frac", "grpo/group_return_std", "losses/approx_kl",
        "losses/clipfrac")


def run_means(run: Path) -> dict:
    """{key: mean over the run's iterations} for KEYS, plus ``updates`` (iterations logged)."""
    rows = load_run(run).rows
    with warnings.catch_warnings():  # a key never logged (e.g. no CRN share) is an all-NaN column
        warnings.simplefilter("ignore", RuntimeWarning)
        out = {k: float(np.nanmean([r[k] if r.get(k) is not None else np.nan for r in rows])) for k in KEYS}
    return dict(out, updates=len(rows))


def row(run: Path) -> str:
    m = run_means(run)
    ev = load_run(run).metric("eval_return")
    return f"| {run.name} | {ev:,.1f} | " + " | ".join(f"{m[k]:.3f}" for k in KEYS) + f" | {m['updates']} |"


def main(dirs):
    runs = sorted(p.parent for d in dirs for p in Path(d).glob("*/config.json"))
    print("| run | eval return | within-group share | zero-signal frac | group return std | approx KL | clipfrac "
          "| updates |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for run in runs:
        print(row(run))
    print(f"\nRun means over all iterations. command: python -m benchmarks.studies.grpo_diagnostics {' '.join(dirs)}")


if __name__ == "__main__":
    main(sys.argv[1:])
