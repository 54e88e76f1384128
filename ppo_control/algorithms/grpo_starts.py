"""Where GRPO's group start states come from (``start_state``): one small strategy per mode.

A strategy is stateless; what a run carries between rounds (the pool of visited states, the
branch trunks) lives in :class:`GRPOState`, which GRPO checkpoints.  All sampling draws from
``ts.np_rng``, in the order the strategies' methods are called by ``grpo._round``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

POOL_SIZE = 2048          # visited start states kept (FIFO)
RECORDS_PER_ROUND = 8     # snapshots added to the pool per round


@dataclass
class GRPOState:
    """What GRPO carries between iterations (besides its reference policy)."""
    pool: List[dict] = field(default_factory=list)  # visited: start states the policy visited (FIFO)
    trunk: Optional[List[dict]] = None               # branch: the K trunk states the next round starts from
    trunk_return: Optional[np.ndarray] = None        # branch: [K] return of each trunk's episode so far
    trunk_length: Optional[np.ndarray] = None        # branch: [K] its length


class StartStates:
    """One ``start_state`` mode: pick a round's K start states, and keep what later rounds need."""
    freezes_ended = True      # members whose episode ended may idle for the rest of the round (grpo_freeze_ended)
    member_episodes = True    # members' whole episodes feed charts/episodic_return

    def pick(self, ts, state: GRPOState, K: int) -> Tuple[list, np.ndarray]:
        """K snapshots and a [K] mask of those at the start of an episode (whole episodes count as returns)."""
        raise NotImplementedError

    def record_at(self, ts, H: int) -> Tuple[int, ...]:
        """Steps of the coming rollout whose states ``collect_groups`` snapshots (into ``gr.visited``)."""
        return ()

    def after_round(self, ts, state: GRPOState, K: int, gr) -> None:
        """Called with the round's ``GroupRollout`` right after it is collected."""


class ResetStarts(StartStates):
    """Fresh resets: each env draws from its own reset distribution with its own RNG."""

    def pick(self, ts, state, K):
        envs, G = ts.envs, ts.cfg.group_size
        envs.reset()
        return [envs.get_snapshots()[k * G] for k in range(K)], np.ones(K, bool)


class VisitedStarts(ResetStarts):
    """States the policy visited in earlier rounds; group 0 always starts fresh, so t = 0 states stay
    covered and the pool keeps renewing."""

    def pick(self, ts, state, K):
        fresh, at_start = super().pick(ts, state, K)
        if not state.pool:
            return fresh, at_start
        picks = ts.np_rng.integers(0, len(state.pool), size=K - 1)
        return fresh[:1] + [state.pool[int(i)] for i in picks], np.arange(K) == 0

    def record_at(self, ts, H):
        return tuple(int(x) for x in ts.np_rng.integers(0, H, size=RECORDS_PER_ROUND))

    def after_round(self, ts, state, K, gr):
        state.pool.extend(gr.visited)
        del state.pool[:-POOL_SIZE]


class BranchStarts(StartStates):
    """The current policy's own running trajectories (TRPO's "vine"): K trunks, each continued from where
    one of its group's members stands after the round."""
    freezes_ended = False     # trunks go on from a member's env after its episode ended: those keep stepping
    member_episodes = False   # the trunks' stitched episodes feed the training curve instead

    def pick(self, ts, state, K):
        if state.trunk is None:  # the envs' own seeded resets (TrainState.build) the first time
            snaps = ts.envs.get_snapshots()
            state.trunk = [snaps[k * ts.cfg.group_size] for k in range(K)]
        return state.trunk, np.array([int(s["elapsed_steps"]) == 0 for s in state.trunk])

    def after_round(self, ts, state, K, gr):
        """The member each trunk continues from is picked at random, blind to the returns, so the trunk stays
        an on-policy trajectory; a member whose episode ended has been reset by its env, so trunks restart
        episodes by themselves.  A trunk is a whole episode stitched from its members' segments: its return
        feeds ``charts/episodic_return`` (the stochastic policy's training curve, like PPO's)."""
        G = ts.cfg.group_size
        snaps = ts.envs.get_snapshots()
        pick = np.arange(K) * G + ts.np_rng.integers(0, G, size=K)
        state.trunk = [snaps[int(i)] for i in pick]
        if state.trunk_return is None:
            state.trunk_return, state.trunk_length = np.zeros(K), np.zeros(K, np.int64)
        ret, length = state.trunk_return, state.trunk_length
        ret += gr.returns[pick]
        length += gr.lengths[pick]
        for k in np.flatnonzero(gr.ended[pick]):
            ts.rollout.episodes.append((float(ret[k]), int(length[k])))
        ended = gr.ended[pick]
        ret[ended], length[ended] = gr.tail_return[pick][ended], gr.tail_length[pick][ended]


START_STATES: Dict[str, StartStates] = {"reset": ResetStarts(), "visited": VisitedStarts(),
                                        "branch": BranchStarts()}
