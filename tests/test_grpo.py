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

grpo = importlib.import_module("ppo_control.algorithms.grpo")


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
        stats = ts.algorithm.iteration(ts)
    for obs in seen:
        g1, g2 = obs[:4], obs[4:]
        assert (g1 == g1[0]).all() and (g2 == g2[0]).all()  # bit-identical inside a group
        assert not np.array_equal(g1[0], g2[0])               # a different state per group
    assert stats["grpo/member_len_mean"] <= 20                # horizon honoured
    if source == "visited":
        assert len(ts.algorithm.state.pool) > 0
        # group 1 of later rounds starts from a state visited mid-rollout, not t = 0
        elapsed = [s["elapsed_steps"] for s in ts.algorithm.state.pool]
        assert max(elapsed) > 0
    ts.envs.close()


def test_each_rollout_weighs_the_same_whatever_its_length():
    lengths = torch.tensor([3.0, 1.0])
    mask = torch.tensor([[True, True], [True, False], [True, False]])
    data = grpo._merge([(_weight_batch(mask), lengths)], members=2)
    w = data["weights"]
    assert w.shape == (4,)  # masked steps dropped
    # member 0: 3 steps of 1/(2*3); member 1: 1 step of 1/(2*1) -> each member sums to 1/G
    assert sorted(w.tolist()) == pytest.approx([1 / 6, 1 / 6, 1 / 6, 1 / 2])
    assert w.sum().item() == pytest.approx(1.0)


def _weight_batch(mask):
    T, N = mask.shape
    z = torch.zeros(T, N)
    return Batch(obs=torch.zeros(T, N, 1), actions=torch.zeros(T, N, 1), logprobs=z.clone(), rewards=z.clone(),
                 terminated=torch.zeros(T, N, dtype=torch.bool), truncated=torch.zeros(T, N, dtype=torch.bool),
                 mask=mask, advantages=z.clone())


def test_step_weighting_gives_every_trained_step_the_same_weight_across_rounds():
    # round 1: members of 3 and 1 steps; round 2: members of 2 and 2 steps -> 8 trained steps in all
    r1 = _weight_batch(torch.tensor([[True, True], [True, False], [True, False]]))
    r2 = _weight_batch(torch.tensor([[True, True], [True, True]]))
    data = grpo._merge([(r1, torch.tensor([3.0, 1.0])), (r2, torch.tensor([2.0, 2.0]))], members=4,
                       step_weight="step")
    assert data["weights"].tolist() == pytest.approx([1 / 8] * 8)
    # the default on the same rounds: member 1 of round 1 (1 step) weighs 1/4, the others' steps 1/12 and 1/8
    rollout = grpo._merge([(_weight_batch(r1.mask), torch.tensor([3.0, 1.0])),
                           (_weight_batch(r2.mask), torch.tensor([2.0, 2.0]))], members=4)
    assert sorted(rollout["weights"].tolist()) == pytest.approx(sorted([1 / 12] * 3 + [1 / 4] + [1 / 8] * 4))
    with pytest.raises(ValueError, match="use rollout or step"):
        grpo._merge([(r2, torch.tensor([2.0, 2.0]))], members=2, step_weight="token")


def test_step_and_rollout_weighting_coincide_when_no_member_ends_early():
    mask = torch.ones(4, 4, dtype=torch.bool)
    a = grpo._merge([(_weight_batch(mask), torch.full((4,), 4.0))], members=4, step_weight="step")
    b = grpo._merge([(_weight_batch(mask), torch.full((4,), 4.0))], members=4, step_weight="rollout")
    assert torch.allclose(a["weights"], b["weights"]) and torch.allclose(a["weights"], torch.full((16,), 1 / 16))


@pytest.mark.parametrize("step_weight", ["rollout", "step"])
def test_step_weighting_reaches_the_update(tiny, monkeypatch, step_weight):
    # Hopper with an untrained policy: members fall at different steps within 200, so the weightings differ
    seen = _spy_update(monkeypatch)
    ts = TrainState.build(g_cfg(tiny, horizon=200, grpo_step_weight=step_weight))
    stats = ts.algorithm.iteration(ts)
    w = seen[0]["weights"]
    assert stats["grpo/trained_samples"] == w.numel() and w.sum().item() == pytest.approx(1.0)
    uniform = torch.allclose(w, torch.full_like(w, 1 / w.numel()))
    assert uniform == (step_weight == "step")
    ts.envs.close()


