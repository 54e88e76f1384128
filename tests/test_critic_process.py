"""parallel_critic: the critic's epochs in a forked process give the one-process update, bit for bit, and the
process never hangs a run, holds its lock, or outlives it."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch

from ppo_control import algorithms, train
from ppo_control import critic_process as cp_mod
from ppo_control.checkpoint import load_checkpoint
from ppo_control.cli import main
from ppo_control.config import ConfigError, make_config
from ppo_control.critic_process import CriticProcess, CriticProcessError, parallel_critic_decision, run_plans
from ppo_control.metrics import read_jsonl
from ppo_control.networks import make_critic, make_policy
from ppo_control.rundir import RunInUseError, RunLock
from ppo_control.update import LossTerms, _pack, compile_decision, make_optimizer, update

CASES = {  # (obs_dim, act_dim, config)
    "classic": (17, 6, dict(num_steps=512, update_epochs=2, num_minibatches=8)),  # HalfCheetah-sized nets
    "tails": (4, 1, dict(hidden_sizes=(8, 8), num_steps=64, num_minibatches=2, update_epochs=3)),  # biases: tails
    "extras": (5, 3, dict(value_norm=True, clip_vloss=True, layer_norm="both", ent_coef=0.01, critic_hidden_sizes=(24, 8),
                          num_steps=256, update_epochs=2, num_minibatches=4)),
}


@pytest.fixture
def worker():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a run with parallel_critic does (torch_threads 1), in both processes
    w = CriticProcess()
    yield w
    w.close()
    torch.set_num_threads(threads)


def _batch(B, obs_dim, act_dim, seed):
    g = torch.Generator().manual_seed(seed)
    ret = 3.0 * torch.randn(B, generator=g) + 1.0
    return dict(obs=torch.randn(B, obs_dim, generator=g), actions=torch.randn(B, act_dim, generator=g),
                logprobs=torch.randn(B, generator=g) - 3.0, advantages=torch.randn(B, generator=g), returns=ret,
                values=ret + 0.3 * torch.randn(B, generator=g))


def _updates(case, worker):
    """Three updates from the run's first Adam step on, the lr changed between them as the schedule does."""
    obs_dim, act_dim, over = CASES[case]
    cfg = make_config("classic", **over)
    torch.manual_seed(0)
    pi, vf = make_policy(cfg, obs_dim, act_dim), make_critic(cfg, obs_dim)
    opt, stats = make_optimizer([pi, vf], cfg), []
    for it in range(3):
        data = _batch(cfg.batch_size, obs_dim, act_dim, it)
        if cfg.value_norm:
            vf.update_target_stats(data["returns"])
        stats.append(update(pi, vf, opt, data, cfg, torch.Generator().manual_seed(it), True,
                            terms=LossTerms(value=True), critic_process=worker))
        for g in opt.param_groups:
            g["lr"] *= 0.7
    return pi, vf, opt, stats


def _assert_same_state(a: dict, b: dict):
    """Two optimizer state_dicts (or checkpoints' parts) equal tensor for tensor, keys in the same order."""
    assert list(a) == list(b)
    for k in a:
        if isinstance(a[k], dict):
            _assert_same_state(a[k], b[k])
        elif isinstance(a[k], torch.Tensor):
            assert torch.equal(a[k], b[k]), k
        else:
            assert a[k] == b[k], k


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_split_update_is_the_one_process_update_bit_for_bit(case, worker, monkeypatch):
    replies = []
    real = CriticProcess.finish
    monkeypatch.setattr(CriticProcess, "finish", lambda self, *a: replies.append(1) or real(self, *a))
    split, one = _updates(case, worker), _updates(case, None)
    assert len(replies) == 3  # the critic really was stepped in the other process
    for x, y in zip(split[:2], one[:2]):
        _assert_same_state(x.state_dict(), y.state_dict())
    _assert_same_state(split[2].state_dict(), one[2].state_dict())
    assert split[3] == one[3]  # every logged statistic, exactly
    assert split[3][0]["losses/value_loss"] != one[3][1]["losses/value_loss"]  # (they do change per update)


