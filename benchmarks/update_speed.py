"""Time one PPO update (the epoch x minibatch loop) on a synthetic batch, per optimizer variant.

    python benchmarks/update_speed.py [--preset classic] [--repeats 7] [--out results/speed/update]

Variants run interleaved, repeat by repeat, in one process (so machine noise hits them alike);
the table gives the median seconds per update and the ratio to the first variant.  The last
variant compiles the loss (forward and backward through AOTAutograd/inductor); its compile time
is reported apart, to weigh against what it saves per update.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from statistics import median

import torch

from ppo_control.config import make_config
from ppo_control.networks import make_critic, make_policy
from ppo_control.runinfo import environment_info
from ppo_control import update as update_mod
from ppo_control.algorithms import PPO
from ppo_control.update import update

VARIANTS = {"fused": {"fused": True}, "foreach": {"foreach": True}, "for-loop": {"foreach": False},
            "fused + torch.compile(minibatch_loss)": {"fused": True}}
COMPILED = "fused + torch.compile(minibatch_loss)"


def batch(cfg, obs_dim, act_dim, seed=0):
    g = torch.Generator().manual_seed(seed)
    B = cfg.batch_size
    ret = torch.randn(B, generator=g)
    return dict(obs=torch.randn(B, obs_dim, generator=g), actions=torch.randn(B, act_dim, generator=g),
                logprobs=torch.randn(B, generator=g) - 8.0, advantages=torch.randn(B, generator=g),
                returns=ret, values=ret + 0.1 * torch.randn(B, generator=g))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="classic")
    p.add_argument("--env-dims", default="17,6", help="obs_dim,act_dim (HalfCheetah: 17,6)")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    torch.set_num_threads(1)
    cfg = make_config(a.preset)
    obs_dim, act_dim = (int(x) for x in a.env_dims.split(","))
    data = batch(cfg, obs_dim, act_dim)
    times = {k: [] for k in VARIANTS}
    eager, compiled, compile_s = update_mod.minibatch_loss, torch.compile(update_mod.minibatch_loss, dynamic=False), 0.0
    for r in range(a.repeats + 1):
        for name, kw in VARIANTS.items():
            torch.manual_seed(0)
            pi, vf = make_policy(cfg, obs_dim, act_dim), make_critic(cfg, obs_dim)
            opt = torch.optim.Adam(list(pi.parameters()) + list(vf.parameters()), lr=cfg.lr, eps=cfg.adam_eps, **kw)
            update_mod.minibatch_loss = compiled if name == COMPILED else eager
            t0 = time.perf_counter()
            update(pi, vf, opt, data, cfg, torch.Generator().manual_seed(r), cfg.norm_adv, terms=PPO.loss_terms)
            if r > 0:  # the first round warms up (and compiles)
                times[name].append(time.perf_counter() - t0)
            elif name == COMPILED:
                compile_s = time.perf_counter() - t0
    update_mod.minibatch_loss = eager
    base = median(times[next(iter(VARIANTS))])
    info = environment_info()
    md = [f"# One PPO update, {a.preset} preset ({cfg.batch_size} samples, {cfg.num_minibatches} minibatches, "
          f"{cfg.update_epochs} epochs, obs {obs_dim} / act {act_dim})\n",
          f"Command: `{' '.join(['python'] + sys.argv)}`  ",
          f"Commit: `{info['commit']}` (dirty: {info['dirty']}); machine: {info['cpu']}, {info['cores']} cores; "
          f"load {os.getloadavg()}; torch {info['torch']}\n",
          "| Adam variant | median s / update | vs fused |", "|---|---:|---:|"]
    md += [f"| {k} | {median(v):.3f} | {median(v) / base:.2f}x |" for k, v in times.items()]
    md.append(f"\nFirst update with torch.compile (compilation included; inductor's on-disk cache makes a second "
              f"process faster): {compile_s:.1f} s")
    print("\n".join(md))
    if a.out:
        out = Path(a.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".md").write_text("\n".join(md) + "\n")
        out.with_suffix(".json").write_text(json.dumps({"info": info, "times": times}, indent=1))


if __name__ == "__main__":
    main()
