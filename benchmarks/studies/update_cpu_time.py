"""CPU time of the hot paths, old checkout against new, in one process; and a bit-identity check.

    python -m benchmarks.studies.update_cpu_time --base /path/to/old/worktree [--pairs 15] [--out results/speed/cpu_time]
    python -m benchmarks.studies.update_cpu_time --base /path/to/old/worktree --check

Both checkouts' ``ppo_control`` packages are loaded side by side under other names, and each
benchmark alternates old and new (the order flips every pair) measuring process CPU time, not
wall time: on a shared machine wall time measures the neighbours.  The ratio new / old of each pair,
and their median, say how much CPU work a change removed.  Benchmarks: one classic-preset update
on a synthetic HalfCheetah-sized batch (per minibatch), a 1-env collected step (classic), a 64-env
collected step (fast), and a whole classic iteration (collect, GAE, update).

``--check`` trains two whole iterations of several presets with each checkout (a subprocess each)
and compares every parameter and optimizer tensor of the two checkpoints with ``torch.equal``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np
import torch

HERE = Path(__file__).resolve().parents[2]

# (label, preset, env id, overrides); two iterations each
CHECKS = [("classic", "classic", "HalfCheetah-v5", {}),
          ("classic", "classic", "InvertedPendulum-v5", {}),
          ("classic ent_coef 0.01", "classic", "HalfCheetah-v5", {"ent_coef": 0.01}),
          ("classic target_kl 0.01", "classic", "InvertedPendulum-v5", {"target_kl": 0.01}),
          ("fast", "fast", "HalfCheetah-v5", {}),
          ("fast", "fast", "InvertedPendulum-v5", {}),
          ("tuned", "tuned", "HalfCheetah-v5", {}),
          ("grpo", "grpo", "InvertedPendulum-v5", {}),
          ("grpo", "grpo", "HalfCheetah-v5", {}),
          ("grpo kl_coef 0.05", "grpo", "HalfCheetah-v5", {"kl_coef": 0.05}),
          ("classic compile on", "classic", "InvertedPendulum-v5", {"compile": "on"}),
          ("classic dual_clip 3", "classic", "HalfCheetah-v5", {"dual_clip": 3.0}),
          ("classic parallel critic", "classic", "HalfCheetah-v5", {"parallel_critic": "on"}),
          ("tuned", "tuned", "Hopper-v5", {}),
          ("default", "default", "Walker2d-v5", {})]

CHILD = r"""
import json, sys
from ppo_control import make_config, train
preset, env_id, over, out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
kw = dict(dict(env_id=env_id, eval_episodes=0, progress=False, tensorboard=False, out_dir=out, run_name="r",
               compile="off", torch_threads=1), **over)
cfg = make_config(preset, **kw)
# PPO: two whole iterations; GRPO counts steps as it goes: one iteration, then resumed for a second
s = train(make_config(preset, total_steps=2 * cfg.batch_size if cfg.algo == "ppo" else 1, **kw))
if s["iterations"] < 2:
    s = train(resume=s["run_dir"], changes={"total_steps": s["global_step"] + 1})
