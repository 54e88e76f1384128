"""``ppo-control``: a thin command line over ``train``, ``evaluate`` and the benchmark tools."""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from .checkpoint import CheckpointError
from .cliargs import add_config_args, config_from_args
from .config import PRESETS, ConfigError, applied_env_overrides
from .envs import EnvError, SnapshotError
from .experiments import sweep
from .update import NonFiniteError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ppo-control", description="PPO and GRPO for continuous control (MuJoCo).")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a policy", description="Train PPO or GRPO. Every option below "
                       "overrides the chosen preset. Outputs go to OUT_DIR/RUN_NAME: config.json, metrics.csv/"
                       ".jsonl, tb/ (TensorBoard), checkpoint.pt, eval.json, summary.json.")
    t.add_argument("--preset", default="default", choices=sorted(PRESETS),
                   help="starting point: 'classic' = the literature's MuJoCo PPO settings (1 env, 2048 steps, "
                        "32 minibatches, 10 epochs), 'default' = the same batch from 4 envs")
    t.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its checkpoint "
                   "(its saved config is used; other options are ignored)")
    t.add_argument("--print-config", action="store_true", help="print the resolved config (preset, then its "
                   "per-env overrides, then your flags) as JSON, with the per-env overrides applied, and exit")
    add_config_args(t)

    e = sub.add_parser("eval", help="evaluate a trained run", description="Deterministic (mean-action) "
                       "evaluation of a run's policy with its saved observation statistics.")
    e.add_argument("run_dir", help="run directory (or checkpoint file)")
    e.add_argument("--episodes", type=int, default=10, help="number of episodes (default: 10)")
    e.add_argument("--seed", type=int, default=10_000, help="seed of the first episode (default: 10000)")
    e.add_argument("--stochastic", action="store_true", help="sample actions instead of using the mean")
    e.add_argument("--video", metavar="PATH", help="record the first episode to PATH (.mp4 or .gif); "
                   "needs a MuJoCo renderer (MUJOCO_GL=egl or osmesa)")
    e.add_argument("--env-id", help="evaluate on another env id than the one trained on")

    sweep.add_parsers(sub)
    from .experiments import tune  # optuna itself is imported only when a study runs
    tune.add_parsers(sub)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            from .train import train
            if args.print_config:
                cfg = config_from_args(args)
                print(json.dumps({"config": cfg.to_dict(), "env_overrides_applied": applied_env_overrides(cfg)},
                                 indent=2))
                return 0
            if args.resume:
                summary = train(resume=args.resume)
            else:
                summary = train(config_from_args(args))
            print(json.dumps(summary, indent=2))
        elif args.command == "eval":
            from .evaluate import evaluate, load_policy
            pol = load_policy(args.run_dir)
            env_id = args.env_id or pol.config.env_id
            res = evaluate(pol, env_id, args.episodes, args.seed, not args.stochastic, args.video)
            print(json.dumps({k: v for k, v in res.items()}, indent=2))
        else:
            return args.func(args)
    except (ConfigError, EnvError, CheckpointError, SnapshotError, NonFiniteError, RuntimeError) as e:
        print(f"ppo-control: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
