"""Hyperparameter search spaces for ``ppo-control tune``: one dict per named space, one entry per Config field.

    "lr":            ("log", 1e-4, 3e-3)       float, log-uniform in [low, high]
    "gae_lambda":    ("float", 0.8, 0.99)      float, uniform in [low, high]
    "update_epochs": ("int", 5, 20)            integer, uniform, both ends included
    "num_steps":     ("logint", 64, 2048)      integer, log-uniform
    "ent_coef":      ("log0", 1e-5, 1e-2)      0, or log-uniform in [low, high] (see below)
    "activation":    ("cat", ["tanh", "relu"]) one of the values; tuples for sizes, None for optional fields

A key is any ``Config`` field, so a field added to Config can be searched with no code change here;
every field not in the space comes from ``--preset`` and the command line. A space is checked
before any run: unknown fields (with the closest names), fields that are set another way (seed,
out_dir) or change no learning (output-only fields), a kind that does not fit the field's type,
and every bound or choice that would not make a valid Config by itself with the fixed settings.

``log0`` is one parameter, log-uniform over [low/10, high], whose bottom decade (below low) means
exactly 0 (a quarter of the draws at the start, 1e-5..1e-2): "off or how much" without a
conditional parameter, so the multivariate TPE models it jointly with the rest.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Sequence

from ..config import OUTPUT_ONLY_FIELDS, ConfigError, make_config

# The knobs the strong MuJoCo PPO recipes disagree on (issue 11): Tianshou (log_std -0.5, vf 0.25),
# SB3-zoo (ReLU 256x256, gamma 0.98, 20 epochs), Andrychowicz et al. 2021 (critic wider than the
# actor, std 0.5 at the start, lambda 0.9).
SPACES: Dict[str, Dict[str, tuple]] = {
    "ppo": {
        "lr": ("log", 1e-4, 3e-3),
        "gamma": ("cat", [0.98, 0.99, 0.995, 0.999]),
        "gae_lambda": ("float", 0.8, 0.99),
        "init_log_std": ("float", -1.5, 0.0),
        "ent_coef": ("log0", 1e-5, 1e-2),
        "vf_coef": ("cat", [0.25, 0.5, 1.0]),
        "clip_coef": ("cat", [0.1, 0.2, 0.3]),
        "update_epochs": ("int", 5, 20),
        "num_minibatches": ("cat", [8, 16, 32]),
        "max_grad_norm": ("cat", [0.5, 1.0, 5.0]),
        "actor_hidden_sizes": ("cat", [(64, 64), (256, 256)]),
        "critic_hidden_sizes": ("cat", [(64, 64), (256, 256)]),
        "activation": ("cat", ["tanh", "relu"]),
    },
    # Rollout shape and learning-rate schedule at a fixed budget: many envs with short rollouts
    # (Tianshou) against few envs with long ones (the classic 1 x 2048).
    "ppo_shape": {
        "num_envs": ("cat", [1, 4, 8, 16]),
        "num_steps": ("cat", [128, 256, 512, 2048]),
        "num_minibatches": ("cat", [4, 8, 16, 32]),
        "update_epochs": ("int", 4, 20),
        "lr": ("log", 1e-4, 3e-3),
        "anneal_lr": ("cat", [True, False]),
    },
    # A small space for a 2-core budget (~15 trials): the batch shape the tuned preset's rows
    # disagree on (64 x 64 hurt Hopper and Swimmer) plus the four knobs the recipes above set per
    # task. 256 steps per env keeps every draw between 1,024 and 8,192 samples per rollout, so no
    # draw needs more than ~250k minibatch updates in 1M steps.
    "ppo_lite": {
        "num_envs": ("cat", [4, 8, 16, 32]),
        "num_steps": ("cat", [256]),
        "num_minibatches": ("cat", [4, 8, 16]),
        "update_epochs": ("int", 5, 15),
        "lr": ("log", 1e-4, 3e-3),
        "gamma": ("cat", [0.99, 0.999, 0.9999]),
        "gae_lambda": ("float", 0.8, 1.0),
        "init_log_std": ("float", -1.5, 0.0),
    },
}

KINDS = ("float", "log", "int", "logint", "log0", "cat")
_NUMERIC = {"float": "float", "log": "float", "log0": "float", "int": "int", "logint": "int"}
# Set by tune itself, one per trial or study, never sampled.
_NOT_SEARCHED = {"seed": "use --seeds", "run_name": "run names are generated", "out_dir": "use --out-dir",
                 "preset": "use --preset", "env_id": "a study tunes one task; use --env-id"}


@dataclass(frozen=True)
class Param:
    """One searched Config field: ``kind`` in KINDS, ``low``/``high`` for numeric kinds, ``choices`` for cat."""
    name: str
    kind: str
    low: Any = None
    high: Any = None
    choices: tuple = ()

    def sample(self, trial):
        """The field's value for an Optuna ``trial`` (suggests this parameter under the field's name)."""
        if self.kind == "cat":
            labels = [choice_label(c) for c in self.choices]
            return self.choices[labels.index(trial.suggest_categorical(self.name, labels))]
        if self.kind in ("int", "logint"):
            return trial.suggest_int(self.name, self.low, self.high, log=self.kind == "logint")
        if self.kind == "log0":
            x = trial.suggest_float(self.name, self.low / 10, self.high, log=True)
            return 0.0 if x < self.low else x
        return trial.suggest_float(self.name, self.low, self.high, log=self.kind == "log")

    def describe(self) -> str:
        if self.kind == "cat":
            return f"one of {', '.join(str(choice_label(c)) for c in self.choices)}"
        what = {"float": "uniform", "log": "log-uniform", "int": "integer", "logint": "log-uniform integer",
                "log0": "0 or log-uniform"}[self.kind]
        return f"{what} in [{self.low:g}, {self.high:g}]"


def choice_label(value) -> Any:
    """A categorical choice as Optuna stores it: tuples as '64x64' (Optuna takes only None/bool/int/float/str)."""
    return "x".join(map(str, value)) if isinstance(value, (tuple, list)) else value


def parse_space(space: Dict[str, tuple], preset: str = "default", fixed: Dict[str, Any] = None,
                label: str = "search space") -> List[Param]:
    """``{field: (kind, ...)}`` -> checked ``Param`` list, or ConfigError naming the entry and what to change.

    ``preset`` and ``fixed`` (the options given on the command line) are the settings every
    bound and choice is checked with.
    """
    from .sweep import FIELDS, field_name
    fixed = dict(fixed or {})
    params = []
    for key, spec in space.items():
        try:
            name = field_name(key)
        except ConfigError as e:
            raise ConfigError(f"{label}: {e}") from None
        where = f"{label}, {name}"
        why = _NOT_SEARCHED.get(name) or ("an output-only field (changes no learning)"
                                          if name in OUTPUT_ONLY_FIELDS else None)
        if why:
            raise ConfigError(f"{where}: not a search field ({why})")
        if name in fixed:
            raise ConfigError(f"{where}: also given as a fixed option ({name}={fixed[name]!r}); keep one")
        param = _param(name, spec, FIELDS[name].type, where)
        values = param.choices if param.kind == "cat" else (param.low, param.high) + ((0.0,) * (param.kind == "log0"))
        for v in values:
            try:
                make_config(preset, **fixed, **{name: v})
            except (ConfigError, TypeError) as e:
                raise ConfigError(f"{where}={choice_label(v)!r} is not a valid setting with the fixed options: "
                                  f"{e}") from None
        params.append(param)
    if not params:
        raise ConfigError(f"{label} is empty")
    return params


def _param(name: str, spec, ftype: str, where: str) -> Param:
    if not isinstance(spec, (tuple, list)) or not spec or spec[0] not in KINDS:
        raise ConfigError(f"{where}: expected (kind, ...) with kind one of {list(KINDS)}, got {spec!r}")
    kind = spec[0]
    if kind == "cat":
        if len(spec) != 2 or not isinstance(spec[1], (tuple, list)) or not spec[1]:
            raise ConfigError(f"{where}: expected ('cat', [value, ...]) with at least one value, got {spec!r}")
        choices = tuple(tuple(c) if isinstance(c, list) else c for c in spec[1])
        labels = [choice_label(c) for c in choices]
        if len(set(map(repr, labels))) < len(labels):
            raise ConfigError(f"{where}: repeated choice in {list(spec[1])}")
        return Param(name, kind, choices=choices)
    want = _NUMERIC[kind]
    if ftype.replace("Optional[", "").rstrip("]") != want:
        other = "('int' or 'logint')" if want == "float" else "('float', 'log' or 'log0')"
        raise ConfigError(f"{where}: kind {kind!r} samples {want}s but the field is {ftype}; "
                          f"use 'cat' or {other} as the field's type allows")
    if len(spec) != 3:
        raise ConfigError(f"{where}: expected ({kind!r}, low, high), got {spec!r}")
    low, high = spec[1], spec[2]
    number = int if want == "int" else (int, float)
    if not all(isinstance(x, number) and not isinstance(x, bool) for x in (low, high)) or not low < high:
        raise ConfigError(f"{where}: bounds must be {want}s with low < high, got {low!r}, {high!r}")
    if kind in ("log", "logint", "log0") and low <= 0:
        raise ConfigError(f"{where}: a log scale needs low > 0 (got {low!r}); 'log0' adds the value 0")
    return Param(name, kind, float(low) if want == "float" else low, float(high) if want == "float" else high)


def sample_values(trial, params: Sequence[Param]) -> Dict[str, Any]:
    """``{field: value}`` for one trial, in the space's order."""
    return {p.name: p.sample(trial) for p in params}


def space_lines(params: Sequence[Param]) -> List[str]:
    return [f"{p.name}: {p.describe()}" for p in params]


def space_names() -> List[str]:
    return sorted(SPACES)


def get_space(name: str) -> Dict[str, tuple]:
    if name not in SPACES:
        raise ConfigError(f"unknown search space {name!r}; spaces in search_space.py: {space_names()}")
    return SPACES[name]

