"""GRPO wall time with and without ``--grpo-freeze-ended``, paired runs alternated on one machine.

    python -m benchmarks.studies.grpo_freeze_speed [--env-id Walker2d-v5] [--total-steps 200000] [--pairs 3]

Each pair trains the same seed twice, freeze off then on (the order alternates between pairs so that
a drift in the machine's load does not favour one side), with the base cell of the falling tasks in
benchmarks/grpo_tuning.sh (visited starts, H 512 / gamma 0.998, per-step advantages, G 8, 64 envs,
init log-std -0.5). The first iteration of the two is identical (same data, same update; see
tests/test_grpo.py); after it the envs' reset draws differ, so the runs are two samples of one
algorithm, and the measured ratio includes that the policies move apart. Reported: the median of
the per-pair ratios of training wall time (off / on), and each run's wasted-step share.

Writes results/speed/grpo_freeze.{md,json} (or --out) with the command, commit, machine, versions, load.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ppo_control import make_config, train
from ppo_control.metrics import read_metrics
from ppo_control.runinfo import environment_info

CELL = dict(algo="grpo", start_state="visited", horizon=512, gamma=0.998, grpo_advantage="per_step", group_size=8,
            num_envs=64, init_log_std=-0.5)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env-id", default="Walker2d-v5")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--total-steps", type=int, default=200_000)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--out", default="results/speed/grpo_freeze")
    a = p.parse_args()
    info, rows = environment_info(), []
    load_before = os.getloadavg()
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(a.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            for freeze in order:
                name = f"p{pair}_{'on' if freeze else 'off'}"
                cfg = make_config("default", env_id=a.env_id, seed=a.seed, total_steps=a.total_steps, eval_episodes=0,
                                  progress=False, tensorboard=False, out_dir=tmp, run_name=name,
                                  grpo_freeze_ended=freeze, **CELL)
                s = train(cfg)
                m = [r for r in read_metrics(Path(tmp) / name) if "grpo/wasted_step_frac" in r]
                rows.append({"pair": pair, "freeze_ended": freeze, "train_wall_s": s["wall_time"], "SPS": s["SPS"],
                             "global_step": s["global_step"], "iterations": s["iterations"],
                             "collect_s": sum(r["time/collect_s"] for r in m),
                             "update_s": sum(r["time/update_s"] for r in m),
                             "wasted_step_frac": statistics.mean(r["grpo/wasted_step_frac"] for r in m)})
                print(rows[-1], flush=True)
    by = {(r["pair"], r["freeze_ended"]): r for r in rows}
    ratios = [by[(i, False)]["train_wall_s"] / by[(i, True)]["train_wall_s"] for i in range(a.pairs)]
    collect = [by[(i, False)]["collect_s"] / by[(i, True)]["collect_s"] for i in range(a.pairs)]
    md = [f"# GRPO on {a.env_id}: --no-grpo-freeze-ended against --grpo-freeze-ended, {a.total_steps:,} steps, "
          f"seed {a.seed}, {a.pairs} pairs\n",
          f"Command: `{' '.join(['python'] + sys.argv)}`  ",
          f"Commit: `{info['commit']}` (dirty: {info['dirty']})  ",
          f"Machine: {info['cpu']}, {info['cores']} cores; load average {load_before} before, "
          f"{os.getloadavg()} after; {time.perf_counter() - t_start:.0f} s in all  ",
          f"Versions: python {info['python']}, torch {info['torch']}, gymnasium {info['gymnasium']}, "
          f"mujoco {info['mujoco']}, numpy {info['numpy']}  ",
          f"Setting: {json.dumps(CELL)}\n",
          f"**Median training-wall ratio off / on: {statistics.median(ratios):.2f}** (per pair: "
          f"{', '.join(f'{x:.2f}' for x in ratios)}); collection time alone: {statistics.median(collect):.2f} "
          f"({', '.join(f'{x:.2f}' for x in collect)}).\n",
          "| pair | freeze ended | training wall (s) | collect (s) | update (s) | SPS | env steps | updates | "
          "wasted-step share (mean per update) |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    md += [f"| {r['pair']} | {'on' if r['freeze_ended'] else 'off'} | {r['train_wall_s']:.1f} | {r['collect_s']:.1f} | "
           f"{r['update_s']:.1f} | {r['SPS']:.0f} | {r['global_step']:,} | {r['iterations']} | "
           f"{r['wasted_step_frac']:.2f} |" for r in rows]
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"info": info, "ratios": ratios, "collect_ratios": collect,
                                                    "rows": rows}, indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
