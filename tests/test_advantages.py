import pytest
import torch

from ppo_control.advantages import discounted_returns, gae, group_relative

R = torch.tensor([[1.0], [2.0], [3.0]])
V = torch.tensor([[0.5], [1.0], [1.5]])
NV = torch.tensor([[1.0], [1.5], [2.0]])
F = torch.zeros(3, 1, dtype=torch.bool)


def _flags(t):
    x = torch.zeros(3, 1, dtype=torch.bool)
    x[t] = True
    return x


def test_gae_hand_computed_no_episode_end():
    # deltas: 1 + .9*1 - .5 = 1.4 ; 2 + .9*1.5 - 1 = 2.35 ; 3 + .9*2 - 1.5 = 3.3 ; gamma*lam = .72
    adv, ret = gae(R, V, NV, F, F, gamma=0.9, lam=0.8)
    assert adv[:, 0].tolist() == pytest.approx([1.4 + 0.72 * (2.35 + 0.72 * 3.3), 2.35 + 0.72 * 3.3, 3.3])
    assert torch.allclose(ret, adv + V)


def test_gae_termination_cuts_bootstrap_and_recursion():
    adv, _ = gae(R, V, NV, _flags(1), F, gamma=0.9, lam=0.8)
    # t=1 terminal: delta = 2 - 1 = 1.0, nothing flows back from t=2
    assert adv[:, 0].tolist() == pytest.approx([1.4 + 0.72 * 1.0, 1.0, 3.3])


def test_gae_truncation_bootstraps_from_final_obs_value():
    nv = NV.clone()
    nv[1] = 4.0  # V(final obs) differs from V of the reset obs at t=2 (1.5)
    adv, _ = gae(R, V, nv, F, _flags(1), gamma=0.9, lam=0.8)
    # t=1: delta = 2 + .9*4 - 1 = 4.6, recursion stops at the episode boundary
    assert adv[:, 0].tolist() == pytest.approx([1.4 + 0.72 * 4.6, 4.6, 3.3])


def test_gae_lambda_one_equals_discounted_returns():
    torch.manual_seed(0)
    T, N, g = 7, 3, 0.97
    r, v = torch.randn(T, N), torch.randn(T, N)
    term = torch.zeros(T, N, dtype=torch.bool)
    term[3, 1] = True
    term[-1] = True  # episodes end inside the window: no bootstrap needed anywhere
    nv = torch.cat([v[1:], torch.zeros(1, N)])
    _, ret = gae(r, v, nv, term, torch.zeros_like(term), gamma=g, lam=1.0)
    assert torch.allclose(ret, discounted_returns(r, term, g), atol=1e-5)
    # by hand for env 1, t=2: r2 + g*r3 (episode ends at 3)
    assert ret[2, 1].item() == pytest.approx(r[2, 1].item() + g * r[3, 1].item(), abs=1e-5)


def test_group_normalisation_along_group_axis_only():
    # two groups of 3 with returns on very different scales
    rew = torch.tensor([[1.0, 2.0, 3.0, 1000.0, 5000.0, 9000.0]])
    alive = torch.ones_like(rew, dtype=torch.bool)
    adv, ret, zero = group_relative(rew, alive, group_size=3, gamma=1.0)
    for g in (adv[0, :3], adv[0, 3:]):
        assert g.mean().item() == pytest.approx(0.0, abs=1e-6)
        assert g.std(unbiased=False).item() == pytest.approx(1.0, abs=1e-6)
    assert ret.tolist() == [[1.0, 2.0, 3.0], [1000.0, 5000.0, 9000.0]]
    assert ret.std(1, unbiased=False).tolist() == pytest.approx([(2 / 3) ** 0.5, (32e6 / 3) ** 0.5])
    assert not zero.any()


def test_zero_spread_group_gives_zero_advantage_not_nan():
    rew = torch.tensor([[5.0, 5.0, 1.0, 2.0]])
    adv, _, zero = group_relative(rew, torch.ones_like(rew, dtype=torch.bool), group_size=2)
    assert torch.isfinite(adv).all()
    assert adv[0, :2].tolist() == [0.0, 0.0]
    assert zero.tolist() == [True, False]
    assert adv[0, 2:].tolist() == pytest.approx([-1.0, 1.0])


def test_outcome_advantage_is_constant_over_a_members_steps_and_zero_after_it_ends():
    rew = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    alive = torch.tensor([[True, True], [True, True], [True, False]])
    adv, _, _ = group_relative(rew, alive, group_size=2, gamma=1.0)  # returns 3 and 2
    assert adv[:, 0].tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert adv[:, 1].tolist() == pytest.approx([-1.0, -1.0, 0.0])


