"""Which way does one GRPO update move the policy std, and which steps move it? (issue 12: the policy std
grows all run long with batch-scaled advantages on Hopper and Walker2d, to 1.9-2.7 by 10M steps, while it
shrinks on HalfCheetah and with per-group scaling; results/grpo_factorial/reading.md)

    python -m benchmarks.studies.grpo_std_gradient [--envs Hopper-v5 Walker2d-v5 HalfCheetah-v5] [--seeds 1 2 3]
        [--rounds 2] [--train-steps 0 100000 300000] [--train-scale batch] [--near 20]
        [--out results/grpo_tuning/std_gradient]

No run directories. For each task's ``--preset grpo`` row (trained with ``--train-scale``'s advantage scale)
and seed it builds the training state and trains GRPO in process up to each value of ``--train-steps`` env
steps (the first iteration boundary at or past it; lr held at the preset's, no annealing). There it collects
``--rounds`` group rounds with the policy as it stands and, on each round's data, runs the package's own
``update`` (epochs x minibatches, clipped surrogate, gradient clip, Adam with the run's moments) from copies
of the policy and optimizer, once per variant, and records how far the mean log_std moved:

- ``group`` / ``batch``: the round's per-step advantages with per-group or batch scaling (same rollouts,
  same minibatch order);
- ``near`` / ``other``: batch scaling with only the steps at most ``--near`` steps before a member's fall
  (``terminated``), or only the other steps, in the update (the rest dropped from the data).

Seed means in the table; > 0 means the update raises the std.
"""
from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from ppo_control.algorithms import grpo
from ppo_control.advantages import group_relative
from ppo_control.config import make_config
from ppo_control.experiments.aggregate import provenance, provenance_text
from ppo_control.state import TrainState
from ppo_control.update import make_optimizer, update

SCALES = ("group", "batch")
VARIANTS = ("group", "batch", "near", "other")


def near_fall(terminated: torch.Tensor, mask: torch.Tensor, near: int) -> torch.Tensor:
    """[T, N] bool: trained steps at most ``near`` steps before (and at) the step where the member's
    episode terminated; members that did not terminate in the round have none. terminated, mask ``[T, N]``."""
    t = torch.arange(terminated.shape[0])[:, None]
    end = torch.where(terminated.any(0), terminated.float().argmax(0),
                      torch.full_like(terminated[0], -1, dtype=torch.long))
    return mask & (end[None] >= 0) & (t > end[None] - near) & (t <= end[None])


def log_std_shift(ts, data: dict, seed: int) -> float:
    """Mean log_std after one ``update`` on ``data`` from copies of ``ts``'s policy and optimizer, minus before."""
    policy = copy.deepcopy(ts.policy)
    opt = make_optimizer([policy], ts.cfg)
    opt.load_state_dict(ts.optimizer.state_dict())
    before = float(policy.clamped_log_std().detach().mean())
    update(policy, None, opt, data, ts.cfg, torch.Generator().manual_seed(seed), norm_adv=False,
           terms=grpo.GRPO.loss_terms)
    return float(policy.clamped_log_std().detach().mean()) - before


