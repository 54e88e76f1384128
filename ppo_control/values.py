"""Config values by field type, in one place: text (a command-line option, a sweep's ``--grid`` value) and
file values (TOML, JSON) to the field's Python value, the type check validation applies, and the
renderer from a value back to command-line options.

A field's kind comes from its annotation (``int``, ``Optional[float]``, ``Tuple[int, ...]``, ...); every
caller goes through ``kind_of``, so a new field type is one entry in ``KINDS``. This module sits below the
schema: config.py imports it and registers ``Config``'s fields in ``FIELDS``.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple



class ConfigError(ValueError):
    """A configuration value or combination that cannot run."""


FIELDS: Dict[str, dataclasses.Field] = {}  # the schema's fields by name, registered by config.py
# algo name -> its class (ppo_control.algorithms.register fills it): what presets and the command line ask of an
# algorithm without importing the algorithms, which sit above this module
ALGORITHMS: Dict[str, type] = {}


def register_schema(schema) -> None:
    """Make ``schema``'s dataclass fields the ones every name below refers to (config.py calls it)."""
    FIELDS.clear()
    FIELDS.update({f.name: f for f in dataclasses.fields(schema)})
NONE_WORDS = ("none", "null", "off")
_BOOLS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}

# Names other libraries use (stable-baselines3 and its zoo, CleanRL) for what a Config field holds.
ALIASES = {"learning_rate": "lr", "n_steps": "num_steps", "n_epochs": "update_epochs", "n_envs": "num_envs",
           "n_timesteps": "total_steps", "total_timesteps": "total_steps", "clip_range": "clip_coef",
           "normalize_advantage": "norm_adv", "log_std_init": "init_log_std", "net_arch": "hidden_sizes",
           "activation_fn": "activation", "env": "env_id", "env_name": "env_id", "num_epochs": "update_epochs",
           "batch_size": "num_minibatches (minibatches per epoch = num_envs * num_steps / batch size)",
           "normalize": "norm_obs and norm_reward"}


def _int(text: str) -> int:
    """An integer, also written as 1e6 or 1_000_000."""
    try:
        return int(text)
    except ValueError:
        x = float(text)
        if not x.is_integer():
            raise
        return int(x)


def _ints(text: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in text.replace("x", ",").split(",") if x.strip())


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _env_kwarg(item) -> str:
    key, value = item
    return f"{key}={value}" if isinstance(value, str) else f"{key}={value!r}"


class Kind(NamedTuple):
    example: str
    parse: Callable[[str], object]       # text -> value; ValueError or KeyError when it is not one
    accepts: Callable[[object], bool]    # a typed value (Python API, JSON, TOML) is one
    coerce: Callable[[object], object]   # a TOML/JSON value that is one -> the field's Python value


KINDS: Dict[str, Kind] = {
    "int": Kind("3", _int, _is_int, int),
    "float": Kind("0.95", float, _is_real, float),
    "bool": Kind("true or false", lambda s: _BOOLS[s.lower()], lambda v: v in (True, False) and not isinstance(v, str),
                 bool),
    "str": Kind("a word", str, lambda v: isinstance(v, str), str),
    "Tuple[int, ...]": Kind("64x64", _ints, lambda v: isinstance(v, (list, tuple)) and all(map(_is_int, v)), tuple),
    # env_kwargs: KEY=VALUE items; a file may also give a table {key = value}
    "Tuple[str, ...]": Kind("key=value", lambda s: tuple(s.split()),
                            lambda v: isinstance(v, dict) or (isinstance(v, (list, tuple))
                                                              and all(isinstance(x, str) for x in v)),
                            lambda v: tuple(map(_env_kwarg, v.items())) if isinstance(v, dict) else tuple(v)),
}


def kind_of(f: dataclasses.Field) -> Tuple[str, bool]:
    """``(kind name, optional)`` of a Config field: ``Optional[float]`` -> ``("float", True)``."""
    if f.type.startswith("Optional["):
        return f.type[len("Optional["):-1], True
    return f.type, False


