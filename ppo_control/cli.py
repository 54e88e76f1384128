"""``ppo-control``: a thin command line over ``train``, ``evaluate`` and the benchmark tools."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import List, Optional

from .checkpoint import CheckpointError
from .config import PRESETS, Config, ConfigError, make_config
from .envs import EnvError, SnapshotError
from .update import NonFiniteError


def _none_or(cast):
    def parse(s: str):
        return None if s.lower() in ("none", "null", "off") else cast(s)
    parse.__name__ = cast.__name__
    return parse


def _int_tuple(s: str):
    try:
        return tuple(int(x) for x in s.replace("x", ",").split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 64,64, got {s!r}") from None


_TYPES = {"int": int, "float": float, "str": str, "Optional[float]": _none_or(float),
          "Optional[int]": _none_or(int), "Optional[str]": _none_or(str), "Tuple[int, ...]": _int_tuple}


def add_config_args(p: argparse.ArgumentParser, skip=("preset",)) -> None:
    """One ``--kebab-name`` option per Config field; unset options keep the preset's value."""
    default = make_config("default")
    classic = make_config("classic")
    g = p.add_argument_group("configuration (defaults shown are the 'default' preset's; classic in [])")
    for f in dataclasses.fields(Config):
        if f.name in skip:
            continue
        d, c = getattr(default, f.name), getattr(classic, f.name)
        shown = ",".join(map(str, d)) if isinstance(d, tuple) else d
        helptext = f.metadata["help"] + f" (default: {shown}" + (f"; classic: {c}" if c != d else "") + ")"
        opt = "--" + f.name.replace("_", "-")
        kw = dict(dest=f.name, default=argparse.SUPPRESS, help=helptext.replace("%", "%%"))
        if f.type == "bool":
            g.add_argument(opt, action=argparse.BooleanOptionalAction, **kw)
        else:
            if f.metadata.get("choices"):
                kw["choices"] = f.metadata["choices"]
            g.add_argument(opt, type=_TYPES[f.type], metavar=f.name.upper(), **kw)


def config_from_args(ns: argparse.Namespace, skip=()) -> Config:
    names = {f.name for f in dataclasses.fields(Config)} - {"preset"} - set(skip)
    overrides = {k: v for k, v in vars(ns).items() if k in names}
    return make_config(ns.preset, **overrides)


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

    from . import sweep as sweep_mod
    sweep_mod.add_parsers(sub)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            from .train import train
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
