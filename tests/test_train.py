import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import importlib
from ppo_control import CheckpointError, load_policy, train
from ppo_control.checkpoint import load_checkpoint
from ppo_control.envs import VecEnv
from ppo_control.envs.batched import BatchedMujocoVecEnv
from ppo_control.metrics import read_jsonl
from ppo_control.rundir import RunDirError
from ppo_control.update import NonFiniteError

train_mod = importlib.import_module("ppo_control.train")


def _params(run_dir):
    return load_checkpoint(run_dir)["policy"]


def test_same_seed_gives_identical_parameters(tiny):
    a = train(tiny(run_name="a"))
    b = train(tiny(run_name="b"))
    c = train(tiny(run_name="c", seed=2))
    pa, pb, pc = _params(a["run_dir"]), _params(b["run_dir"]), _params(c["run_dir"])
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert not all(torch.equal(pa[k], pc[k]) for k in pa)


def test_outputs_and_checkpoint_round_trip(tiny, tmp_path):
    s = train(tiny(tensorboard=True, eval_episodes=2))
    run = tmp_path / "run"
    for f in ("config.json", "metrics.jsonl", "checkpoint.pt", "eval.json", "summary.json"):
        assert (run / f).exists(), f
    assert not (run / "metrics.csv").exists()  # one metrics format per run
    assert list((run / "tb").iterdir())
    cfgj = json.loads((run / "config.json").read_text())
    assert cfgj["config"]["env_id"] == "InvertedPendulum-v5" and "torch" in cfgj["environment"]
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["iteration"] for r in rows] == [1, 2]
    for key in ("charts/episodic_return", "charts/SPS", "losses/policy_loss", "losses/value_loss",
                "losses/entropy", "losses/approx_kl", "losses/clipfrac", "losses/explained_variance",
                "losses/dual_clip_frac", "policy/std_mean", "policy/action_clip_frac"):
        assert key in rows[-1], key
    t = rows[-1]  # where the iteration's time went: both phases timed, together within the wall time
    assert t["time/collect_s"] > 0 and t["time/update_s"] > 0
    assert t["time/collect_s"] + t["time/update_s"] <= t["wall_time"]  # seconds, inside the run's clock
    st = load_checkpoint(run)
    assert st["global_step"] == 256 and st["iteration"] == 2
    pol = load_policy(run)
    a = pol(np.zeros(4))
    assert a.shape == (1,) and -3 <= a[0] <= 3
    assert pol(np.zeros((5, 4))).shape == (5, 1)
    assert s["eval_return"] == pytest.approx(json.loads((run / "eval.json").read_text())["mean_return"])


def _interrupt_env_step_after(monkeypatch, cls, n):
    real, calls = cls.step, {"n": 0}

    def step(self, actions):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real(self, actions)
    monkeypatch.setattr(cls, "step", step)


@pytest.mark.parametrize("vectorization", ["sync", "batched"])
def test_interrupted_run_resumes_exactly(tiny, tmp_path, monkeypatch, vectorization):
    full = train(tiny(run_name="full", total_steps=512, vectorization=vectorization))
    cls = VecEnv if vectorization == "sync" else BatchedMujocoVecEnv
    _interrupt_env_step_after(monkeypatch, cls, 64 * 2 + 30)  # Ctrl-C in the middle of iteration 3
    with pytest.raises(KeyboardInterrupt):
        train(tiny(run_name="cut", total_steps=512, vectorization=vectorization))
    monkeypatch.undo()
    st = load_checkpoint(tmp_path / "cut")
    assert st["iteration"] == 2 and st["global_step"] == 256
    resumed = train(resume=str(tmp_path / "cut"))
    assert resumed["global_step"] == full["global_step"] == 512
    pf, pr = _params(full["run_dir"]), _params(resumed["run_dir"])
    assert all(torch.equal(pf[k], pr[k]) for k in pf)
    rows_full = read_jsonl(tmp_path / "full" / "metrics.jsonl")
    rows_res = read_jsonl(tmp_path / "cut" / "metrics.jsonl")
    assert [r["iteration"] for r in rows_res] == [1, 2, 3, 4]
    assert [r["losses/policy_loss"] for r in rows_res] == [r["losses/policy_loss"] for r in rows_full]


