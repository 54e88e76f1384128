"""Config fields as command-line options: one ``--kebab-name`` per ``Config`` field, typed and
with the field's help text, and the parsed options back into a ``Config``.

Shared by ``cli.py`` (``train``), ``experiments/sweep.py`` (``sweep``, ``bench``) and benchmark
scripts. It lives apart from ``cli.py`` because the command line imports ``sweep`` to register
its commands, so ``sweep`` must not import the command line.
"""
from __future__ import annotations

import argparse
import dataclasses

from .config import Config, make_config


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage errors as one line (``prog: error: ...; see --help``), exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def _int(s: str) -> int:
    """An integer, also written as 1e6 or 1_000_000."""
    try:
        return int(s)
    except ValueError:
        pass
    try:
        f = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {s!r}") from None
    if not f.is_integer():
        raise argparse.ArgumentTypeError(f"invalid int value: {s!r} (not a whole number)")
    return int(f)


_int.__name__ = "int"


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


_TYPES = {"int": _int, "float": float, "str": str, "Optional[float]": _none_or(float),
          "Optional[int]": _none_or(_int), "Optional[str]": _none_or(str), "Tuple[int, ...]": _int_tuple,
          "Optional[Tuple[int, ...]]": _none_or(_int_tuple)}


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
        elif f.type == "Tuple[str, ...]":  # key=value pairs: --env-kwargs a=1 b=False
            g.add_argument(opt, nargs="*", type=str, metavar="KEY=VALUE", **kw)
        else:
            if f.metadata.get("choices"):
                kw["choices"] = f.metadata["choices"]
            g.add_argument(opt, type=_TYPES[f.type], metavar=f.name.upper(), **kw)


def config_from_args(ns: argparse.Namespace, skip=()) -> Config:
    """``ns.preset`` with every Config option given on the command line (except ``skip``) applied."""
    names = {f.name for f in dataclasses.fields(Config)} - {"preset"} - set(skip)
    overrides = {k: v for k, v in vars(ns).items() if k in names}
    return make_config(ns.preset, **overrides)