@pytest.mark.parametrize("vectorization", ["sync", "batched"])
def test_frozen_ended_members_change_no_training_data_only_the_simulation(tiny, monkeypatch, vectorization):
    # Hopper with an untrained policy: members fall at different steps within 200, and a fallen member's env
    # idles (freeze) or runs on and autoresets (off) until its group's longest member ends
    out = {}
    for freeze in (False, True):
        seen = _spy_update(monkeypatch)
        ts = TrainState.build(g_cfg(tiny, horizon=200, grpo_freeze_ended=freeze, vectorization=vectorization))
        stats = ts.algorithm.iteration(ts)
        out[freeze] = seen[0], stats, {k: v.clone() for k, v in ts.policy.state_dict().items()}
        ts.envs.close()
        monkeypatch.undo()
    (d0, s0, p0), (d1, s1, p1) = out[False], out[True]
    assert d0.keys() == d1.keys()
    for k in d0:  # every trained step, advantage and weight is the same, and so is the update
        assert (d0[k] is None and d1[k] is None) or torch.equal(d0[k], d1[k]), k
    assert all(torch.equal(p0[k], p1[k]) for k in p0)
    assert s0["charts/steps_this_iter"] == s1["charts/steps_this_iter"]
    assert s0["grpo/wasted_step_frac"] > 0.1 and s1["grpo/wasted_step_frac"] == 0.0  # nothing simulated for nobody


def test_runs_saved_before_freeze_ended_existed_resume_as_they_ran(tiny, tmp_path):
    from ppo_control.checkpoint import save_checkpoint
    from ppo_control.config import Config
    from ppo_control.train import resume_config
    train(g_cfg(tiny, run_name="old", total_steps=60))
    ckpt = tmp_path / "old" / "checkpoint.pt"
    st = load_checkpoint(ckpt)
    assert st["config"]["grpo_freeze_ended"] is True  # today's default for a new run
    del st["config"]["grpo_freeze_ended"]            # a checkpoint written before the option
    save_checkpoint(ckpt, st)
    assert resume_config(tmp_path / "old", {}).grpo_freeze_ended is False
    assert Config.from_dict({k: v for k, v in st["config"].items()}).grpo_freeze_ended is True


def test_reference_policy_refresh(tiny):
    ts = TrainState.build(g_cfg(tiny, ref_update_every=2, kl_coef=0.1))
    init = {k: v.clone() for k, v in ts.algorithm.ref_policy.state_dict().items()}
    for i in range(2):
        stats = ts.algorithm.iteration(ts)
        ts.iteration += 1
        if i == 0:
            assert all(torch.equal(init[k], v) for k, v in ts.algorithm.ref_policy.state_dict().items())
            assert stats["grpo/kl_ref"] >= 0
    pol = ts.policy.state_dict()
    assert all(torch.equal(pol[k], v) for k, v in ts.algorithm.ref_policy.state_dict().items())
    ts.envs.close()


def test_grpo_run_logs_group_diagnostics_and_resumes_exactly(tiny, tmp_path, monkeypatch):
    full = train(g_cfg(tiny, run_name="full", start_state="visited", total_steps=400))
    rows = read_jsonl(tmp_path / "full" / "metrics.jsonl")
    for key in ("grpo/group_return_std", "grpo/zero_signal_frac", "grpo/kl_ref", "grpo/adv_std",
                "grpo/group_step_share_max", "losses/clipfrac", "policy/action_clip_frac"):
        assert key in rows[-1], key
    real, calls = grpo.GRPO.iteration, {"n": 0}

    def cut(self, ts):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, ts)
    monkeypatch.setattr(grpo.GRPO, "iteration", cut)
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


# ---- issue 12: branch (vine) starts, common random numbers, trained steps ----------------------------

from ppo_control.advantages import group_relative, within_group_share  # noqa: E402
from ppo_control.config import ConfigError, GRPO_EVAL_INTERVAL, make_config  # noqa: E402
from ppo_control.rollout import collect_groups  # noqa: E402


