"""Config fields as command-line options: one ``--kebab-name`` per ``Config`` field, typed through
``values`` and grouped as a reader looks for them, and the parsed options back into a ``Config``.

Shared by ``cli.py`` (``train``), ``experiments/sweep.py`` (``sweep``, ``bench``), ``tune`` and benchmark
scripts. It lives apart from ``cli.py`` because the command line imports ``sweep`` to register
its commands, so ``sweep`` must not import the command line.
"""
from __future__ import annotations

import argparse
import dataclasses

from . import presets
from .config import Config, ConfigError, make_config
from .values import ALGORITHMS, FIELDS, flag, kind_of, parse_text

# the --help sections, in the order a reader looks for them; every Config field but ``preset`` is in one
GROUPS = {
    "run and environment": ("env_id", "env_kwargs", "algo", "total_steps", "seed", "num_envs", "vectorization",
                            "env_threads", "device", "torch_threads", "compile", "parallel_critic"),
    "PPO (the optimiser and the clipped objective; GRPO shares those not marked PPO)": (
        "num_steps", "lr", "anneal_lr", "lr_floor", "lr_decay_steps", "lr_adapt_kl", "adam_eps", "update_epochs",
        "num_minibatches", "max_grad_norm", "target_kl", "gamma", "gae_lambda", "clip_coef", "dual_clip", "norm_adv",
        "ent_coef", "vf_coef", "clip_vloss", "adv_every_epoch", "value_norm"),
    "networks": ("hidden_sizes", "actor_hidden_sizes", "critic_hidden_sizes", "activation", "layer_norm",
                 "init_log_std", "log_std_min", "log_std_max"),
    "normalisation": ("norm_obs", "obs_clip", "norm_reward", "reward_clip"),
    "GRPO (with --algo grpo)": ("group_size", "start_state", "horizon", "grpo_advantage", "leave_one_out",
                                "grpo_adv_scale", "kl_coef", "ref_update_every", "zero_signal_threshold",
                                "groups_per_iter", "crn", "grpo_step_weight", "grpo_freeze_ended",
                                "grpo_train_steps"),
    "logging and output": ("out_dir", "run_name", "checkpoint_every", "eval_episodes", "eval_interval",
                           "eval_interval_episodes", "progress", "tensorboard", "stop_on_divergence"),
}
_METAVARS = {"int": "N", "float": "X", "str": "NAME", "Tuple[int, ...]": "SIZES"}


class HelpFormatter(argparse.HelpFormatter):
    """``--[no-]norm-obs`` for a boolean option, and help beside options up to 30 characters long."""

    def __init__(self, prog, **kw):
        super().__init__(prog, max_help_position=32, **kw)

    def _format_action_invocation(self, action):
        if isinstance(action, argparse.BooleanOptionalAction):
            return "--[no-]" + action.option_strings[0][2:]
        return super()._format_action_invocation(action)


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage errors as one line (``prog: error: ...; see --help``), exit code 2."""

    def __init__(self, *args, **kw):
        kw.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kw)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def _arg_type(name: str):
    """An argparse type for field ``name``: argparse's own wording for a bad number, ours for the rest."""
    kind, _ = kind_of(FIELDS[name])

    def parse(text: str):
        try:
            return parse_text(name, text)
        except ConfigError as e:
            if kind in ("int", "float"):
                raise ValueError(text) from None  # "invalid int value: 'x'"
            raise argparse.ArgumentTypeError(str(e)) from None
    parse.__name__ = kind
    return parse


def add_preset_args(p: argparse.ArgumentParser, default=None) -> None:
    """``--preset NAME`` or ``--config FILE``: where the options below start from (a file wins over a default)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--preset", default=default, choices=presets.NAMES, metavar="{" + ",".join(presets.NAMES) + "}",
                   help="starting settings (default: default); `ppo-control presets` lists them")
    g.add_argument("--config", metavar="FILE", help="start from a TOML file instead (the presets' format, or a flat "
                   "list of fields; docs/presets.md)")


def preset_of(ns: argparse.Namespace) -> str:
    """The preset name or config file the parsed options start from (``--config x`` is a path, even without
    a .toml ending or a folder)."""
    config = getattr(ns, "config", None)
    if config and not presets.is_file(config):
        config = "./" + config
    return config or getattr(ns, "preset", None) or "default"


def add_config_args(p: argparse.ArgumentParser, skip=("preset",)) -> None:
    """One ``--kebab-name`` option per Config field, in GROUPS; unset options keep the preset's value."""
    default = make_config("default")
    for title, names in GROUPS.items():
        g = p.add_argument_group(title)
        for name in names:
            if name not in skip:
                _add_field(g, FIELDS[name], getattr(default, name))


def _add_field(g, f: dataclasses.Field, default) -> None:
    kind, _ = kind_of(f)
    shown = ",".join(map(str, default)) if isinstance(default, tuple) else "none" if default is None else default
    helptext = f.metadata["help"].removeprefix("GRPO: ") + ("" if shown == "" else f" [{shown}]")
    kw = dict(dest=f.name, default=argparse.SUPPRESS, help=helptext.replace("%", "%%"))
    if kind == "bool":
        g.add_argument(flag(f.name), action=argparse.BooleanOptionalAction, **kw)
    elif kind == "Tuple[str, ...]":  # key=value pairs: --env-kwargs a=1 b=False
        g.add_argument(flag(f.name), nargs="*", type=str, metavar="KEY=VALUE", **kw)
    else:
        choices = f.metadata.get("choices")
        metavar = "{" + ",".join(choices) + "}" if choices else _METAVARS.get(kind, f.name.upper())
        g.add_argument(flag(f.name), type=_arg_type(f.name), metavar=metavar, **kw)


def short_usage(prog: str) -> str:
    return f"{prog} [--preset NAME | --config FILE] [OPTIONS]"


def config_from_args(ns: argparse.Namespace, skip=()) -> Config:
    """The preset (or ``--config`` file) with every Config option given on the command line (except ``skip``)."""
    names = set(FIELDS) - {"preset"} - set(skip)
    overrides = {k: v for k, v in vars(ns).items() if k in names}
    return make_config(preset_of(ns), **overrides)


def fields_for(algo: str):
    """The Config fields that mean something for ``algo`` (``--print-config`` shows these)."""
    own = getattr(ALGORITHMS.get(algo), "own_fields", frozenset())
    hidden = set().union(*(cls.own_fields for cls in ALGORITHMS.values())) - own
    return [n for n in FIELDS if n not in hidden]