def test_per_step_normalises_reward_to_go_over_alive_members():
    rew = torch.tensor([[1.0, 0.0, 2.0], [1.0, 3.0, 0.0], [4.0, 0.0, 0.0]])
    alive = torch.tensor([[True, True, True], [True, True, False], [True, False, False]])
    adv, _, _ = group_relative(rew, alive, group_size=3, gamma=1.0, mode="per_step")
    # t=0 reward-to-go: 6, 3, 2 -> mean 11/3 ; t=1: 5, 3 -> +-1 ; t=2: one member alive -> 0
    x = torch.tensor([6.0, 3.0, 2.0])
    assert adv[0].tolist() == pytest.approx(((x - x.mean()) / x.std(unbiased=False)).tolist(), abs=1e-6)
    assert adv[1].tolist() == pytest.approx([1.0, -1.0, 0.0])
    assert adv[2].tolist() == [0.0, 0.0, 0.0]


def test_leave_one_out_baseline():
    rew = torch.tensor([[1.0, 2.0, 6.0]])
    adv, _, _ = group_relative(rew, torch.ones_like(rew, dtype=torch.bool), group_size=3, leave_one_out=True)
    std = torch.tensor([1.0, 2.0, 6.0]).std(unbiased=False).item()
    assert adv[0].tolist() == pytest.approx([(1 - 4) / std, (2 - 3.5) / std, (6 - 1.5) / std], abs=1e-6)


def test_group_relative_rejects_partial_groups():
    with pytest.raises(ValueError, match="multiple of group_size"):
        group_relative(torch.zeros(2, 5), torch.ones(2, 5, dtype=torch.bool), group_size=2)


def test_batch_scale_keeps_each_groups_spread_and_divides_by_one_rms():
    # two groups of 2, outcome: returns (0, 2) and (10, 30) -> centred (-1, 1), (-10, 10);
    # RMS over the four = sqrt((1 + 1 + 100 + 100) / 4) = sqrt(50.5); "group" gives +-1 in both
    rew = torch.tensor([[0.0, 2.0, 10.0, 30.0]])
    alive = torch.ones_like(rew, dtype=torch.bool)
    adv, _, _ = group_relative(rew, alive, group_size=2, scale="batch")
    r = 50.5 ** 0.5
    assert adv[0].tolist() == pytest.approx([-1 / r, 1 / r, -10 / r, 10 / r], abs=1e-6)
    assert group_relative(rew, alive, group_size=2)[0][0].tolist() == pytest.approx([-1.0, 1.0, -1.0, 1.0])


def test_batch_scale_per_step_uses_one_rms_over_the_alive_member_steps():
    # one group of 3, gamma 1: reward-to-go t=0: 6, 3, 2 (mean 11/3); t=1: 5, 3 (mean 4), third member done;
    # t=2: one member alive -> 0 (and it counts in the RMS as a trained step with advantage 0)
    rew = torch.tensor([[1.0, 0.0, 2.0], [1.0, 3.0, 0.0], [4.0, 0.0, 0.0]])
    alive = torch.tensor([[True, True, True], [True, True, False], [True, False, False]])
    adv, _, _ = group_relative(rew, alive, group_size=3, gamma=1.0, mode="per_step", scale="batch")
    c0 = [6 - 11 / 3, 3 - 11 / 3, 2 - 11 / 3]
    rms = ((sum(c * c for c in c0) + 1 + 1 + 0) / 6) ** 0.5  # 6 alive steps
    assert adv[0].tolist() == pytest.approx([c / rms for c in c0], abs=1e-6)
    assert adv[1].tolist() == pytest.approx([1 / rms, -1 / rms, 0.0], abs=1e-6)
    assert adv[2].tolist() == [0.0, 0.0, 0.0]


def test_batch_scale_zero_spread_group_stays_zero():
    rew = torch.tensor([[5.0, 5.0, 1.0, 3.0]])
    adv, _, zero = group_relative(rew, torch.ones_like(rew, dtype=torch.bool), group_size=2, scale="batch")
    # centred (0, 0), (-1, 1): RMS over four = sqrt(2 / 4)
    assert adv[0].tolist() == pytest.approx([0.0, 0.0, -(2 ** 0.5), 2 ** 0.5])
    assert zero.tolist() == [True, False]
    with pytest.raises(ValueError, match="use group or batch"):
        group_relative(rew, torch.ones_like(rew, dtype=torch.bool), group_size=2, scale="huh")


def test_gae_one_env_equals_the_same_env_inside_a_batch():
    # one env runs a scalar loop; it must give the batched loop's numbers bit for bit
    g = torch.Generator().manual_seed(3)
    r, v, nv = (torch.randn(200, 2, generator=g) for _ in range(3))
    term, trunc = torch.rand(200, 2, generator=g) < 0.05, torch.rand(200, 2, generator=g) < 0.05
    both = gae(r, v, nv, term, trunc, gamma=0.99, lam=0.95)
    one = gae(r[:, :1], v[:, :1], nv[:, :1], term[:, :1], trunc[:, :1], gamma=0.99, lam=0.95)
    assert torch.equal(one[0], both[0][:, :1]) and torch.equal(one[1], both[1][:, :1])
    assert one[0].dtype == torch.float32