def test_a_split_run_and_its_resume_equal_a_one_process_run(tiny, tmp_path, monkeypatch):
    one = train(tiny(run_name="one", total_steps=512, parallel_critic="off"))
    from ppo_control.envs import VecEnv
    real, calls, pids, init = VecEnv.step, {"n": 0}, [], CriticProcess.__init__
    monkeypatch.setattr(CriticProcess, "__init__", lambda self: init(self) or pids.append(self.pid))

    def step(self, actions):  # Ctrl-C in the middle of iteration 3's collection
        calls["n"] += 1
        if calls["n"] == 64 * 2 + 30:
            raise KeyboardInterrupt
        return real(self, actions)
    monkeypatch.setattr(VecEnv, "step", step)
    with pytest.raises(KeyboardInterrupt):
        train(tiny(run_name="split", total_steps=512, parallel_critic="on"))
    assert load_checkpoint(tmp_path / "split")["iteration"] == 2
    train(resume=str(tmp_path / "split"))
    monkeypatch.undo()
    assert len(pids) == 2 and not any(os.path.exists(f"/proc/{pid}") for pid in pids)  # each ended and reaped
    a, b = load_checkpoint(tmp_path / "split"), load_checkpoint(one["run_dir"])
    for key in ("policy", "critic", "optimizer", "obs_norm", "rew_scaler"):
        _assert_same_state(a[key], b[key])
    rows_a, rows_b = read_jsonl(tmp_path / "split" / "metrics.jsonl"), read_jsonl(tmp_path / "one" / "metrics.jsonl")
    assert [r["iteration"] for r in rows_a] == [1, 2, 3, 4]
    for ra, rb in zip(rows_a, rows_b):
        assert {k: v for k, v in ra.items() if k.startswith("losses/")} == \
            {k: v for k, v in rb.items() if k.startswith("losses/")}
    import json
    assert json.loads((tmp_path / "split" / "config.json").read_text())["parallel_critic"] == "parallel_critic=on"