import ppo_control
print(json.dumps(dict(s, tree=ppo_control.__file__)))
"""


def load_tree(tree: str, name: str):
    """``tree``'s ppo_control package, imported as ``name`` (its imports are relative)."""
    pkg = Path(tree) / "ppo_control"
    spec = importlib.util.spec_from_file_location(name, pkg / "__init__.py", submodule_search_locations=[str(pkg)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    # the submodules as attributes (``mod.train`` is the package's train function, not its module)
    return argparse.Namespace(**{sub: importlib.import_module(f"{name}.{sub}") for sub in
                                 ("config", "networks", "update", "rollout", "advantages", "state", "train")})


def synthetic(B, obs_dim=17, act_dim=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    ret = torch.randn(B, generator=g)
    return dict(obs=torch.randn(B, obs_dim, generator=g), actions=torch.randn(B, act_dim, generator=g),
                logprobs=torch.randn(B, generator=g) - 8.0, advantages=torch.randn(B, generator=g),
                returns=ret, values=ret + 0.1 * torch.randn(B, generator=g))


class UpdateBench:
    """One whole update (classic: 320 minibatches); the unit is CPU µs per minibatch."""
    unit = "µs / minibatch"

    def __init__(self, pkg, preset="classic"):
        self.pkg, self.cfg = pkg, pkg.config.make_config(preset)
        self.data = synthetic(self.cfg.batch_size)
        self.n = self.cfg.update_epochs * self.cfg.num_minibatches
        # the update names its loss terms from the algorithm interface on; before, it read them off the data
        self.kw = {"terms": pkg.update.LossTerms(value=True)} if hasattr(pkg.update, "LossTerms") else {}

    def __call__(self, r):
        torch.manual_seed(0)
        cfg, net = self.cfg, self.pkg.networks
        pi, vf = net.make_policy(cfg, 17, 6), net.make_critic(cfg, 17)
        opt = self.pkg.update.make_optimizer([pi, vf], cfg)
        data = {k: v.clone() for k, v in self.data.items()}
        t = time.process_time()
        self.pkg.update.update(pi, vf, opt, data, cfg, torch.Generator().manual_seed(r), True, compiled=False,
                               **self.kw)
        return (time.process_time() - t) / self.n * 1e6


def one_process(pkg) -> dict:
    """``parallel_critic=off`` where the checkout has the option: this process's CPU time would miss the work of
    a critic's process (the split moves CPU work, it removes none)."""
    return {"parallel_critic": "off"} if "parallel_critic" in pkg.config.Config.__dataclass_fields__ else {}


class CollectBench:
    """``collect_steps`` from a live TrainState; the unit is CPU µs per vector step."""
    unit = "µs / step"

    def __init__(self, pkg, preset, steps):
        cfg = pkg.config.make_config(preset, env_id="HalfCheetah-v5", torch_threads=1, compile="off",
                                     **one_process(pkg))
        self.pkg, self.ts, self.steps = pkg, pkg.state.TrainState.build(cfg), steps

    def __call__(self, r):
        ts = self.ts
        t = time.process_time()
        b = self.pkg.rollout.collect_steps(ts.envs, ts.policy, ts.critic, ts.obs_norm, ts.rew_scaler, ts.rollout,
                                           self.steps, ts.device, ts.np_rng)
        dt = time.process_time() - t
        self.last = b
        return dt / self.steps * 1e6


class IterationBench:
    """``train._iteration`` (collect, GAE, update; the lr schedule) of the classic preset; CPU s."""
    unit = "s / iteration"

    def __init__(self, pkg):
        cfg = pkg.config.make_config("classic", env_id="HalfCheetah-v5", torch_threads=1, compile="off",
                                     **one_process(pkg))
        self.pkg, self.ts = pkg, pkg.state.TrainState.build(cfg)

    def __call__(self, r):
        t = time.process_time()
        self.pkg.train._iteration(self.ts)
        return time.process_time() - t


def pairs(name, old, new, n, log):
    """n pairs, order flipped each pair; returns [(old, new, new/old)]."""
    old(-1), new(-1)  # warm-up
    out = []
    for r in range(n):
        a, b = (old(r), new(r)) if r % 2 == 0 else reversed((new(r), old(r)))
        out.append((a, b, b / a))
        log(f"{name} pair {r}: old {a:.4g} new {b:.4g} ratio {b / a:.3f}")
    return out


def same_batches(a, b):
    for f in ("obs", "actions", "logprobs", "rewards", "values", "next_values"):
        if not torch.equal(getattr(a, f), getattr(b, f)):
            return f
    return None


def run_benchmarks(a):
    torch.set_num_threads(1)
    old, new = load_tree(a.base, "ppo_old"), load_tree(a.new, "ppo_new")
    log = lambda s: print(s, flush=True)  # noqa: E731
    results = {}
    for key in a.bench:
        if key == "update":
            o, n = UpdateBench(old), UpdateBench(new)
        elif key == "step1":
            o, n = CollectBench(old, "classic", 256), CollectBench(new, "classic", 256)
        elif key == "step64":
            o, n = CollectBench(old, "fast", 16), CollectBench(new, "fast", 16)
        else:
            o, n = IterationBench(old), IterationBench(new)
        results[key] = {"unit": o.unit, "pairs": pairs(key, o, n, a.pairs, log)}
        if key.startswith("step"):
            results[key]["same_batch"] = same_batches(o.last, n.last) or "equal"
            log(f"{key}: last batches {results[key]['same_batch']}")
        if key == "iteration":
            diff = [k for k, v in o.ts.policy.state_dict().items() if not torch.equal(v, n.ts.policy.state_dict()[k])]
            results[key]["same_batch"] = "equal" if not diff else f"policy differs: {diff}"
            log(f"{key}: policies after {a.pairs + 1} iterations: {results[key]['same_batch']}")
    return results


def check(a) -> bool:
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for label, preset, env_id, over in CHECKS:
            ckpts = []
            for side, tree in (("old", a.base), ("new", a.new)):
                out = f"{tmp}/{side}"
                # cwd=tmp: ``python -c`` puts the working directory first on sys.path (a checkout's root would win)
                done = subprocess.run([sys.executable, "-c", CHILD, preset, env_id, json.dumps(over), out], check=True,
                                      env=dict(os.environ, PYTHONPATH=tree), cwd=tmp, capture_output=True, text=True)
                where = json.loads(done.stdout.strip().splitlines()[-1])["tree"]
                if not where.startswith(str(Path(tree).resolve())):
                    raise RuntimeError(f"the {side} run imported {where}, not {tree}")
                ckpts.append(torch.load(f"{out}/r/checkpoint.pt", weights_only=False))
                subprocess.run(["rm", "-rf", out], check=True)
            diff, n = compare(ckpts[0], ckpts[1])
            ok &= not diff
            print(f"{label:24s} {env_id:20s} {n} tensors compared: {'all torch.equal' if not diff else diff}",
                  flush=True)
    return ok


def compare(x, y, path=""):
    """(paths where the nested checkpoints x, y differ, tensors compared)."""
    if isinstance(x, torch.Tensor):
        return ([] if isinstance(y, torch.Tensor) and x.shape == y.shape and torch.equal(x, y) else [path]), 1
    if isinstance(x, dict):
        keys = [k for k in x if k not in ("identity", "wall_time", "config")]
        diffs, n = [], 0
        for k in keys:
            if not isinstance(y, dict) or k not in y:
                diffs.append(f"{path}/{k} missing")
                continue
            d, m = compare(x[k], y[k], f"{path}/{k}")
            diffs, n = diffs + d, n + m
        return diffs, n
    if isinstance(x, (list, tuple)):
        diffs, n = [], 0
        for i, (u, v) in enumerate(zip(x, y)):
            d, m = compare(u, v, f"{path}[{i}]")
            diffs, n = diffs + d, n + m
        return diffs + ([f"{path} length"] if len(x) != len(y) else []), n
    if isinstance(x, np.ndarray):
        return ([] if np.array_equal(x, y) else [path]), 1
    return [], 0


def write(a, results, out):
    from ppo_control.runinfo import environment_info, git_commit
    info = environment_info()
    md = ["# CPU time per hot path, new code / old code (one process, alternating pairs)\n",
          "Process CPU time (not wall time: the machine was shared) of each benchmark, old and new checkout "
          "loaded side by side, the order flipped every pair; `torch.set_num_threads(1)`. A ratio below 1 is "
          "CPU work removed.\n",
          "| benchmark | unit | old (median) | new (median) | median of new/old | pairs |", "|---|---|---:|---:|---:|---:|"]
    names = {"update": "classic update, synthetic 2048 x HalfCheetah batch", "step1": "1-env collected step (classic)",
             "step64": "64-env collected step (fast)", "iteration": "whole classic iteration (HalfCheetah)"}
    for k, r in results.items():
        p = r["pairs"]
        md.append(f"| {names[k]} | {r['unit']} | {median(x[0] for x in p):.4g} | {median(x[1] for x in p):.4g} | "
                  f"**{median(x[2] for x in p):.3f}** | {len(p)} |")
    md.append("\nEvery pair (old, new, new/old):\n")
    for k, r in results.items():
        md.append(f"- {names[k]}: " + "; ".join(f"{x[0]:.4g} / {x[1]:.4g} = {x[2]:.3f}" for x in r["pairs"]))
        if "same_batch" in r:
            md.append(f"  (old and new results after the last pair: {r['same_batch']})")
    md += ["", f"Command: `{' '.join(['python -m benchmarks.studies.update_cpu_time'] + sys.argv[1:])}`  ",
           f"Old: `{git_commit(a.base)['commit']}`; new: `{git_commit(a.new)['commit']}` "
           f"(dirty: {git_commit(a.new)['dirty']})  ",
           f"Machine: {info['cpu']}, {info['cores']} cores; load average {os.getloadavg()} at the end (shared)  ",
           f"Versions: python {info['python']}, torch {info['torch']}, gymnasium {info['gymnasium']}, "
           f"mujoco {info['mujoco']}, numpy {info['numpy']}"]
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).with_suffix(".md").write_text("\n".join(md) + "\n")
    Path(out).with_suffix(".json").write_text(json.dumps({"info": info, "results": results}, indent=1))
    print("\n".join(md))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="the old checkout (a git worktree)")
    p.add_argument("--new", default=str(HERE), help="the new checkout (default: this one)")
    p.add_argument("--bench", nargs="+", default=["update", "step1", "step64", "iteration"],
                   choices=["update", "step1", "step64", "iteration"])
    p.add_argument("--pairs", type=int, default=15)
    p.add_argument("--check", action="store_true", help="compare two trained iterations per preset instead")
    p.add_argument("--out", default=None, help="write OUT.md and OUT.json")
    a = p.parse_args()
    if a.check:
        sys.exit(0 if check(a) else 1)
    results = run_benchmarks(a)
    if a.out:
        write(a, results, a.out)


if __name__ == "__main__":
    main()
