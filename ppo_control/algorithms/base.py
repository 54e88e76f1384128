"""The interface every training algorithm implements (in the spirit of RSL-RL's algorithm classes).

``train.py`` drives any registered algorithm through it, and ``state.py`` builds and checkpoints it:

    cls = algorithms.get(cfg.algo)
    cls.check_config(cfg)                       # from Config validation: what this algorithm rejects
    algorithm = cls.build(cfg, policy, envs)    # what it carries beyond the shared networks
    while not algorithm.finished(ts):
        stats = algorithm.iteration(ts)         # collect, advantages, update; returns metrics to log
    checkpoint["algorithm"] = algorithm.state_dict()

The shared parts live in :class:`~ppo_control.state.TrainState`: the policy, the critic (built
when ``uses_critic``), one optimizer over both, the normalisers, the envs, the RNGs.
"""
from __future__ import annotations

from typing import ClassVar, Optional

from ..update import LossTerms


class Algorithm:
    """One algorithm: a class with the class-level facts below and an instance per run.

    Subclasses override what they need; the defaults describe a critic-free algorithm that
    carries nothing, trains until ``total_steps`` and checkpoints nothing of its own."""

    uses_critic: ClassVar[bool] = False      # TrainState builds a ValueNet, optimised with the policy
    splits_critic: ClassVar[bool] = False    # iteration() hands update() ts.critic_process (parallel_critic)
    needs_snapshots: ClassVar[bool] = False  # the envs must save/restore simulator states (checked at build)
    loss_terms: ClassVar[LossTerms] = LossTerms()
    compile_auto_off: ClassVar[str] = "off (this algorithm's update is not measured compiled)"
    own_fields: ClassVar[frozenset] = frozenset()  # Config fields only this algorithm reads (--print-config
    #                                                hides them for the others)
    presets_serve_others: ClassVar[bool] = True    # a preset with algo = this one may train another algorithm

    @classmethod
    def from_other_preset(cls, values: dict, overrides: dict) -> dict:
        """``values`` of a preset made for another algorithm, adjusted to run this one (``overrides``: what the
        user set, which wins anyway)."""
        return values

    @classmethod
    def check_config(cls, cfg) -> None:
        """Raise ``ConfigError`` (via ``config._need``) for settings this algorithm cannot run."""

    @classmethod
    def planned_updates(cls, cfg) -> Optional[int]:
        """Minibatch updates the whole run makes, where known in advance: ``compile=auto`` compiles the loss
        when there are enough of them. None keeps ``auto`` off, with ``compile_auto_off`` as the reason."""
        return None

    @classmethod
    def build(cls, cfg, policy, envs) -> "Algorithm":
        """The algorithm's own objects for a new run; ``envs`` are already reset with the run's seed."""
        return cls()

    def iteration(self, ts) -> dict:
        """One iteration on the ``TrainState`` ``ts``: advance ``ts.rollout.global_step`` by the env steps
        trained on and return the statistics to log (``charts/steps_this_iter`` among them)."""
        raise NotImplementedError

    def finished(self, ts) -> bool:
        return ts.rollout.global_step >= ts.cfg.total_steps

    def progress_return(self, ts, row: dict) -> float:
        """The return the progress bar shows after an iteration (``row``: its logged metrics)."""
        return ts.last_return()

    def state_dict(self) -> dict:
        """What this algorithm checkpoints: tensors and Python primitives only (``checkpoint.to_tensors``
        converts numpy arrays); a copy, since training goes on after the capture."""
        return {}

    def load_state_dict(self, sd: dict) -> None:
        """Restore ``state_dict()``'s content (a checkpoint from an older format is upgraded before)."""