def measure(ts, rounds: int, near: int) -> dict:
    """Per variant the mean log_std shift of one update, averaged over ``rounds`` fresh group rounds."""
    cfg, G = ts.cfg, ts.cfg.group_size
    shift = {v: [] for v in VARIANTS}
    near_share = []
    for r in range(rounds):
        gr, trained_len, *_ = grpo._round(ts, cfg.num_envs // G, grpo._max_len(ts))
        b = gr.batch
        nf = near_fall(b.terminated, b.mask, near)[b.mask]  # [B] bool over the trained steps
        adv = {s: group_relative(b.rewards, b.mask, G, cfg.gamma, cfg.grpo_advantage, cfg.leave_one_out,
                                 zero_threshold=cfg.zero_signal_threshold, scale=s)[0][b.mask] for s in SCALES}
        base = grpo._merge([(b, trained_len)], cfg.num_envs, cfg.grpo_step_weight)
        near_share.append(float(nf.float().mean()))
        for v in VARIANTS:
            data = dict(base, advantages=adv["group" if v == "group" else "batch"])
            if v in ("near", "other"):  # only those steps, with their weights (the loss is a weighted mean per minibatch)
                keep = nf if v == "near" else ~nf
                if int(keep.sum()) < cfg.num_minibatches:  # too few such steps this round (HalfCheetah never falls)
                    continue
                data = {k: x[keep] if x is not None else None for k, x in data.items()}
            shift[v].append(log_std_shift(ts, data, cfg.seed * 1000 + r))
    return {"shift": {v: float(np.mean(x)) if x else float("nan") for v, x in shift.items()},
            "near_steps": float(np.mean(near_share)), "std": float(ts.policy.std().detach().mean())}


def _cell(rows: list, variant: str, per_seed: bool = False) -> str:
    """The seed mean of one variant's shift (bold, with each seed's value, where ``per_seed``); — if none measured."""
    x = [r["shift"][variant] for r in rows if np.isfinite(r["shift"][variant])]
    if not x:
        return "—"
    return f"**{np.mean(x):+.4f}** [" + ", ".join(f"{v:+.4f}" for v in x) + "]" if per_seed else f"{np.mean(x):+.4f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", nargs="+", default=["Hopper-v5", "Walker2d-v5", "HalfCheetah-v5"])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--rounds", type=int, default=2, help="group rounds measured per seed and training point")
    p.add_argument("--train-steps", nargs="+", type=int, default=[0, 100_000, 300_000],
                   help="measure after this many env steps of in-process GRPO training (ascending)")
    p.add_argument("--train-scale", choices=("preset",) + SCALES, default="batch",
                   help="the advantage scale the in-process training uses (preset = the task's row)")
    p.add_argument("--near", type=int, default=20, help="steps before a fall that count as near it")
    p.add_argument("--out", default="results/grpo_tuning/std_gradient")
    args = p.parse_args()
    if args.train_steps != sorted(args.train_steps) or args.train_steps[0] < 0:
        p.error("--train-steps must be ascending and >= 0, e.g. 0 100000 300000")
    rows, t0 = [], time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for env in args.envs:
            for seed in args.seeds:
                scale = {} if args.train_scale == "preset" else {"grpo_adv_scale": args.train_scale}
                cfg = make_config("grpo", env_id=env, seed=seed, out_dir=tmp, progress=False, tensorboard=False,
                                  total_steps=max(args.train_steps[-1], 1), **scale)
                ts = TrainState.build(cfg)
                try:
                    for k in args.train_steps:
                        while ts.rollout.global_step < k:  # train.py's loop without its outputs; lr held
                            grpo.iteration(ts)
                            ts.iteration += 1
                        m = measure(ts, args.rounds, args.near)
                        rows.append(dict(env=env, seed=seed, mark=k, steps=ts.rollout.global_step, **m))
                        print(f"{env} seed {seed} at {ts.rollout.global_step:,} steps: std {m['std']:.3f}, "
                              + ", ".join(f"{v} {m['shift'][v]:+.4f}" for v in VARIANTS), file=sys.stderr)
                finally:
                    ts.envs.close()
    lines = ["# How one GRPO update moves the policy std: per-group against batch-scaled advantages", "",
             "Seed means (per seed in brackets) of the change in mean log_std over one update (the package's "
             "update: epochs x minibatches, clipped surrogate, Adam with the run's moments) on the same rollouts. "
             f"near / other: batch scaling, only the steps at most {args.near} steps before a fall / only the others "
             f"in the update. Each task's grpo preset row, trained in process with advantage scale "
             f"{args.train_scale}, lr held at the preset's.", "",
             "| task | trained env steps (seed mean) | std | per-group | batch-scaled | batch, near a fall only | "
             "batch, other steps only | steps near a fall |",
             "|---|---:|---:|---|---|---:|---:|---:|"]
    for env in args.envs:
        for k in args.train_steps:
            rs = [r for r in rows if r["env"] == env and r["mark"] == k]
            lines.append(f"| {env} | {np.mean([r['steps'] for r in rs]):,.0f} | {np.mean([r['std'] for r in rs]):.2f} | "
                         f"{_cell(rs, 'group', True)} | {_cell(rs, 'batch', True)} | {_cell(rs, 'near')} | {_cell(rs, 'other')} | "
                         f"{np.mean([r['near_steps'] for r in rs]):.2f} |")
    prov = provenance(["python"] + sys.argv, seeds=args.seeds)
    text = "\n".join(lines) + f"\n\nWall time: {time.time() - t0:.0f} s.\n\n" + \
        "\n".join(f"- {x}" for x in provenance_text(prov)) + "\n"
    out = Path(args.out + ".md")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_suffix(".md.tmp")
    tmp_out.write_text(text)
    tmp_out.replace(out)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