def _spy_collect(monkeypatch):
    """Record, for every round, the envs' snapshots at the start and at the end of collect_groups."""
    rounds = []
    real = grpo.collect_groups

    def spy(envs, *a, **k):
        start = envs.get_snapshots()
        out = real(envs, *a, **k)
        rounds.append((start, envs.get_snapshots(), k.get("crn")))
        return out
    monkeypatch.setattr(grpo, "collect_groups", spy)
    return rounds


@pytest.mark.parametrize("vectorization", ["sync", "batched"])
def test_branch_members_start_in_the_trunk_state_and_trunks_continue_on(tiny, monkeypatch, vectorization):
    rounds = _spy_collect(monkeypatch)
    ts = TrainState.build(g_cfg(tiny, start_state="branch", vectorization=vectorization))
    for _ in range(3):
        ts.algorithm.iteration(ts)
    for r, (start, end, _) in enumerate(rounds):
        phys = [s["physics"] for s in start]
        for k in range(2):  # 8 envs = 2 groups of 4: bit-identical full MuJoCo state inside a group
            assert all(np.array_equal(phys[4 * k], p) for p in phys[4 * k:4 * k + 4])
            assert all(np.array_equal(start[4 * k]["obs"], s["obs"]) for s in start[4 * k:4 * k + 4])
        assert not np.array_equal(phys[0], phys[4])
        if r > 0:  # each trunk goes on from where one of its own group's members stood after the last round
            prev_end = [s["physics"] for s in rounds[r - 1][1]]
            for k in range(2):
                assert any(np.array_equal(phys[4 * k], p) for p in prev_end[4 * k:4 * k + 4])
    assert [s["elapsed_steps"] for s in rounds[0][0]] == [0] * 8  # first round: the seeded resets
    assert max(s["elapsed_steps"] for s in rounds[-1][0]) > 0     # later: mid-episode states
    ts.envs.close()


def _noise(policy, batch):
    """eps_t = (a_t - mu(s_t)) / std recovered from a rollout, [T, N, A]."""
    with torch.no_grad():
        return (batch.actions - policy.mean_net(batch.obs)) / policy.std()


