"""``ppo-control``: a thin command line over ``train``, ``evaluate`` and the benchmark tools."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import List, Optional

from . import __version__, presets
from .checkpoint import CheckpointError
from .cliargs import OneLineParser, add_config_args, add_preset_args, config_from_args, fields_for, short_usage
from .config import RESUMABLE_FIELDS, Config, ConfigError
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
    p.add_argument("--version", action="version", version=f"ppo-control {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a policy", usage=short_usage("ppo-control train"),
                       description="Train PPO or GRPO. Every option overrides the preset's value (shown in [], "
                       "the default preset's). Outputs go to OUT_DIR/RUN_NAME: config.json, metrics.jsonl, "
                       "tb/ (TensorBoard), checkpoint.pt, eval.json, summary.json.")
    add_preset_args(t)
    t.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its checkpoint with its "
                   "saved config; only " + ", ".join("--" + f.replace("_", "-") for f in sorted(RESUMABLE_FIELDS))
                   + " may change (e.g. --total-steps to extend the run), any other option is refused")
    t.add_argument("--print-config", action="store_true", help="print the resolved config (preset, then its "
                   "task row, then your flags) as JSON, only the fields its algorithm uses, and exit")
    add_config_args(t)

    s = sub.add_parser("presets", help="list the presets, or show one resolved for a task",
                       description="Without NAME: each built-in preset and what it is. With NAME (a preset or a "
                       "TOML file): every setting it gives for --env-id, and where each comes from.")
    s.add_argument("name", nargs="?", metavar="NAME", help="a preset name or a config file")
    s.add_argument("--env-id", help="show NAME's task row for this env id too (default: the schema's env id)")
    s.set_defaults(func=_cmd_presets)

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
        if args.preset is not None or args.config is not None:
            given = "--preset" if args.preset is not None else "--config"
            raise ConfigError(f"{given} cannot change on --resume (the run keeps its own config)")
        changes = {k: v for k, v in vars(args).items() if k in CONFIG_FIELDS}
        if args.print_config:
            cfg = resume_config(args.resume, changes)
            print(json.dumps({"config": cfg.to_dict()}, indent=2))
            return 0
        summary = train(resume=args.resume, changes=changes, command=command)
    else:
        cfg = config_from_args(args)
        if args.print_config:
            d = cfg.to_dict()
            print(json.dumps({"config": {k: d[k] for k in fields_for(cfg.algo)},
                              "env_overrides_applied": presets.applied_env_overrides(cfg)}, indent=2))
            return 0
        summary = train(cfg, command=command)
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_presets(args: argparse.Namespace) -> int:
    if args.name is None:
        width = max(map(len, presets.NAMES))
        for name in presets.NAMES:
            print(f"{name:<{width}}  {presets.load(name).description}")
        print("\nppo-control presets NAME [--env-id ENV_ID] shows one resolved for a task")
        return 0
    p = presets.load(args.name)
    env_id = args.env_id or Config.env_id
    print(p.name + (f": {p.description}" if p.description else "") + (f" (base: {p.base})" if p.base else ""))
    if p.source:
        print(f"  source: {p.source}")
    rows = presets.resolve(args.name, env_id)
    width = max((len(k) for k, _, _ in rows), default=0)
    print(f"settings for {env_id} (every other field: the schema's default, `train --help`):")
    for key, value, origin in rows:
        shown = ",".join(map(str, value)) if isinstance(value, tuple) else value
        print(f"  {key:<{width}}  {shown!s:<12}  {origin}")
    row = p.tasks.get(env_id)
    if row is not None and row.source:
        print(f"  task row source: {row.source}")
    others = sorted(set(p.tasks) - {env_id})
    if others:
        print(f"task rows for other env ids: {', '.join(others)}")
    return 0


def console_main() -> int:
    """The ``ppo-control`` command: ``main``, except that a stopped run (exit 130), whose checkpoint is saved
    and whose run directory and critic's process are closed, ends at once with 130. The interpreter's own exit
    would join inductor's compile threads (a g++ job on a loaded machine can take minutes; the compiler finishes
    on its own and fills the cache), and CPython 3.11 ends an interpreter that a KeyboardInterrupt once left
    through code run by ``exec`` by raising SIGINT on itself, so the exit status is not 130."""
    rc = main()
    if rc == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


if __name__ == "__main__":
    raise SystemExit(console_main())
