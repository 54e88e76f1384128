"""Before/after: the same training run with two checkouts of ppo_control, interleaved, on one machine.

    git worktree add /tmp/before <commit>; git worktree add /tmp/after <commit>
    python benchmarks/ab_commits.py --before /tmp/before --after /tmp/after --presets classic fast --repeats 3

Each repeat runs every (preset, checkout) pair in a fresh subprocess with PYTHONPATH pointing at
the checkout, so both share the machine's conditions; the table gives medians of the training
SPS and of the per-iteration collection and update seconds that every run logs
(``time/collect_s``, ``time/update_s``), of the update alone on a synthetic batch, and the
after/before SPS ratio.  Use worktrees of commits for both sides: a working tree that changes
while the benchmark runs measures a moving target.
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
import ppo_control  # its path goes back with the numbers: the parent checks which checkout ran
rec = json.load(open(f"{out}/{preset}/config.json"))  # how it ran (None: the checkout has no such option)
print(json.dumps({"compile": rec.get("compile"), "parallel_critic": rec.get("parallel_critic"), "SPS": sum(r["charts/steps_this_iter"] for r in rows) / sum(r["time/collect_s"] + r["time/update_s"] for r in rows),
                  "collect_s": float(np.median([r["time/collect_s"] for r in rows])),
                  "update_s": float(np.median([r["time/update_s"] for r in rows])),
                  "iterations": len(rows) + 1, "global_step": s["global_step"], "tree": ppo_control.__file__}))
"""


# the update alone on a synthetic HalfCheetah-sized batch (7 updates, median), for either side's API:
# the hand-written update of commits up to b2811f8 took a FlatAdam, later ones a torch optimizer
CHILD_UPDATE = r"""
import json, sys, time, statistics
import torch
from ppo_control.config import make_config
from ppo_control.update import update
torch.set_num_threads(1)
cfg = make_config(sys.argv[1])
g = torch.Generator().manual_seed(0)
B = cfg.batch_size
ret = torch.randn(B, generator=g)
data = dict(obs=torch.randn(B, 17, generator=g), actions=torch.randn(B, 6, generator=g),
            logprobs=torch.randn(B, generator=g) - 8.0, advantages=torch.randn(B, generator=g),
            returns=ret, values=ret + 0.1 * torch.randn(B, generator=g))
try:
    from ppo_control.networks import make_critic, make_policy
    from ppo_control.update import make_optimizer
    pi, vf = make_policy(cfg, 17, 6), make_critic(cfg, 17)
    opt = make_optimizer([pi, vf], cfg)
except ImportError:
    from ppo_control.networks import GaussianPolicy, ValueNet
    from ppo_control.optim import FlatAdam
    pi, vf = GaussianPolicy(17, 6), ValueNet(17)
    opt = FlatAdam([pi, vf], lr=cfg.lr, eps=cfg.adam_eps)
import ppo_control.update as U
kw = {"terms": U.LossTerms(value=True)} if hasattr(U, "LossTerms") else {}  # the algorithm interface's loss terms
times = []
for r in range(8):
    t = time.perf_counter()
    update(pi, vf, opt, data, cfg, torch.Generator().manual_seed(r), True, **kw)
    times.append(time.perf_counter() - t)
print(json.dumps({"update_only_s": statistics.median(times[1:])}))
"""


def run(tree: str, preset: str, env_id: str, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        return {**run_child(tree, CHILD, [preset, env_id, str(steps), tmp], tmp),
                **run_child(tree, CHILD_UPDATE, [preset], tmp)}


def run_child(tree: str, code: str, args, cwd: str) -> dict:
    """``python -c code *args`` with ``tree``'s ppo_control on the path; the JSON object its last line prints,
    whose ``tree`` (where it imported ppo_control from, if it says) must be ``tree``. ``cwd``: not a checkout,
    since ``python -c`` puts the working directory first on sys.path and would import that checkout instead."""
    out = subprocess.run([sys.executable, "-c", code, *args], env=dict(os.environ, PYTHONPATH=tree), cwd=cwd,
                         capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if "tree" in res and not res["tree"].startswith(str(Path(tree).resolve())):
        raise RuntimeError(f"the run for {tree} imported {res['tree']}, not {tree}")
    return res


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
          "| preset | steps | side | training SPS | collect s / iter | update s / iter (in training) | "
          "update s alone (synthetic batch) | after / before SPS |",
          "|---|---:|---|---:|---:|---:|---:|---:|"]
    for preset in a.presets:
        med = {side: {k: median(x[k] for x in rows if x["preset"] == preset and x["side"] == side)
                      for k in ("SPS", "collect_s", "update_s", "update_only_s")} for side in trees}
        for side in trees:
            m = med[side]
            ratio = f"{med['after']['SPS'] / med['before']['SPS']:.2f}x" if side == "after" else ""
            md.append(f"| {preset} | {steps[preset]} | {side} | {m['SPS']:.0f} | {m['collect_s']:.3f} | "
                      f"{m['update_s']:.3f} | {m['update_only_s']:.3f} | {ratio} |")
    md.append("\nHow the runs ran: " + "; ".join(sorted({f"{x['preset']} {x['side']}: compile {x.get('compile')}, "
                                                       f"parallel_critic {x.get('parallel_critic')}" for x in rows})))
    md.append("The update alone on a synthetic batch runs in one process on both sides.")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"info": info, "commits": commits, "rows": rows}, indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
