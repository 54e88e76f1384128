"""Before/after: the same training run with two checkouts of ppo_control, interleaved, on one machine.

    git worktree add /tmp/before <commit>
    python benchmarks/ab_commits.py --before /tmp/before --presets classic fast --repeats 3

Each repeat runs every (preset, checkout) pair in a fresh subprocess with PYTHONPATH pointing at
the checkout, so both share the machine's conditions; the table gives medians of the training
SPS and of the per-iteration collection and update seconds that every run logs
(``time/collect_s``, ``time/update_s``), and the after/before SPS ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

from ppo_control.runinfo import environment_info, git_commit

CHILD = r"""
import json, sys
import numpy as np
from ppo_control import make_config, train
from ppo_control.metrics import read_jsonl
preset, env_id, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = train(make_config(preset, env_id=env_id, total_steps=steps, eval_episodes=0, progress=False,
                      tensorboard=False, out_dir=out, run_name=preset))
rows = read_jsonl(f"{out}/{preset}/metrics.jsonl")[1:]  # the first iteration warms up
print(json.dumps({"SPS": sum(r["charts/steps_this_iter"] for r in rows) / sum(r["time/collect_s"] + r["time/update_s"] for r in rows),
                  "collect_s": float(np.median([r["time/collect_s"] for r in rows])),
                  "update_s": float(np.median([r["time/update_s"] for r in rows])),
                  "iterations": len(rows) + 1, "global_step": s["global_step"]}))
"""


def run(tree: str, preset: str, env_id: str, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=tree)
        out = subprocess.run([sys.executable, "-c", CHILD, preset, env_id, str(steps), tmp], env=env,
                             capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, help="path of the 'before' checkout (a git worktree)")
    p.add_argument("--after", default=str(Path(__file__).resolve().parents[1]), help="default: this checkout")
    p.add_argument("--presets", nargs="+", default=["classic", "fast"])
    p.add_argument("--env-id", default="HalfCheetah-v5")
    p.add_argument("--steps", type=int, nargs="+", default=[40960, 262144], help="env steps per preset")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="results/speed/before_after")
    a = p.parse_args()
    trees = {"before": a.before, "after": a.after}
    steps = dict(zip(a.presets, a.steps + a.steps[-1:] * len(a.presets)))
    rows = []
    for r in range(a.repeats):
        for preset in a.presets:
            for side, tree in trees.items():
                rows.append({"repeat": r, "preset": preset, "side": side, **run(tree, preset, a.env_id, steps[preset])})
                print(rows[-1], flush=True)
    info = environment_info()
    commits = {side: git_commit(tree)["commit"] for side, tree in trees.items()}
    md = [f"# Before/after on {a.env_id}: training SPS and time per iteration (median of {a.repeats})\n",
          f"Command: `{' '.join(['python'] + sys.argv)}`  ",
          f"Before: `{commits['before']}`; after: `{commits['after']}` (dirty: {info['dirty']})  ",
          f"Machine: {info['cpu']}, {info['cores']} cores; load average {os.getloadavg()} at the end  ",
          f"Versions: python {info['python']}, torch {info['torch']}, gymnasium {info['gymnasium']}, "
          f"mujoco {info['mujoco']}, numpy {info['numpy']}\n",
          "| preset | steps | side | training SPS | collect s / iter | update s / iter | after / before SPS |",
          "|---|---:|---|---:|---:|---:|---:|"]
    for preset in a.presets:
        med = {side: {k: median(x[k] for x in rows if x["preset"] == preset and x["side"] == side)
                      for k in ("SPS", "collect_s", "update_s")} for side in trees}
        for side in trees:
            m = med[side]
            ratio = f"{med['after']['SPS'] / med['before']['SPS']:.2f}x" if side == "after" else ""
            md.append(f"| {preset} | {steps[preset]} | {side} | {m['SPS']:.0f} | {m['collect_s']:.3f} | "
                      f"{m['update_s']:.3f} | {ratio} |")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"info": info, "commits": commits, "rows": rows}, indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
