"""``ppo-control``: a thin command line over ``train``, ``evaluate`` and the benchmark tools."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import List, Optional

from .checkpoint import CheckpointError
from .cliargs import OneLineParser, add_config_args, config_from_args
from .config import PRESETS, RESUMABLE_FIELDS, Config, ConfigError, applied_env_overrides
from .envs import EnvError, SnapshotError
from .experiments import suite_cli, sweep
from .update import NonFiniteError

CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(Config)) - {"preset"}


def _int_at_least(low: int):
    """An argparse type: an int >= ``low``."""
    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {s!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be >= {low} (got {v})")
        return v
    return parse


_positive_int, _seed = _int_at_least(1), _int_at_least(0)


def _video_path(s: str) -> str:
    if not s.lower().endswith((".mp4", ".gif")):
        raise argparse.ArgumentTypeError(f"{s!r}: the video path must end in .mp4 or .gif")
    return s


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="ppo-control", description="PPO and GRPO for continuous control (MuJoCo).")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a policy", description="Train PPO or GRPO. Every option below "
                       "overrides the chosen preset. Outputs go to OUT_DIR/RUN_NAME: config.json, metrics.jsonl, "
                       "tb/ (TensorBoard), checkpoint.pt, eval.json, summary.json.")
    t.add_argument("--preset", default=None, choices=sorted(PRESETS),
                   help="starting point: 'classic' = the literature's MuJoCo PPO settings (1 env, 2048 steps, "
                        "32 minibatches, 10 epochs), 'default' = the same batch from 4 envs, 'fast' = 64 envs x 64 steps, "
                        "8 minibatches, lr 1e-3, 'tuned' = fast plus the measured best details and per-task rows "
                        "(--print-config shows them), 'grpo' = GRPO (--algo grpo) with its measured best "
                        "settings and per-task rows (default: default)")
    t.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its checkpoint with its "
                   "saved config; only " + ", ".join("--" + f.replace("_", "-") for f in sorted(RESUMABLE_FIELDS))
                   + " may change (e.g. --total-steps to extend the run), any other option is refused")
    t.add_argument("--print-config", action="store_true", help="print the resolved config (preset, then its "
                   "per-env overrides, then your flags) as JSON, with the per-env overrides applied, and exit")
    add_config_args(t)

    e = sub.add_parser("eval", help="evaluate a trained run", description="Deterministic (mean-action) "
                       "evaluation of a run's policy with its saved observation statistics.")
    e.add_argument("run_dir", help="run directory (or checkpoint file)")
    e.add_argument("--episodes", type=_positive_int, default=10, help="number of episodes (default: 10)")
    e.add_argument("--seed", type=_seed, default=10_000, help="seed of the first episode (default: 10000)")
    e.add_argument("--stochastic", action="store_true", help="sample actions instead of using the mean")
    e.add_argument("--video", metavar="PATH", type=_video_path, help="record the first episode to PATH (.mp4 or "
                   ".gif); needs a MuJoCo renderer (MUJOCO_GL=egl or osmesa)")
    e.add_argument("--env-id", help="evaluate on another env id than the one trained on (same observation and "
                   "action sizes)")

    sweep.add_parsers(sub)
    suite_cli.add_parsers(sub)
    from .experiments import tune  # optuna itself is imported only when a study runs
    tune.add_parsers(sub)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Every user error ends here as one line on stderr and exit code 2 (argparse's own: also 2)."""
    command = ["ppo-control", *argv] if argv is not None else sys.argv
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            return _train(args, command)
        elif args.command == "eval":
            from .evaluate import evaluate, load_policy
            pol = load_policy(args.run_dir)
            env_id = args.env_id or pol.config.env_id
            res = evaluate(pol, env_id, args.episodes, args.seed, not args.stochastic, args.video)
            print(json.dumps({k: v for k, v in res.items()}, indent=2))
        else:
            return args.func(args)
    except (ConfigError, EnvError, CheckpointError, SnapshotError, NonFiniteError, RuntimeError) as e:
        return _error(e)
    except OSError as e:  # a file system refusal (permissions, a full disk, a path under a file)
        return _error(f"{e.strerror or e}: {e.filename}" if e.filename else e)
    except KeyboardInterrupt:
        return 130
    return 0


def _error(e) -> int:
    print("ppo-control: error: " + " ".join(str(e).split()), file=sys.stderr)
    return 2


def _train(args: argparse.Namespace, command: List[str]) -> int:
    from .train import resume_config, train
    if args.resume:
        if args.preset is not None:
            raise ConfigError("--preset cannot change on --resume (the run keeps its own config)")
        changes = {k: v for k, v in vars(args).items() if k in CONFIG_FIELDS}
        if args.print_config:
            cfg = resume_config(args.resume, changes)
            print(json.dumps({"config": cfg.to_dict()}, indent=2))
            return 0
        summary = train(resume=args.resume, changes=changes, command=command)
    else:
        args.preset = args.preset or "default"
        cfg = config_from_args(args)
        if args.print_config:
            print(json.dumps({"config": cfg.to_dict(), "env_overrides_applied": applied_env_overrides(cfg)},
                             indent=2))
            return 0
        summary = train(cfg, command=command)
    print(json.dumps(summary, indent=2))
    return 0


def console_main() -> int:
    """The ``ppo-control`` command: ``main``, except that a stopped run (exit 130) whose checkpoint is
    saved does not then wait for kernel compiles nobody will use. The interpreter joins inductor's
    compile threads at exit, and a g++ job on a loaded machine can take minutes; the run directory is
    already closed, so the process ends at once (the compiler finishes on its own and fills the cache)."""
    rc = main()
    if rc == 130:
        from .update import compile_work_running
        if compile_work_running():
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(rc)
    return rc


if __name__ == "__main__":
    raise SystemExit(console_main())
