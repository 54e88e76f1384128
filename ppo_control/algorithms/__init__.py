"""The algorithms, by the name the config's ``algo`` field gives: the one place that name maps to code.

    from ppo_control import algorithms
    algorithms.register("vpg", VPG)        # a class implementing algorithms.base.Algorithm
    Config(algo="vpg", ...)                # validated by VPG.check_config, trained by train()

See docs/extending.md, "Adding an algorithm".
"""
from __future__ import annotations

from typing import List, Type

from ..config import ConfigError
from ..values import ALGORITHMS as _REGISTRY  # the registry lives below the schema, which validates through it
from .base import Algorithm, LossTerms


def register(name: str, cls: Type[Algorithm]) -> None:
    """Make ``cls`` the algorithm for ``algo=name`` (registering a name again replaces it)."""
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        raise TypeError(f"{cls!r} is not a subclass of ppo_control.algorithms.Algorithm")
    _REGISTRY[name] = cls  # what Config validation, presets and --print-config ask of it


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def names() -> List[str]:
    return sorted(_REGISTRY)


def get(name: str) -> Type[Algorithm]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"algo={name!r} is not one of {names()}") from None


from .grpo import GRPO  # noqa: E402 - the registry exists before the built-ins register
from .ppo import PPO  # noqa: E402

register("ppo", PPO)
register("grpo", GRPO)

__all__ = ["Algorithm", "LossTerms", "register", "unregister", "names", "get", "PPO", "GRPO"]