@pytest.mark.parametrize("over, why", [
    (dict(algo="grpo"), "auto: off, this algorithm has no critic"),
    (dict(torch_threads=2), "auto: off, torch_threads=2 (each half runs one thread)"),
    (dict(torch_threads=0), "auto: off, torch_threads=0 (each half runs one thread)"),
    (dict(target_kl=0.02), "auto: off, target_kl stops the epochs on the policy's KL"),
    (dict(adv_every_epoch=True), "auto: off, adv_every_epoch needs the updated critic between epochs"),
    (dict(), "auto: on, the critic's epochs in a second process (2 usable cores)"),
])
def test_auto_is_on_only_where_the_split_can_run(over, why, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(cp_mod, "_accelerator_present", lambda: False)
    cfg = make_config("classic", **over)
    assert parallel_critic_decision(cfg, torch.device("cpu"), algorithms.get(cfg.algo), False) == \
        (why.startswith("auto: on"), why)


def test_auto_refuses_one_core_a_gpu_an_accelerator_and_a_compiled_loss(monkeypatch):
    cfg, ppo, cpu = make_config("classic"), algorithms.PPO, torch.device("cpu")
    monkeypatch.setattr(cp_mod, "_accelerator_present", lambda: False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    assert parallel_critic_decision(cfg, cpu, ppo, False) == (False, "auto: off, 1 usable core")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert parallel_critic_decision(cfg, torch.device("cuda"), ppo, False) == \
        (False, "auto: off, the networks are on cuda")
    assert parallel_critic_decision(cfg, cpu, ppo, True) == \
        (False, "auto: off, the loss is compiled (the split runs it eagerly)")
    monkeypatch.setattr(cp_mod, "_accelerator_present", lambda: True)
    assert parallel_critic_decision(cfg, cpu, ppo, False) == (False, "auto: off, an accelerator is present")
    assert parallel_critic_decision(cfg.replace(parallel_critic="on"), cpu, ppo, False) == (True, "parallel_critic=on")
    assert parallel_critic_decision(cfg.replace(parallel_critic="off"), cpu, ppo, False)[0] is False


@pytest.mark.parametrize("over, msg", [
    (dict(algo="grpo"), "algo=grpo has no critic update to run in a second process"),
    (dict(torch_threads=0), "set --torch-threads 1 (got 0)"),
    (dict(target_kl=0.02), "drop --target-kl"),
    (dict(adv_every_epoch=True), "drop --adv-every-epoch"),
    (dict(compile="on"), "use --compile off"),
    (dict(device="cuda"), "use --device cpu"),
])
def test_on_refuses_what_it_cannot_split_and_says_what_to_change(over, msg):
    with pytest.raises(ConfigError, match=re.escape(msg)):
        make_config("classic", parallel_critic="on", **over)


def test_an_explicit_on_keeps_compile_auto_off_and_auto_splits_instead_of_compiling(monkeypatch):
    monkeypatch.setattr(sys.modules["ppo_control.update"], "_compiler_missing", lambda device: "")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    cfg, cpu = make_config("classic", total_steps=1_000_000), torch.device("cpu")
    assert [d[0] for d in run_plans(cfg, cpu, algorithms.PPO)] == [False, True]  # eager, split
    assert [d[0] for d in run_plans(cfg.replace(parallel_critic="off"), cpu, algorithms.PPO)] == [True, False]
    assert compile_decision(cfg.replace(parallel_critic="on"), cpu, algorithms.PPO) == \
        (False, "auto: off, parallel_critic=on runs the loss eagerly")


def test_a_killed_worker_is_one_error_line_and_the_last_good_state_is_saved(tmp_path, capsys, monkeypatch):
    real, calls = CriticProcess.start, {"n": 0}

    def start(self, *a):
        calls["n"] += 1
        if calls["n"] == 2:  # the second update: the first iteration's checkpoint is on disk
            os.kill(self.pid, signal.SIGKILL)
        return real(self, *a)
    monkeypatch.setattr(CriticProcess, "start", start)
    rc = main(["train", "--env-id", "InvertedPendulum-v5", "--total-steps", "512", "--num-envs", "2", "--num-steps",
               "64", "--num-minibatches", "4", "--update-epochs", "1", "--eval-episodes", "0", "--no-progress",
               "--no-tensorboard", "--vectorization", "sync", "--out-dir", str(tmp_path), "--run-name", "r",
               "--parallel-critic", "on"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith("ppo-control: error: the critic's process (pid ") and \
        "was killed by SIGKILL during the update; training stopped, the last good state (iteration 1) is saved" \
        in err[0], err
    assert load_checkpoint(tmp_path / "r")["iteration"] == 1


def test_the_worker_does_not_hold_the_run_lock(tmp_path):
    lock = RunLock(tmp_path).acquire()
    w = CriticProcess()  # forked while the lock is held, as on a resume
    try:
        with pytest.raises(RunInUseError):
            RunLock(tmp_path).acquire()
        lock.release()
        RunLock(tmp_path).acquire().release()  # refused if the worker still had the lock's file open
    finally:
        w.close()


def test_the_worker_ignores_stop_signals_and_ends_when_its_pipe_closes(worker):
    os.kill(worker.pid, signal.SIGINT)
    os.kill(worker.pid, signal.SIGTERM)
    _updates("tails", worker)  # still there and answering
    worker._proc["conn"].close()  # what the kernel does when the trainer dies
    for _ in range(500):
        pid, status = os.waitpid(worker.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.02)
    worker._proc["reaped"] = status
    assert pid == worker.pid and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_a_worker_forked_after_this_process_ran_openmp_does_not_hang():
    """libgomp's pool does not survive fork: a child that enters a parallel region its parent started waits
    forever (here: without the worker's torch.set_num_threads(1) this reply never came)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.randn(2_000_000).exp_().sum()  # a parallel region: the OpenMP pool is up in this process
        w = CriticProcess()
    finally:
        torch.set_num_threads(threads)
    try:
        cfg = make_config("classic", num_steps=4096, num_minibatches=4, update_epochs=1, critic_hidden_sizes=(512, 512))
        vf = make_critic(cfg, 17)  # minibatches of 1,024 through 512-wide layers: parallel with 2 threads
        opt = make_optimizer([vf], cfg)
        table, col = _pack(_batch(cfg.batch_size, 17, 6, 0), ["obs", "actions", "logprobs", "advantages", "returns",
                                                              "values"])
        w.start(cfg, table, col, 4, torch.Generator().manual_seed(0), vf, opt)
        assert w._proc["conn"].poll(60), "no reply from the worker within 60 s"
    finally:
        w.close()


def test_a_worker_killed_between_updates_is_a_clear_error_not_a_hang(worker):
    os.kill(worker.pid, signal.SIGKILL)
    with pytest.raises(CriticProcessError, match=r"the critic's process \(pid \d+\) was killed by SIGKILL"):
        _updates("tails", worker)


@pytest.mark.slow
def test_ctrl_c_to_the_process_group_checkpoints_exits_130_and_ends_the_worker(tmp_path):
    """Ctrl-C reaches the trainer and its worker; the worker ignores it, the trainer checkpoints and ends it."""
    argv = [sys.executable, "-m", "ppo_control", "train", "--env-id", "InvertedPendulum-v5", "--total-steps",
            "100000000", "--num-envs", "2", "--num-steps", "64", "--num-minibatches", "4", "--update-epochs", "1",
            "--eval-episodes", "0", "--no-progress", "--no-tensorboard", "--vectorization", "sync", "--out-dir",
            str(tmp_path), "--run-name", "c", "--parallel-critic", "on", "--compile", "off"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not (tmp_path / "c" / "metrics.jsonl").exists() or not read_jsonl(tmp_path / "c" / "metrics.jsonl"):
            assert proc.poll() is None and time.time() < deadline, proc.communicate()
            time.sleep(0.1)
        children = [int(p) for t in os.listdir(f"/proc/{proc.pid}/task")
                    for p in open(f"/proc/{proc.pid}/task/{t}/children").read().split()]
        assert len(children) == 1  # the critic's process
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "interrupted: checkpoint at iteration" in err, err
    assert load_checkpoint(tmp_path / "c")["iteration"] >= 1
    assert not os.path.exists(f"/proc/{children[0]}")