def test_interrupt_after_an_iterations_row_keeps_that_iteration(tiny, tmp_path, monkeypatch):
    """A stop (Ctrl-C, SIGTERM) that lands after iteration 3's metrics row is written: the checkpoint
    holds iteration 3 too, so the run dir is consistent without a resume, and resuming changes nothing."""
    from ppo_control.metrics import Progress
    real, calls = Progress.update, {"n": 0}

    def update(self, *a, **kw):
        calls["n"] += 1
        real(self, *a, **kw)
        if calls["n"] == 3:
            raise KeyboardInterrupt
    monkeypatch.setattr(Progress, "update", update)
    with pytest.raises(KeyboardInterrupt):
        train(tiny(run_name="cut", total_steps=512))
    monkeypatch.undo()
    rows = read_jsonl(tmp_path / "cut" / "metrics.jsonl")
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    assert load_checkpoint(tmp_path / "cut")["iteration"] == 3
    full = train(tiny(run_name="full", total_steps=512))
    train(resume=str(tmp_path / "cut"))
    pf, pr = _params(full["run_dir"]), _params(tmp_path / "cut")
    assert all(torch.equal(pf[k], pr[k]) for k in pf)
    assert [r["losses/policy_loss"] for r in read_jsonl(tmp_path / "cut" / "metrics.jsonl")] == \
        [r["losses/policy_loss"] for r in read_jsonl(tmp_path / "full" / "metrics.jsonl")]


def test_existing_run_dir_needs_resume(tiny):
    train(tiny())
    with pytest.raises(RunDirError, match="--resume"):
        train(tiny())


def test_corrupted_checkpoint_is_a_clear_error(tiny, tmp_path):
    train(tiny())
    ck = tmp_path / "run" / "checkpoint.pt"
    ck.write_bytes(ck.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="corrupted"):
        train(resume=str(tmp_path / "run"))
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_policy(tmp_path / "nowhere")


def test_mismatched_checkpoint_is_a_clear_error(tiny, tmp_path):
    train(tiny())
    st = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    st["policy"]["mean_net.0.weight"] = torch.zeros(3, 3)
    torch.save(st, tmp_path / "run" / "checkpoint.pt")
    with pytest.raises(CheckpointError, match="policy .* does not match"):
        load_policy(tmp_path / "run")


def test_non_finite_parameters_stop_the_run_and_keep_the_last_good_checkpoint(tiny, tmp_path, monkeypatch):
    import ppo_control.algorithms.ppo as ppo_mod
    real, calls = ppo_mod.update, {"n": 0}

    def poisoned(policy, *a, **k):
        out = real(policy, *a, **k)
        calls["n"] += 1
        if calls["n"] == 2:
            with torch.no_grad():
                policy.log_std.fill_(float("nan"))
        return out
    monkeypatch.setattr(ppo_mod, "update", poisoned)
    with pytest.raises(NonFiniteError, match="non-finite.*last good state \\(iteration 1\\)"):
        train(tiny(total_steps=512))
    st = load_checkpoint(tmp_path / "run")
    assert st["iteration"] == 1 and torch.isfinite(st["policy"]["log_std"]).all()


def test_target_kl_stops_the_epochs_after_the_first_minibatch_that_exceeds_it(tiny):
    # (the dual clip's values and gradients: tests/test_update.py, by hand)
    s = train(tiny(dual_clip=3.0, target_kl=1e-6, clip_vloss=True))
    rows = read_jsonl(f"{s['run_dir']}/metrics.jsonl")
    # the first minibatch starts at ratio 1 (KL 0), its step moves the policy, so the KL measured at the second
    # minibatch exceeds 1e-6 and the update stops in its first epoch; every iteration alike
    assert [(r["losses/early_stop"], r["losses/epochs"]) for r in rows] == [(1.0, 1), (1.0, 1)]


@pytest.mark.slow
def test_cli_train_eval_and_bad_input(tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "ppo_control", *args], capture_output=True, text=True,
                              timeout=300)
    r = cli("train", "--env-id", "InvertedPendulum-v5", "--total-steps", "256", "--num-envs", "2",
            "--num-steps", "64", "--num-minibatches", "4", "--update-epochs", "1", "--eval-episodes", "1",
            "--no-progress", "--no-tensorboard", "--out-dir", str(tmp_path), "--run-name", "cli")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["global_step"] == 256
    r = cli("eval", str(tmp_path / "cli"), "--episodes", "2")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["returns"]) == 2
    r = cli("train", "--env-id", "CartPole-v1", "--no-progress", "--out-dir", str(tmp_path))
    assert r.returncode == 2 and "continuous Box" in r.stderr
    r = cli("train", "--num-minibatches", "7", "--out-dir", str(tmp_path))
    assert r.returncode == 2 and "must divide the batch size" in r.stderr
    r = cli("train", "--help")
    assert r.returncode == 0 and "--dual-clip" in r.stdout and "--gae-lambda" in r.stdout


