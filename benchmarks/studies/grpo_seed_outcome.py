"""What tells a Walker2d GRPO seed that ends high from one that stays near 400? (issue 12)

    python -m benchmarks.studies.grpo_seed_outcome [--env Walker2d-v5] [--out results/grpo_tuning/walker2d_seed_outcome.md]

No training: reads every finished run of the task's visited H 512 / 0.998 cell and of the tuning changes made
from it (results/runs/grpo_falling_pilot, results/runs/grpo_tuning/*), and for each logged diagnostic takes its
mean over the early part of the run (10-30% of the iterations, before most runs have settled) and correlates
it with the final deterministic evaluation across runs. Also: does the final evaluation (one 10-episode draw)
agree with the run's late periodic evaluations (>= 80% of the steps), or is the split of seeds a measurement
artefact? The runs mix settings (that is what gives enough runs), so a correlation here is a lead, not a cause.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ppo_control.experiments.aggregate import late_eval, load_run, provenance, provenance_text

DIAGNOSTICS = ["policy/std_mean", "grpo/member_len_mean", "grpo/group_return_std", "grpo/within_group_share",
               "grpo/adv_abs_mean", "losses/approx_kl", "losses/clipfrac", "grpo/zero_signal_frac"]
EARLY = (0.1, 0.3)  # fraction of the run's iterations
HIGH, LOW = 1200.0, 700.0  # final evaluations that count as "left the ~400 level" / "stayed"


def run_dirs(env: str) -> list:
    r = Path("results/runs")
    dirs = list(r.glob(f"grpo_falling_pilot/{env}__horizon=512__gamma=0.998__s*"))
    dirs += list(r.glob(f"grpo_tuning/*/{env}__s*"))
    return sorted(d for d in dirs if (d / "summary.json").exists())


def features(d: Path) -> dict:
    run = load_run(d)
    rows = run.rows
    lo, hi = int(EARLY[0] * len(rows)), max(int(EARLY[1] * len(rows)), int(EARLY[0] * len(rows)) + 1)
    out = {}
    for k in DIAGNOSTICS:
        v = [float(r[k]) for r in rows[lo:hi] if r.get(k) is not None]
        out[k] = float(np.mean(v)) if v else float("nan")
    out["late_eval"] = late_eval(run)
    out["final_eval"] = run.metric("eval_return")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="Walker2d-v5")
    p.add_argument("--out", default="results/grpo_tuning/walker2d_seed_outcome.md")
    args = p.parse_args()
    dirs = run_dirs(args.env)
    feats = [features(d) for d in dirs]
    y = np.array([f["final_eval"] for f in feats])
    lines = [f"# {args.env}: early diagnostics against the final evaluation, {len(dirs)} runs", "",
             f"Runs: the visited H 512 / 0.998 cell and every tuning change from it (settings mixed). Early = mean over "
             f"iterations {EARLY[0]:.0%}-{EARLY[1]:.0%} of each run. High: final eval > {HIGH:,.0f} "
             f"({int((y > HIGH).sum())} runs); low: < {LOW:,.0f} ({int((y < LOW).sum())} runs).", "",
             "| early diagnostic | correlation with final eval | mean, high runs | mean, low runs |",
             "|---|---:|---:|---:|"]
    for k in DIAGNOSTICS:
        x = np.array([f[k] for f in feats])
        ok = np.isfinite(x)
        corr = float(np.corrcoef(x[ok], y[ok])[0, 1]) if ok.sum() > 2 and x[ok].std() > 0 else float("nan")
        lines.append(f"| `{k}` | {corr:+.2f} | {x[ok & (y > HIGH)].mean():.3f} | {x[ok & (y < LOW)].mean():.3f} |")
    late = np.array([f["late_eval"] for f in feats])
    lines += ["", f"Final eval against the mean of the run's periodic evaluations from 80% of its steps on: "
                  f"correlation {np.corrcoef(late, y)[0, 1]:+.2f}; runs below {LOW:,.0f} by the final eval "
                  f"{(y < LOW).mean():.0%}, by the late evaluations {(late < LOW).mean():.0%}.", ""]
    lines += ["- " + t for t in provenance_text(provenance(["python", "-m", "benchmarks.studies.grpo_seed_outcome"] + sys.argv[1:]))]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