@pytest.mark.parametrize("crn", [False, True])
def test_crn_members_share_the_noise_after_their_own_branch_action(tiny, crn):
    ts = TrainState.build(g_cfg(tiny, env_id="HalfCheetah-v5", num_envs=6, group_size=3, vectorization="batched"))
    obs0 = ts.envs.set_snapshots([ts.envs.get_snapshots()[3 * (i // 3)] for i in range(6)], restore_rng=False)
    gr = collect_groups(ts.envs, ts.policy, None, ts.obs_norm, obs0, 5, ts.device, rng=np.random.default_rng(0),
                        group_size=3, crn=crn)
    eps = _noise(ts.policy, gr.batch)  # [5, 6, A]
    same = lambda t, i, j: torch.allclose(eps[t, i], eps[t, j], atol=1e-5)  # noqa: E731
    assert not same(0, 0, 1) and not same(0, 3, 4)           # branch actions: each member's own draw
    for t in range(1, 5):
        assert same(t, 0, 1) == same(t, 1, 2) == same(t, 3, 5) == crn  # shared inside a group iff CRN
        assert not same(t, 0, 3)                                     # never across groups
    ts.envs.close()


class _SharedFirstDraw:
    """A numpy Generator whose draws for all N members are shared per group (also at t = 0)."""

    def __init__(self, n, g):
        self.rng, self.n, self.g = np.random.default_rng(0), n, g

    def standard_normal(self, shape, dtype):
        if shape[0] == self.n:
            return np.repeat(self.rng.standard_normal((self.n // self.g, shape[1]), dtype=dtype), self.g, axis=0)
        return self.rng.standard_normal(shape, dtype=dtype)


def test_identical_states_and_common_noise_give_identical_actions_and_trajectories(tiny):
    # 8 envs: BLAS computes every row of a batch alike when N is a multiple of 4 (here: a remainder
    # row, e.g. the 5th and 6th of 6, can differ from the others in the last bit)
    ts = TrainState.build(g_cfg(tiny, env_id="HalfCheetah-v5", vectorization="batched"))
    obs0 = ts.envs.set_snapshots([ts.envs.get_snapshots()[4 * (i // 4)] for i in range(8)], restore_rng=False)
    gr = collect_groups(ts.envs, ts.policy, None, ts.obs_norm, obs0, 30, ts.device, rng=_SharedFirstDraw(8, 4),
                        group_size=4, crn=True)
    b = gr.batch
    for k in range(2):
        m = slice(4 * k, 4 * k + 4)
        assert (b.actions[:, m] == b.actions[:, 4 * k:4 * k + 1]).all()  # identical states -> identical actions
        assert (b.rewards[:, m] == b.rewards[:, 4 * k:4 * k + 1]).all()  # ... and bit-identical trajectories
    snaps = ts.envs.get_snapshots()
    assert all(np.array_equal(snaps[0]["physics"], snaps[i]["physics"]) for i in range(4))
    assert not np.array_equal(b.actions[:, 0], b.actions[:, 4])
    ts.envs.close()


def test_actor_uses_the_noise_it_is_given_on_both_paths():
    from ppo_control.inference import Actor
    from ppo_control.networks import make_policy
    pol = make_policy(make_config("default", init_log_std=-0.7), 3, 2)
    obs = np.ones((2, 3), np.float32)  # identical states
    eps = np.array([[0.5, -1.0], [0.5, -1.0]], np.float32)
    a = Actor(pol, torch.device("cpu"), np.random.default_rng(0))
    fast = a.sample(obs, eps)
    a.mean = None  # the torch path (used off the CPU / for untranslatable networks)
    slow = a.sample(obs, eps)
    with torch.no_grad():
        want = (pol.mean_net(torch.from_numpy(obs)) + pol.std() * torch.from_numpy(eps)).numpy()
    assert np.array_equal(fast[0], fast[1]) and np.allclose(fast, want, atol=1e-6)
    assert np.allclose(slow, want, atol=1e-6)


def test_within_group_share_hand_computed():
    # groups {1, 3} and {5, 7}: within-group variance 1 each, total variance of {1, 3, 5, 7} = 5
    assert within_group_share(torch.tensor([[1.0, 3.0], [5.0, 7.0]])) == pytest.approx(0.2)
    assert within_group_share(torch.tensor([[1.0, 3.0], [1.0, 3.0]])) == pytest.approx(1.0)  # same states
    assert within_group_share(torch.tensor([[2.0, 2.0], [4.0, 4.0]])) == 0.0  # the states explain all
    assert within_group_share(torch.full((2, 2), 3.0)) == 0.0


def test_per_step_baseline_is_taken_per_time_step_inside_each_group():
    # two groups of 2, three steps; group 2's rewards are 100x larger: each (t, group) is normalised alone
    rew = torch.tensor([[1.0, 3.0, 100.0, 300.0], [2.0, 0.0, 200.0, 0.0], [0.0, 1.0, 0.0, 100.0]])
    adv, _, _ = group_relative(rew, torch.ones(3, 4, dtype=torch.bool), 2, gamma=1.0, mode="per_step")
    # reward-to-go: t0 (3, 4 | 300, 400), t1 (2, 1 | 200, 100), t2 (0, 1 | 0, 100)
    want = torch.tensor([[-1.0, 1.0, -1.0, 1.0], [1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, -1.0, 1.0]])
    assert torch.allclose(adv, want, atol=1e-6)


def _spy_update(monkeypatch):
    seen = []
    real = grpo.update

    def spy(policy, critic, opt, data, *a, **k):
        seen.append({key: (v.clone() if v is not None else None) for key, v in data.items()})
        return real(policy, critic, opt, data, *a, **k)
    monkeypatch.setattr(grpo, "update", spy)
    return seen


@pytest.mark.parametrize("adv_mode", ["outcome", "per_step"])
def test_train_steps_branch_trains_each_members_first_action_with_its_outcome_advantage(tiny, monkeypatch, adv_mode):
    seen, rounds = _spy_update(monkeypatch), []
    real = grpo.collect_groups
    monkeypatch.setattr(grpo, "collect_groups", lambda *a, **k: rounds.append(real(*a, **k)) or rounds[-1])
    ts = TrainState.build(g_cfg(tiny, env_id="HalfCheetah-v5", start_state="branch", crn=True, groups_per_iter=2,
                                grpo_train_steps="branch", grpo_advantage=adv_mode))
    stats = ts.algorithm.iteration(ts)
    d = seen[0]
    assert d["advantages"].shape == (16,) and stats["grpo/trained_samples"] == 16  # 2 rounds x 8 members
    first = torch.cat([r.batch.obs[0] for r in rounds])
    assert torch.equal(d["obs"], first)  # only the t = 0 (branch) steps
    alive = [torch.arange(r.batch.rewards.shape[0])[:, None] < torch.from_numpy(r.lengths)[None] for r in rounds]
    want = torch.cat([group_relative(r.batch.rewards, a, 4, ts.cfg.gamma, "outcome")[0][0]
                      for r, a in zip(rounds, alive)])
    assert torch.allclose(d["advantages"], want, atol=1e-6)
    assert torch.allclose(d["weights"], torch.full((16,), 1 / 16))
    assert stats["charts/steps_this_iter"] == 2 * 8 * 20  # every simulated step counts as used
    assert stats["grpo/branch_spread_share"] == stats["grpo/within_group_share"]
    ts.envs.close()


def test_branch_spread_share_is_logged_only_with_crn(tiny):
    ts = TrainState.build(g_cfg(tiny, start_state="branch"))
    stats = ts.algorithm.iteration(ts)
    assert "grpo/branch_spread_share" not in stats and 0.0 < stats["grpo/within_group_share"] < 1.0
    ts.envs.close()


@pytest.mark.parametrize("vectorization", ["sync", "batched"])
def test_branch_crn_run_resumes_exactly(tiny, tmp_path, monkeypatch, vectorization):
    """The trunk states (GRPOState) and the noise stream (np_rng) survive a Ctrl-C mid-iteration."""
    kw = dict(start_state="branch", crn=True, total_steps=480, vectorization=vectorization)
    full = train(g_cfg(tiny, run_name="full", **kw))
    cls = type(TrainState.build(g_cfg(tiny, vectorization=vectorization)).envs)
    real, calls = cls.step, {"n": 0}

    def step(self, actions, *a):
        calls["n"] += 1
        if calls["n"] == 2 * 20 + 7:  # inside the third iteration's rollout
            raise KeyboardInterrupt
        return real(self, actions, *a)
    monkeypatch.setattr(cls, "step", step)
    with pytest.raises(KeyboardInterrupt):
        train(g_cfg(tiny, run_name="cut", **kw))
    monkeypatch.undo()
    st = load_checkpoint(tmp_path / "cut")
    assert st["iteration"] == 2 and len(st["algorithm"]["trunk"]) == 2
    res = train(resume=str(tmp_path / "cut"))
    assert res["global_step"] == full["global_step"]
    a, b = load_checkpoint(tmp_path / "full"), load_checkpoint(tmp_path / "cut")
    assert all(torch.equal(a["policy"][k], b["policy"][k]) for k in a["policy"])
    assert all(torch.equal(x["physics"], y["physics"]) for x, y in zip(a["algorithm"]["trunk"], b["algorithm"]["trunk"]))
    rows_full = read_jsonl(tmp_path / "full" / "metrics.jsonl")
    rows_res = read_jsonl(tmp_path / "cut" / "metrics.jsonl")
    assert [r["losses/policy_loss"] for r in rows_res] == [r["losses/policy_loss"] for r in rows_full]


def test_short_horizon_summary_falls_back_to_evaluation(tiny, tmp_path):
    """With H below the episode length no training episode ends: final_return comes from an evaluation."""
    s = train(g_cfg(tiny, env_id="HalfCheetah-v5", start_state="branch", run_name="a", total_steps=160))
    assert np.isfinite(s["final_return"]) and s["final_return_source"] == "final_eval"
    s = train(g_cfg(tiny, env_id="HalfCheetah-v5", start_state="branch", run_name="b", total_steps=160,
                    eval_episodes=1))
    assert s["final_return"] == s["eval_return"] and s["final_return_source"] == "final_eval"
    s = train(g_cfg(tiny, env_id="HalfCheetah-v5", start_state="branch", run_name="c", total_steps=320,
                    eval_interval=160, eval_interval_episodes=1))
    evals = [r["eval/return"] for r in read_jsonl(tmp_path / "c" / "metrics.jsonl") if np.isfinite(r["eval/return"])]
    assert s["final_return"] == evals[-1] and s["final_return_source"] == "periodic_eval"
    s = train(g_cfg(tiny, run_name="d", total_steps=160, horizon=None))  # whole Hopper episodes (it falls soon)
    assert s["final_return_source"] == "training_episodes"


def test_grpo_options_help_validation_and_defaults():
    from ppo_control.config import Config
    import dataclasses
    fields = {f.name: f for f in dataclasses.fields(Config)}
    for name in ("crn", "grpo_train_steps", "start_state"):
        assert fields[name].metadata["help"].startswith("GRPO")
    assert "branch" in fields["start_state"].metadata["choices"]
    with pytest.raises(ConfigError, match="raise --groups-per-iter or lower --num-minibatches"):
        make_config("default", algo="grpo", group_size=8, num_envs=16, grpo_train_steps="branch")
    make_config("default", algo="grpo", group_size=8, num_envs=16, grpo_train_steps="branch", groups_per_iter=2)
    with pytest.raises(ConfigError, match="grpo_train_steps='every' is not one of"):
        make_config("default", algo="grpo", grpo_train_steps="every")
    # GRPO evaluates every 50k steps unless told otherwise (its short rollouts finish no episode); PPO does not
    assert make_config("default", algo="grpo").eval_interval == GRPO_EVAL_INTERVAL == 50_000
    assert make_config("default", algo="grpo", eval_interval=0).eval_interval == 0
    assert make_config("default").eval_interval == 0


def test_branch_trunks_are_whole_episodes_for_the_training_curve(tiny):
    """InvertedPendulum-v5 pays 1 per step and 0 on the step the pole falls, so an episode that ends by
    falling has return = length - 1; each trunk's running length must equal its env's own step
    counter (the stitching loses and adds no step)."""
    ts = TrainState.build(g_cfg(tiny, env_id="InvertedPendulum-v5", start_state="branch", horizon=20))
    episodes = []
    for _ in range(6):
        ts.algorithm.iteration(ts)
        episodes += ts.rollout.drain_episodes()
        x = ts.algorithm.state
        assert [s["elapsed_steps"] for s in x.trunk] == x.trunk_length.tolist()
        assert x.trunk_return.tolist() == x.trunk_length.astype(float).tolist()
    assert len(episodes) >= 4 and all(r == n - 1 for r, n in episodes)
    ts.envs.close()


@pytest.mark.parametrize("horizon, counted", [(20, False), (None, True)])
def test_member_episodes_count_only_where_the_horizon_cannot_cut_them(tiny, horizon, counted):
    """With H below the episode length only the members that fail early would end: counting them would
    make a curve of failures, so short-horizon reset/visited runs report no training episodes."""
    ts = TrainState.build(g_cfg(tiny, env_id="InvertedPendulum-v5", start_state="reset", horizon=horizon))
    ts.algorithm.iteration(ts)
    assert (len(ts.rollout.drain_episodes()) > 0) == counted
    ts.envs.close()


def test_the_progress_bar_shows_a_finite_return_for_short_horizon_grpo(tiny, monkeypatch):
    """H 20 on InvertedPendulum ends no training episode (the curve comes from evaluation), so the bar shows
    the members' mean return over their rollouts: their length where every step pays 1 and a fall pays 0."""
    train_mod = importlib.import_module("ppo_control.train")
    shown = []

    class Bar:
        def __init__(self, *a, **k):
            pass

        def update(self, n, ret, sps):
            shown.append(ret)

        def close(self):
            pass
    monkeypatch.setattr(train_mod, "Progress", Bar)
    train(g_cfg(tiny, env_id="InvertedPendulum-v5", start_state="reset", total_steps=200))
    rows = read_jsonl(tiny().out_dir + "/run/metrics.jsonl")
    assert len(shown) == len(rows) >= 2
    assert all(r["charts/episodic_return"] is None for r in rows)  # NaN is written as null
    assert shown == [r["grpo/group_return_mean"] for r in rows]
    assert all(0 < x <= 20 for x in shown)
