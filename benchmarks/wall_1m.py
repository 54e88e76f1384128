"""Wall time and final return for 1M steps of one env, classic vs fast preset, back to back.

    python benchmarks/wall_1m.py [--env-id HalfCheetah-v5] [--seed 1] [--presets classic fast]
    python benchmarks/wall_1m.py --env-id Hopper-v5 --presets classic default --out results/speed/wall_1m_hopper
    python benchmarks/wall_1m.py --presets fast:off fast      # eager against the default (compile=auto)

A preset may carry ``:auto``, ``:on`` or ``:off`` for its ``--compile`` setting, then another for its
``--parallel-critic`` setting (``fast:on:off``: compiled, one process; default: auto for both).

Writes results/speed/wall_1m.{md,json} with the command, commit, machine, versions and load.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from ppo_control import make_config, train
from ppo_control.runinfo import environment_info


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env-id", default="HalfCheetah-v5")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--total-steps", type=int, default=1_000_000)
    p.add_argument("--presets", nargs="+", default=["classic", "fast"])
    p.add_argument("--out", default="results/speed/wall_1m")
    a = p.parse_args()
    info, rows = environment_info(), []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        for i, preset in enumerate(a.presets):  # a preset may repeat: each run its own folder
            base, compile_, parallel = (preset.split(":") + ["", ""])[:3]
            cfg = make_config(base, env_id=a.env_id, seed=a.seed, total_steps=a.total_steps, eval_episodes=10,
                              progress=False, tensorboard=False, out_dir=tmp,
                              run_name=f"{i}_{preset.replace(':', '_')}", compile=compile_ or "auto",
                              parallel_critic=parallel or "auto")
            t0 = time.perf_counter()
            s = train(cfg)
            rec = json.loads((Path(s["run_dir"]) / "config.json").read_text())  # how it ran
            rows.append({"preset": preset, "end_to_end_s": time.perf_counter() - t0, "train_wall_s": s["wall_time"],
                         "SPS": s["SPS"], "final_return": s["final_return"], "eval_return": s["eval_return"],
                         "compile": rec.get("compile"), "parallel_critic": rec.get("parallel_critic")})
            print(rows[-1], flush=True)
    md = [f"# {a.total_steps:,} steps of {a.env_id}: {' vs '.join(a.presets)} (seed {a.seed})\n",
          f"Command: `{' '.join(['python'] + sys.argv)}`  ",
          f"Commit: `{info['commit']}` (dirty: {info['dirty']})  ",
          f"Machine: {info['cpu']}, {info['cores']} cores; load average {load_before} before, "
          f"{os.getloadavg()} after  ",
          f"Versions: python {info['python']}, torch {info['torch']}, gymnasium {info['gymnasium']}, "
          f"mujoco {info['mujoco']}, numpy {info['numpy']}\n",
          "| preset | training wall (s) | end to end (s) | SPS | final return | eval return |",
          "|---|---:|---:|---:|---:|---:|"]
    md += [f"| {r['preset']} | {r['train_wall_s']:.1f} | {r['end_to_end_s']:.1f} | {r['SPS']:.0f} | "
           f"{r['final_return']:.1f} | {r['eval_return']:.1f} |" for r in rows]
    md.append("\nHow each ran: " + "; ".join(f"{r['preset']}: compile {r['compile']}, parallel_critic "
                                             f"{r['parallel_critic']}" for r in rows))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"info": info, "rows": rows}, indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
