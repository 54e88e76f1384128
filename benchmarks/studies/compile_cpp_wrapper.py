"""The compiled loss with and without inductor's C++ wrapper on the CPU: CPU time per classic minibatch
and whether the two give the same parameters bit for bit.

    python -m benchmarks.studies.compile_cpp_wrapper [--pairs 12] [--out results/speed/cpp_wrapper]

One process, both compiled losses built first (their compile times printed, inductor's disk cache
decides how long they take), then whole classic updates on a synthetic HalfCheetah-sized batch,
alternating the two variants (the order flips every pair), from the same start and shuffle.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from statistics import median

import torch

from benchmarks.studies.update_cpu_time import synthetic
from ppo_control import update as U
from ppo_control.config import make_config
from ppo_control.networks import make_critic, make_policy
from ppo_control.runinfo import environment_info


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=12)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    torch.set_num_threads(1)
    cfg, data = make_config("classic"), synthetic(2048)
    eager = U.minibatch_loss
    fns = {"default": torch.compile(eager), "cpp_wrapper": torch.compile(eager, options={"cpp_wrapper": True})}

    def one(name, r):
        torch.manual_seed(0)
        pi, vf = make_policy(cfg, 17, 6), make_critic(cfg, 17)
        opt = U.make_optimizer([pi, vf], cfg)
        U.minibatch_loss = fns[name]  # update() looks the loss up here
        t = time.process_time()
        U.update(pi, vf, opt, {k: v.clone() for k, v in data.items()}, cfg, torch.Generator().manual_seed(r), True,
                 compiled=False, terms=U.LossTerms(value=True))
        dt = (time.process_time() - t) / (cfg.update_epochs * cfg.num_minibatches) * 1e6
        return dt, [x.detach().clone() for x in list(pi.parameters()) + list(vf.parameters())]

    first = {}
    for name in fns:
        t = time.perf_counter()
        one(name, 0)
        first[name] = time.perf_counter() - t
    rows = []
    for r in range(a.pairs):
        out = {n: one(n, r) for n in (("default", "cpp_wrapper") if r % 2 == 0 else ("cpp_wrapper", "default"))}
        same = all(torch.equal(x, y) for x, y in zip(out["default"][1], out["cpp_wrapper"][1]))
        rows.append((out["default"][0], out["cpp_wrapper"][0], out["cpp_wrapper"][0] / out["default"][0], same))
        print(rows[-1], flush=True)
    U.minibatch_loss = eager
    info = environment_info()
    md = ["# The compiled classic loss with and without inductor's C++ wrapper (CPU)\n",
          "| variant | CPU µs / minibatch (median) | first update, wall s (compile) |", "|---|---:|---:|",
          f"| default | {median(x[0] for x in rows):.0f} | {first['default']:.1f} |",
          f"| cpp_wrapper | {median(x[1] for x in rows):.0f} | {first['cpp_wrapper']:.1f} |",
          f"\nMedian of cpp_wrapper / default over {len(rows)} pairs: **{median(x[2] for x in rows):.3f}**; "
          f"parameters after each pair's updates torch.equal: {all(x[3] for x in rows)}\n",
          "Pairs (default, cpp_wrapper, ratio): " + "; ".join(f"{x[0]:.0f} / {x[1]:.0f} = {x[2]:.3f}" for x in rows),
          "", f"Command: `{' '.join(['python -m benchmarks.studies.compile_cpp_wrapper'] + sys.argv[1:])}`  ",
          f"Commit: `{info['commit']}` (dirty: {info['dirty']}); machine: {info['cpu']}, {info['cores']} cores; "
          f"load average {os.getloadavg()} at the end (shared); torch {info['torch']}"]
    print("\n".join(md))
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).with_suffix(".md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