def field_name(text: str) -> str:
    """The Config field for ``text`` (kebab or snake case), or ConfigError naming the closest field(s)."""
    name = text.strip().replace("-", "_")
    if name in FIELDS:
        return name
    if name in ALIASES:
        raise ConfigError(f"unknown config field {text!r}; did you mean {ALIASES[name]}? ({name} is another "
                          f"library's name)")
    near = difflib.get_close_matches(name, FIELDS, n=3)
    raise ConfigError(f"unknown config field {text!r}" + (f"; did you mean {', '.join(near)}?" if near else
                                                          f"; fields: {', '.join(sorted(FIELDS))}"))


def _expected(f: dataclasses.Field) -> str:
    kind, optional = kind_of(f)
    return f"expected {kind} (e.g. {KINDS[kind].example})" + (" or none" if optional else "")


def _check_choice(f: dataclasses.Field, value, shown) -> None:
    choices = f.metadata.get("choices")
    if choices and value not in choices:
        raise ConfigError(f"{f.name}={shown!r} is not one of {list(choices)}")


def parse_text(name: str, text: str):
    """``text`` as a value of field ``name`` (command line, sweep grid): ``1e6`` for ints, ``64x64`` or
    ``64,64`` for sizes, true/false/yes/no for bools, none for an Optional field."""
    f = FIELDS[field_name(name)]
    kind, optional = kind_of(f)
    text = text.strip()
    if optional and text.lower() in NONE_WORDS:
        return None
    try:
        value = KINDS[kind].parse(text)
    except (ValueError, KeyError):
        raise ConfigError(f"{f.name}={text!r}: {_expected(f)}") from None
    _check_choice(f, value, text)
    return value


def file_value(name: str, value):
    """A value read from a TOML or JSON file as field ``name``'s Python value: a list for a tuple, an
    integer for a float, "none" for an Optional field that is off (TOML has no null)."""
    f = FIELDS[field_name(name)]
    kind, optional = kind_of(f)
    if optional and (value is None or (isinstance(value, str) and value.lower() in NONE_WORDS
                                       and kind != "str")):
        return None
    if kind == "int" and isinstance(value, float) and value.is_integer():
        value = int(value)  # total_steps = 1e6
    if not KINDS[kind].accepts(value):
        raise ConfigError(f"{f.name} = {value!r}: {_expected(f)}")
    value = KINDS[kind].coerce(value)
    _check_choice(f, value, value)
    return value


def type_error(f: dataclasses.Field, value) -> Optional[str]:
    """Why ``value`` is not of field ``f``'s type (a NaN or inf float included), or None: Config's check on
    every value, whichever way it came (file, command line, Python API)."""
    kind, optional = kind_of(f)
    if (value is None and optional) or kind.startswith("Tuple"):  # tuples have their own rules in validation
        return None
    if not KINDS[kind].accepts(value):
        return f"{f.name} must be {'an' if kind == 'int' else 'a'} {kind} (got {value!r})"
    if kind == "float" and not math.isfinite(value):
        return f"{f.name} must be a finite number (got {value})"
    return None


def env_kwarg(item: str):
    """``"key=value"`` -> ``(key, value)`` with value a Python literal (number, True/False/None) or a string."""
    import ast
    key, sep, text = str(item).partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise ConfigError(f"env_kwargs item {item!r} is not key=value with a Python identifier as key, "
                          f"e.g. include_cfrc_ext_in_observation=False")
    try:
        return key, ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return key, text.strip()


def flag(name: str) -> str:
    """``lr_floor`` -> ``--lr-floor``."""
    return "--" + name.replace("_", "-")


def option_args(name: str, value) -> List[str]:
    """Field ``name`` set to ``value`` as command-line arguments that parse back to it:
    ``--no-norm-obs``, ``--hidden-sizes 64,64``, ``--env-kwargs a=1 b=2``, ``--target-kl none``."""
    opt = flag(name)
    if isinstance(value, bool):
        return [opt if value else "--no-" + opt[2:]]
    if value is None:
        return [opt, "none"]
    if isinstance(value, (tuple, list)):
        kind, _ = kind_of(FIELDS[name]) if name in FIELDS else ("", False)
        return [opt, ",".join(map(str, value))] if kind == "Tuple[int, ...]" else [opt, *map(str, value)]
    return [opt, repr(value) if isinstance(value, float) else str(value)]