def test_periodic_evaluation_logged_on_a_step_grid(tiny):
    s = train(tiny(total_steps=512, eval_interval=200, eval_interval_episodes=1))
    rows = read_jsonl(f"{s['run_dir']}/metrics.jsonl")
    evals = [r["eval/return"] for r in rows]
    # iterations end at steps 128, 256, 384, 512: 200 is crossed in iteration 2, 400 in iteration 4
    assert [e is not None for e in evals] == [False, True, False, True]
    assert all(e > 0 for e in evals if e is not None)


def test_a_repeated_stop_signal_is_the_same_stop_until_the_window_passes(monkeypatch):
    """timeout / kill -- -PGID deliver SIGTERM twice, a runner forwards SIGINT after a terminal's Ctrl-C:
    the repeat must not raise into the checkpoint save the first one started; a later one does."""
    import os
    import signal
    tr = importlib.import_module("ppo_control.train")  # the package exports a function of that name
    clock = [100.0]
    monkeypatch.setattr(tr.time, "monotonic", lambda: clock[0])
    with tr.stop_signals_as_interrupt():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
        clock[0] += tr.DUPLICATE_STOP_S - 1  # the same stop: ignored, by either signal
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        with tr.stop_signals_as_interrupt():  # nested (a job around train): shares the stop
            os.kill(os.getpid(), signal.SIGTERM)
        clock[0] += 2  # past the window: someone insisting
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    with tr.stop_signals_as_interrupt():  # a new outermost use starts a new stop
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped interrupt, on purpose
def test_a_stop_swallowed_by_a_finaliser_still_stops_at_the_next_iteration(tiny, tmp_path, monkeypatch):
    """Python raises a signal's KeyboardInterrupt in whatever runs at that instant; inside a finaliser
    (run by the GC, e.g. during torch.compile) it is printed and dropped. The run must stop anyway, at
    the next iteration boundary, with its checkpoint; without the check it trained on to the end."""
    import gc
    import os
    import signal
    real, calls = train_mod._iteration, {"n": 0}

    class StopsInDel:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises here, and Python drops it

    def iteration(ts):
        calls["n"] += 1
        out = real(ts)
        if calls["n"] == 2:
            StopsInDel()
            gc.collect()
        return out
    monkeypatch.setattr(train_mod, "_iteration", iteration)
    with pytest.raises(KeyboardInterrupt):
        train(tiny(run_name="lost", total_steps=1024))  # 8 iterations if nothing stopped it
    assert calls["n"] == 2
    assert [r["iteration"] for r in read_jsonl(tmp_path / "lost" / "metrics.jsonl")] == [1, 2]
    assert load_checkpoint(tmp_path / "lost")["iteration"] == 2


OLD_RUNS = Path(__file__).parent / "data" / "old_runs"  # written by tests/data/make_old_runs.py at 190f9f7


@pytest.mark.parametrize("name", ["ppo", "grpo_visited"])
def test_a_checkpoint_of_the_previous_format_resumes_as_the_code_that_wrote_it_continued(tmp_path, name):
    """Format-1 checkpoints (GRPO's reference policy and start-state pool outside the algorithm's state)
    resume and end at the parameters the code that wrote them reached from the same checkpoint: bit for bit
    on the CPU model that wrote them (an Intel Xeon with AVX-512), within float rounding on another (an AMD
    EPYC differs by <= 1.5e-8 where the resumed iterations move each parameter by ~1e-3; a wrong resume
    misses by that much)."""
    run = tmp_path / name
    shutil.copytree(OLD_RUNS / name, run)
    assert torch.load(run / "checkpoint.pt", weights_only=True)["format"] == "ppo_control/checkpoint-v1"
    train(resume=str(run), command=["test"])
    st, expect = load_checkpoint(run), torch.load(OLD_RUNS / "expected.pt", weights_only=True)[name]
    assert (st["iteration"], st["global_step"]) == (expect["iteration"], expect["global_step"])
    assert st["format"] == "ppo_control/checkpoint-v2"
    ref = st["algorithm"].get("ref_policy")
    for key, got in (("policy", st["policy"]), ("critic", st["critic"]), ("ref_policy", ref)):
        assert (got is None) == (expect[key] is None), key
        for k, v in (expect[key] or {}).items():
            torch.testing.assert_close(got[k], v, rtol=0, atol=1e-6, msg=f"{key}.{k}")
    if name == "grpo_visited":
        assert len(st["algorithm"]["pool"]) > len(torch.load(OLD_RUNS / name / "checkpoint.pt",
                                                            weights_only=True)["extra"]["pool"])


