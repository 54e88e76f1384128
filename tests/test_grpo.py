import importlib

import numpy as np
import pytest
import torch

from ppo_control import train
from ppo_control.checkpoint import load_checkpoint
from ppo_control.envs import SnapshotError
from ppo_control.metrics import read_jsonl
from ppo_control.rollout import Batch
from ppo_control.state import TrainState

grpo = importlib.import_module("ppo_control.grpo")


def g_cfg(tiny, **kw):
    base = dict(algo="grpo", env_id="Hopper-v5", group_size=4, num_envs=8, horizon=20, num_minibatches=2,
                update_epochs=1, total_steps=300)
    base.update(kw)
    return tiny(**base)


def _record_starts(monkeypatch):
    seen = []
    real = grpo.collect_groups

    def spy(envs, policy, ref, obs_norm, start_obs, *a, **k):
        seen.append(start_obs.copy())
        return real(envs, policy, ref, obs_norm, start_obs, *a, **k)
    monkeypatch.setattr(grpo, "collect_groups", spy)
    return seen


@pytest.mark.parametrize("source", ["reset", "visited"])
def test_members_share_a_start_state_and_groups_differ(tiny, monkeypatch, source):
    seen = _record_starts(monkeypatch)
    ts = TrainState.build(g_cfg(tiny, start_state=source))
    for _ in range(3):
        stats = grpo.iteration(ts)
    for obs in seen:
        g1, g2 = obs[:4], obs[4:]
        assert (g1 == g1[0]).all() and (g2 == g2[0]).all()  # bit-identical inside a group
        assert not np.array_equal(g1[0], g2[0])               # a different state per group
    assert stats["grpo/member_len_mean"] <= 20                # horizon honoured
    if source == "visited":
        assert len(ts.extra["pool"]) > 0
        # group 1 of later rounds starts from a state visited mid-rollout, not t = 0
        elapsed = [s["elapsed_steps"] for s in ts.extra["pool"]]
        assert max(elapsed) > 0
    ts.envs.close()


def test_each_rollout_weighs_the_same_whatever_its_length():
    lengths = torch.tensor([3.0, 1.0])
    mask = torch.tensor([[True, True], [True, False], [True, False]])
    b = Batch(obs=torch.zeros(3, 2, 1), actions=torch.zeros(3, 2, 1), logprobs=torch.zeros(3, 2),
              rewards=torch.zeros(3, 2), terminated=torch.zeros(3, 2, dtype=torch.bool),
              truncated=torch.zeros(3, 2, dtype=torch.bool), mask=mask, advantages=torch.zeros(3, 2))
    data = grpo._merge([(b, lengths)], members=2)
    w = data["weights"]
    assert w.shape == (4,)  # masked steps dropped
    # member 0: 3 steps of 1/(2*3); member 1: 1 step of 1/(2*1) -> each member sums to 1/G
    assert sorted(w.tolist()) == pytest.approx([1 / 6, 1 / 6, 1 / 6, 1 / 2])
    assert w.sum().item() == pytest.approx(1.0)


def test_reference_policy_refresh(tiny):
    ts = TrainState.build(g_cfg(tiny, ref_update_every=2, kl_coef=0.1))
    init = {k: v.clone() for k, v in ts.ref_policy.state_dict().items()}
    for i in range(2):
        stats = grpo.iteration(ts)
        ts.iteration += 1
        if i == 0:
            assert all(torch.equal(init[k], v) for k, v in ts.ref_policy.state_dict().items())
            assert stats["grpo/kl_ref"] >= 0
    pol = ts.policy.state_dict()
    assert all(torch.equal(pol[k], v) for k, v in ts.ref_policy.state_dict().items())
    ts.envs.close()


def test_grpo_run_logs_group_diagnostics_and_resumes_exactly(tiny, tmp_path, monkeypatch):
    full = train(g_cfg(tiny, run_name="full", start_state="visited", total_steps=400))
    rows = read_jsonl(tmp_path / "full" / "metrics.jsonl")
    for key in ("grpo/group_return_std", "grpo/zero_signal_frac", "grpo/kl_ref", "grpo/adv_std",
                "grpo/group_step_share_max", "losses/clipfrac"):
        assert key in rows[-1], key
    real, calls = grpo.iteration, {"n": 0}

    def cut(ts):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(ts)
    monkeypatch.setattr(grpo, "iteration", cut)
    with pytest.raises(KeyboardInterrupt):
        train(g_cfg(tiny, run_name="cut", start_state="visited", total_steps=400))
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "cut")["iteration"] == 2
    res = train(resume=str(tmp_path / "cut"))
    assert res["global_step"] == full["global_step"]
    a, b = load_checkpoint(tmp_path / "full")["policy"], load_checkpoint(tmp_path / "cut")["policy"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_grpo_needs_a_restorable_env(tiny):
    with pytest.raises(SnapshotError, match="not MuJoCo-based"):
        train(tiny(algo="grpo", env_id="Pendulum-v1", group_size=2, num_envs=2))
