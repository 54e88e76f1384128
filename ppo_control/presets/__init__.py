"""Presets as data: the TOML files beside this module (one per preset), or a user's file of the same format.

    [preset]
    description = "one line"            # shown by `ppo-control presets`
    base = "fast"                       # optional: start from another preset's settings
    source = "the measurement that chose these settings"
    [preset.settings]                   # Config fields (lists for tuples, "none" for an Optional off)
    init_log_std = -0.5
    [tasks."Hopper-v5"]                 # a per-task row on top of the settings
    source = "..."
    lr = 3e-4

A file with no ``[preset]`` table is a flat list of fields (the settings). Without ``base`` a file starts
from the schema's defaults. A config resolves as: the base's settings < the preset's settings < the
task row for ``env_id`` < explicit overrides (a base's task rows do not carry over).
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

from ..values import ALGORITHMS, FIELDS, ConfigError, file_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

GRPO_EVAL_INTERVAL = 50_000  # eval_interval of GRPO on a PPO preset when none is given
PRESET_DIR = Path(__file__).resolve().parent
NAMES: Tuple[str, ...] = tuple(sorted(p.stem for p in PRESET_DIR.glob("*.toml")))
_PRESET_KEYS, _ROW_KEYS = {"description", "base", "source", "settings"}, {"source"}


class Row(NamedTuple):
    settings: dict
    source: str


class Preset(NamedTuple):
    name: str          # a built-in name, or the path of a user's file as given
    description: str
    base: Optional[str]
    source: str
    settings: dict     # this file's own settings, typed (not the base's)
    tasks: Dict[str, Row]


def is_file(name: str) -> bool:
    """A preset given as a path (``my.toml``, ``configs/x.toml``) rather than a built-in name."""
    return name not in NAMES and (name.endswith(".toml") or "/" in name or "\\" in name)


def load(name: str) -> Preset:
    """The built-in preset ``name`` or the TOML file at path ``name``; ConfigError in one line otherwise."""
    if is_file(name):
        return _read(name, Path(name))
    if name in NAMES:
        return _builtin(name)
    raise ConfigError(f"unknown preset {name!r}; choose one of {list(NAMES)} or give a .toml file")


@functools.lru_cache(maxsize=None)
def _builtin(name: str) -> Preset:
    return _read(name, PRESET_DIR / f"{name}.toml")


def _read(name: str, path: Path) -> Preset:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{name}: no such config file") from None
    except tomllib.TOMLDecodeError as e:  # its message names the line and column
        raise ConfigError(f"{name}: not valid TOML: {e}") from None
    try:
        return _parse(name, data)
    except ConfigError as e:
        raise ConfigError(f"{name}: {e}") from None


def _parse(name: str, data: dict) -> Preset:
    flat = "preset" not in data and "tasks" not in data  # a flat file of fields
    if flat:
        data = {"preset": {"settings": data}}
    head = data.get("preset", {})
    for key in set(data) - {"preset", "tasks"}:
        raise ConfigError(f"{key} at the top level: in a file with [preset] or [tasks] tables, fields go under "
                          f"[preset.settings]" if key in FIELDS else f"unknown top-level table {key!r}; valid: "
                          f"[preset], [preset.settings], [tasks.\"ENV_ID\"]")
    _no_extra(set(head) - _PRESET_KEYS, "[preset] key", ", ".join(sorted(_PRESET_KEYS)))
    base = head.get("base")
    if base is not None and (not isinstance(base, str) or base == name):
        raise ConfigError(f"base = {base!r}: name another preset, one of {list(NAMES)}")
    tasks = {env_id: _row(env_id, row) for env_id, row in data.get("tasks", {}).items()}
    return Preset(name, str(head.get("description", "")), base, str(head.get("source", "")),
                  _settings(head.get("settings", {}), "" if flat else "[preset.settings] "), tasks)


def _row(env_id: str, row: dict) -> Row:
    table = f'tasks."{env_id}"'
    where = f"[{table}] "
    if not isinstance(row, dict):
        raise ConfigError(f"{where}must be a table of fields")
    settings = {k: v for k, v in row.items() if k not in _ROW_KEYS}
    return Row(_settings(settings, where), str(row.get("source", "")))


def _settings(table: dict, where: str) -> dict:
    out = {}
    for key, value in table.items():
        try:
            out[key] = file_value(key, value)
        except ConfigError as e:
            raise ConfigError(f"{where}{e}") from None
    for key in set(out) & {"preset", "env_id"}:
        raise ConfigError(f"{where}{key}: a preset cannot set {key} (give it on the command line)")
    return out


def _no_extra(extra, what: str, valid: str) -> None:
    if extra:
        raise ConfigError(f"unknown {what} {sorted(extra)[0]!r}; valid: {valid}")


def resolve(preset: str, env_id: str) -> List[Tuple[str, object, str]]:
    """``(field, value, origin)`` for every field the preset sets for ``env_id``, origin being ``preset``,
    ``base NAME`` or ``task row``: what ``ppo-control presets NAME --env-id E`` shows."""
    chain, seen = [], set()
    p = load(preset)
    while True:
        chain.append(p)
        seen.add(p.name)
        if p.base is None:
            break
        base = p.base
        if is_file(base) and is_file(p.name) and not Path(base).is_absolute():  # beside the file naming it
            base = str(Path(p.name).parent / base)
        if base in seen:
            raise ConfigError(f"{preset}: base presets form a loop ({' -> '.join([*seen, base])})")
        p = load(base)
    values: Dict[str, Tuple[object, str]] = {}
    for p in reversed(chain):
        origin = "preset" if p.name == preset else f"base {p.name}"
        values.update({k: (v, origin) for k, v in p.settings.items()})
    row = chain[0].tasks.get(env_id)
    values.update({k: (v, "task row") for k, v in (row.settings if row else {}).items()})
    return [(k, v, origin) for k, (v, origin) in values.items()]


def _algo_of(preset: str) -> str:
    return dict((k, v) for k, v, _ in resolve(preset, "")).get("algo", _default("algo"))


def _serves_others(algo: str) -> bool:
    return getattr(ALGORITHMS.get(algo), "presets_serve_others", True)


def _default(name: str):
    return FIELDS[name].default


def resolved(preset: str, overrides: dict) -> dict:
    """The Config fields of a preset (a built-in name or a TOML file) and its task row for ``env_id``, then
    ``overrides`` (``config.make_config`` builds the Config from them)."""
    env_id = overrides.get("env_id", _default("env_id"))
    values = {k: v for k, v, _ in resolve(preset, env_id)}
    preset_algo = values.get("algo", _default("algo"))
    algo = overrides.get("algo", preset_algo)
    if algo != preset_algo:
        if not _serves_others(preset_algo):
            fits = sorted(n for n in NAMES if _algo_of(n) == algo or _serves_others(_algo_of(n)))
            raise ConfigError(f"preset {preset!r} holds {preset_algo.upper()}'s settings; with --algo {algo} "
                              f"choose one of {fits}")
        if algo in ALGORITHMS:  # an unknown name is refused by Config validation, with the registered names
            values = ALGORITHMS[algo].from_other_preset(values, overrides)
    values.update(overrides)
    values["preset"] = preset
    return values


def _row_of(cfg) -> Optional[Row]:
    try:
        return load(cfg.preset).tasks.get(cfg.env_id)
    except ConfigError:  # a run made from a user's file that is no longer there
        return None


def applied_env_overrides(cfg) -> dict:
    """The task row of ``cfg.preset`` for ``cfg.env_id`` that ``cfg`` carries (fields not overridden)."""
    row = _row_of(cfg)
    return {k: v for k, v in (row.settings if row else {}).items() if getattr(cfg, k) == v}


PRESETS = NAMES  # the built-in preset names (importable from ppo_control.config as before)