def test_resuming_a_finished_run_says_so_in_one_line_and_does_not_evaluate_again(tiny, tmp_path, capsys,
                                                                                monkeypatch):
    first = train(tiny(eval_episodes=1))
    before = {f: (tmp_path / "run" / f).read_bytes() for f in ("checkpoint.pt", "config.json", "metrics.jsonl")}
    capsys.readouterr()
    monkeypatch.setattr(train_mod, "evaluate", lambda *a, **k: pytest.fail("evaluated again"))
    again = train(resume=str(tmp_path / "run"))
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ppo-control: {tmp_path / 'run'} is finished (256 steps, total_steps 256); extend it with "
                   f"`ppo-control train --resume {tmp_path / 'run'} --total-steps 512`"]
    assert again == first
    assert before == {f: (tmp_path / "run" / f).read_bytes() for f in before}


def test_extending_an_annealed_run_prints_the_learning_rate_jump(tiny, tmp_path, capsys):
    train(tiny())  # 256 steps: anneal_lr has decayed the lr to 0 at the end
    capsys.readouterr()
    train(resume=str(tmp_path / "run"), changes={"total_steps": 512})
    err = capsys.readouterr().err
    # lr 3e-4 * (1 - 256/256) = 0 before; 3e-4 * (1 - 256/512) = 1.5e-4 after
    assert ("--total-steps 512 stretches anneal_lr's decay over the longer run: at step 256 the learning rate goes "
            "from 0 to 0.00015, then decays linearly to 0 at step 512") in err
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert rows[2]["charts/learning_rate"] == pytest.approx(1.5e-4)


@pytest.mark.parametrize("env_id, vectorization, used", [("Pendulum-v1", "batched", "sync"),
                                                         ("InvertedPendulum-v5", "batched", "batched"),
                                                         ("InvertedPendulum-v5", "sync", "sync")])
def test_config_json_records_the_vectorization_in_use(tiny, tmp_path, env_id, vectorization, used):
    train(tiny(env_id=env_id, vectorization=vectorization, total_steps=128))
    record = json.loads((tmp_path / "run" / "config.json").read_text())
    assert record["vectorization"] == used and record["config"]["vectorization"] == vectorization


def test_a_full_disk_during_a_checkpoint_write_is_one_line_and_keeps_the_last_checkpoint(tiny, tmp_path,
                                                                                        monkeypatch):
    import errno
    import os
    import ppo_control.algorithms.ppo as ppo_mod
    real_fdopen, real_iteration = os.fdopen, ppo_mod.PPO.iteration

    class FullDisk:  # a file on a disk that fills up after the first 1000 bytes
        def __init__(self, f):
            self.f, self.n = f, 0

        def write(self, b):
            self.n += len(b)
            if self.n > 1000:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(b)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

    def iteration(self, ts):  # the disk fills up during the second iteration
        if ts.iteration == 1:
            monkeypatch.setattr(os, "fdopen", lambda *a, **k: FullDisk(real_fdopen(*a, **k)))
        return real_iteration(self, ts)
    monkeypatch.setattr(ppo_mod.PPO, "iteration", iteration)
    ckpt = tmp_path / "run" / "checkpoint.pt"
    with pytest.raises(CheckpointError) as e:
        train(tiny(total_steps=512))
    assert str(e.value) == (f"cannot write {ckpt}: no space left on device (the checkpoint already there is "
                            f"intact); free some space and continue with `ppo-control train --resume "
                            f"{tmp_path / 'run'}`")
    monkeypatch.undo()
    assert load_checkpoint(ckpt)["iteration"] == 1
    assert not [p for p in (tmp_path / "run").iterdir() if p.name.endswith(".tmp")]
    assert train(resume=str(tmp_path / "run"))["iterations"] == 4
