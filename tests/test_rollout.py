"""rollout.clipped_share: the share of raw action components the env receives clipped."""
import numpy as np
import pytest
import torch

from ppo_control.rollout import clipped_share


def test_clipped_share_by_hand_per_dimension_bounds():
    low, high = np.array([-1.0, -2.0]), np.array([1.0, 2.0])
    # dim 0: 1.5 > 1 and -1.5 < -1 are clipped, 1.0 sits on the bound (not changed by np.clip);
    # dim 1: 1.5 and -2.0 are inside [-2, 2], -2.5 is clipped -> 3 of 6 components
    actions = torch.tensor([[1.5, 1.5], [-1.5, -2.5], [1.0, -2.0]])
    assert clipped_share(actions, low, high) == 0.5
    # [T, N, act_dim] as collected: the same rows, reshaped, give the same share
    assert clipped_share(actions.reshape(3, 1, 2), low, high) == 0.5
    # it agrees with what the env's clipping changes
    a = torch.randn(50, 4, 2, generator=torch.Generator().manual_seed(0)) * 2.0
    changed = np.clip(a.numpy(), low, high) != a.numpy()
    assert clipped_share(a, low, high) == pytest.approx(changed.mean(), abs=1e-6)  # 89 of 200


def test_clipped_share_of_no_steps_is_zero():
    assert clipped_share(torch.zeros(0, 3), -np.ones(3), np.ones(3)) == 0.0
