"""CPU time of a whole ``train()`` call, old checkout against new: a subprocess each, alternating pairs.

    python -m benchmarks.studies.train_cpu_time --base /path/to/old/worktree [--steps 40960] [--pairs 8]
        [--preset classic] [--env HalfCheetah-v5] [--out results/speed/train_cpu_40k]

update_cpu_time.py measures the hot paths inside one process; this measures what a user's run pays
end to end (imports of torch and the package excepted): env creation, setup, the iterations, the
checkpoints. Each run is its own process (nothing warm is shared), ``--compile off``,
``torch_threads=1``, no evaluation; the order of old and new flips every pair. Process CPU time, not
wall time: on a shared machine wall time measures the neighbours.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.ab_commits import run_child
from statistics import median

HERE = Path(__file__).resolve().parents[2]

CHILD = r"""
import dataclasses, json, resource, sys, tempfile, time
from ppo_control import make_config, train
from ppo_control.config import Config
preset, env_id, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
kw = dict(env_id=env_id, total_steps=steps, eval_episodes=0, progress=False, tensorboard=False,
          out_dir=tempfile.mkdtemp(), run_name="r", torch_threads=1)
if "compile" in {f.name for f in dataclasses.fields(Config)}:  # older checkouts have no compile option
    kw["compile"] = "off"
cfg = make_config(preset, **kw)
children = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
t, c = time.process_time(), children()
s = train(cfg)
# the critic's process (parallel_critic), reaped when the run ends, counts: its CPU is the run's too
cpu = time.process_time() - t + children() - c
rec = json.load(open(f"{s['run_dir']}/config.json"))
import ppo_control
print(json.dumps({"cpu": cpu, "wall_time": s["wall_time"], "steps": s["global_step"], "tree": ppo_control.__file__,
                  "dynamo": "torch._dynamo" in sys.modules, "parallel_critic": rec.get("parallel_critic")}))
"""


def run(tree: str, a) -> dict:
    return run_child(tree, CHILD, [a.preset, a.env, str(a.steps)], tempfile.gettempdir())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="the old checkout (a git worktree)")
    p.add_argument("--new", default=str(HERE), help="the new checkout (default: this one)")
    p.add_argument("--preset", default="classic")
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--steps", type=int, default=40_960)
    p.add_argument("--pairs", type=int, default=8)
    p.add_argument("--out", default=None, help="write OUT.md and OUT.json")
    a = p.parse_args()
    pairs = []
    for r in range(a.pairs):
        x, y = (run(a.base, a), run(a.new, a)) if r % 2 == 0 else reversed((run(a.new, a), run(a.base, a)))
        pairs.append({"old": x, "new": y, "ratio": y["cpu"] / x["cpu"]})
        print(f"pair {r}: old {x['cpu']:.3f} s new {y['cpu']:.3f} s ratio {y['cpu'] / x['cpu']:.3f}", flush=True)
    med = {k: median(q[k]["cpu"] for q in pairs) for k in ("old", "new")}
    ratio = median(q["ratio"] for q in pairs)
    print(f"median: old {med['old']:.3f} s, new {med['new']:.3f} s, ratio {ratio:.3f}")
    if a.out:
        write(a, pairs, med, ratio)


def write(a, pairs, med, ratio):
    from ppo_control.runinfo import environment_info, git_commit
    info = environment_info()
    old, new = git_commit(a.base), git_commit(a.new)
    md = [f"# CPU time of a whole train() call, {a.preset} preset, {a.env}, {a.steps:,} steps: new code / old code\n",
          "Process CPU time of `train()` (env creation, setup, the iterations, checkpoints; not the imports; with "
          "the CPU time of its child processes, the critic's among them), a "
          "subprocess per run, `--compile off`, `torch_threads=1`, no evaluation, old and new alternating (the "
          "order flipped every pair). A ratio below 1 is CPU work removed.\n",
          "| old (median) | new (median) | median of new/old | pairs | torch._dynamo imported (old, new) |",
          "|---:|---:|---:|---:|---|",
          f"| {med['old']:.3f} s | {med['new']:.3f} s | **{ratio:.3f}** | {len(pairs)} | "
          f"{pairs[0]['old']['dynamo']}, {pairs[0]['new']['dynamo']} |",
          f"\nparallel_critic (old, new): {pairs[0]['old'].get('parallel_critic')}, "
          f"{pairs[0]['new'].get('parallel_critic')}",
          "\nEvery pair (old s, new s, new/old): " + "; ".join(
              f"{q['old']['cpu']:.3f} / {q['new']['cpu']:.3f} = {q['ratio']:.3f}" for q in pairs),
          "", f"Command: `{' '.join(['python -m benchmarks.studies.train_cpu_time'] + sys.argv[1:])}`  ",
          f"Old: `{old['commit']}`; new: `{new['commit']}` (dirty: {new['dirty']})  ",
          f"Machine: {info['cpu']}, {info['cores']} cores; load average {os.getloadavg()} at the end (shared)  ",
          f"Versions: python {info['python']}, torch {info['torch']}, gymnasium {info['gymnasium']}, "
          f"mujoco {info['mujoco']}, numpy {info['numpy']}"]
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"info": info, "args": vars(a), "pairs": pairs}, indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
