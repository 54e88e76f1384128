"""The multi-run runner on tiny real runs: skip finished, resume interrupted, record failures, Ctrl-C, Ray."""
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
import time

import pytest

from ppo_control.checkpoint import load_checkpoint
from ppo_control.config import make_config
from ppo_control.experiments.jobs import LOG_NAME, job_action
from ppo_control.experiments.runner import default_workers, prepare, run_jobs
from ppo_control.metrics import MetricsLogger, read_jsonl
from ppo_control.train import train

TINY = dict(env_id="InvertedPendulum-v5", total_steps=256, num_envs=1, num_steps=64, num_minibatches=2,
            update_epochs=1, eval_episodes=1, progress=False, tensorboard=False)


def tiny(**kw):
    return make_config("default", **{**TINY, **kw})


def log_lines(out_dir):
    return [json.loads(line) for line in (out_dir / LOG_NAME).read_text().splitlines()]


def test_prepare_places_jobs_and_rejects_bad_names(tmp_path):
    [cfg] = prepare([("a", tiny(progress=True, torch_threads=0))], tmp_path)
    assert (cfg.out_dir, cfg.run_name, cfg.progress, cfg.torch_threads) == (str(tmp_path), "a", False, 1)
    with pytest.raises(ValueError, match="unique"):
        prepare([("a", tiny()), ("a", tiny(seed=2))], tmp_path)
    # a relative path (a suite's TASK/SETTING/seed_N): the last part is the run name, the rest the folder
    [cfg] = prepare([("Hopper-v5/tuned/seed_1", tiny())], tmp_path)
    assert (cfg.out_dir, cfg.run_name) == (str(tmp_path / "Hopper-v5" / "tuned"), "seed_1")
    for bad in ("", "/abs", "x/../y", "x//y", "."):
        with pytest.raises(ValueError, match="relative paths"):
            prepare([(bad, tiny())], tmp_path)


def test_job_action_from_the_run_directory(tmp_path):
    [cfg] = prepare([("r", tiny())], tmp_path)
    run_dir = tmp_path / "r"
    assert job_action(cfg) == ("new", None)
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps({"config": cfg.to_dict()}))
    assert job_action(cfg) == ("new", None)  # no checkpoint yet: nothing to resume
    (run_dir / "checkpoint.pt").write_bytes(b"")
    assert job_action(cfg) == ("resume", None)
    assert job_action(cfg.replace(tensorboard=True, device="cpu"))[0] == "resume"  # output-only fields
    action, why = job_action(cfg.replace(gae_lambda=0.5))
    assert action == "conflict" and "gae_lambda" in why and "0.95 there, 0.5 here" in why
    (run_dir / "summary.json").write_text("{}")
    assert job_action(cfg) == ("skip", None)


def test_default_workers_fill_cores_without_oversubscribing(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert default_workers([tiny(parallel_critic="off")]) == 8
    assert default_workers([tiny()]) == 4  # PPO's critic updates in a second process: two cores a job
    assert default_workers([make_config("grpo", **{**TINY, "num_envs": 8})]) == 8  # GRPO has no critic
    assert default_workers([tiny(parallel_critic="off"), tiny(torch_threads=2)]) == 4  # 2 threads: one process
    assert default_workers([tiny(num_envs=4, vectorization="async", parallel_critic="off")]) == 2
    assert default_workers([tiny(num_envs=4, vectorization="async")]) == 1
    assert default_workers([tiny(num_envs=16, vectorization="async")]) == 1


def test_a_job_whose_run_another_writer_holds_fails_without_touching_that_run(tmp_path):
    from ppo_control.rundir import RunLock
    train(tiny(out_dir=str(tmp_path), run_name="busy", total_steps=128, checkpoint_every=1))
    (tmp_path / "busy" / "summary.json").unlink()  # an unfinished run, as a writer would hold it
    before = sorted(p.name for p in (tmp_path / "busy").iterdir())
    lock = RunLock(tmp_path / "busy", ["train"]).acquire()
    try:
        [r] = run_jobs([("busy", tiny(total_steps=128, checkpoint_every=1))], tmp_path, workers=1, echo=lambda s: None)
    finally:
        lock.release()
    assert (r.action, r.status) == ("resume", "failed") and "in use by another writer" in r.error
    assert "Traceback" not in r.error and sorted(p.name for p in (tmp_path / "busy").iterdir()) == before


@pytest.mark.slow
def test_skip_resume_and_failure_on_real_runs(tmp_path, monkeypatch):
    train(tiny(out_dir=str(tmp_path), run_name="done"))
    # interrupt "cut" in iteration 3: train saves the state after iteration 2 and re-raises
    original = MetricsLogger.log

    def log_until_3(self, row):
        if row["iteration"] == 3:
            raise KeyboardInterrupt
        original(self, row)
    monkeypatch.setattr(MetricsLogger, "log", log_until_3)
    with pytest.raises(KeyboardInterrupt):
        train(tiny(seed=2, out_dir=str(tmp_path), run_name="cut"))
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "cut")["iteration"] == 2 and not (tmp_path / "cut" / "summary.json").exists()
    done_summary = (tmp_path / "done" / "summary.json").read_text()

    jobs = [("done", tiny()), ("cut", tiny(seed=2)), ("bad", tiny(env_id="NoSuchEnv-v0"))]
    results = {r.run_name: r for r in run_jobs(jobs, tmp_path, workers=2, echo=lambda s: None)}

    assert {n: (r.action, r.status) for n, r in results.items()} == {
        "done": ("skip", "skipped"), "cut": ("resume", "finished"), "bad": ("new", "failed")}
    assert (tmp_path / "done" / "summary.json").read_text() == done_summary  # untouched
    assert [r["iteration"] for r in read_jsonl(tmp_path / "cut" / "metrics.jsonl")] == [1, 2, 3, 4]
    assert json.loads((tmp_path / "cut" / "summary.json").read_text())["global_step"] == 256
    error = (tmp_path / "bad" / "error.txt").read_text()
    assert "Traceback" in error and "EnvError" in error and "NoSuchEnv-v0" in error
    assert (tmp_path / "cut" / "eval.json").exists()
    log = {line["run_name"]: line for line in log_lines(tmp_path)}
    assert log["bad"]["status"] == "failed" and "EnvError" in log["bad"]["error"]
    assert log["cut"]["summary"]["global_step"] == 256 and log["done"]["status"] == "skipped"
    [cfg] = prepare([("cut", tiny(seed=2))], tmp_path)
    assert job_action(cfg) == ("skip", None)


@pytest.mark.slow
def test_jobs_run_the_runners_code_not_a_checkout_in_the_current_directory(tmp_path):
    """Another checkout of ppo_control in the working directory (say, the main tree while the runner runs a
    pinned worktree through PYTHONPATH) must not be the code the jobs train with."""
    import shutil

    import ppo_control
    decoy = tmp_path / "cwd" / "ppo_control"
    shutil.copytree(Path(ppo_control.__file__).parent, decoy, ignore=shutil.ignore_patterns("__pycache__"))
    with open(decoy / "runinfo.py", "a") as f:  # the copy records itself in every run's config.json
        f.write("\n\ndef git_commit(path=None):\n    return {'commit': 'decoy', 'dirty': None}\n")
    script = tmp_path / "go.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys
        from ppo_control.config import make_config
        from ppo_control.experiments.runner import run_jobs
        if __name__ == "__main__":
            [r] = run_jobs([("a", make_config("default", **{TINY!r}))], sys.argv[1], workers=1, echo=print)
            print("STATUS", r.status, r.error)
            print("SAFEPATH", os.environ.get("PYTHONSAFEPATH"))  # the runner's own environment is left as it was
    """))
    root = str(Path(ppo_control.__file__).parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root] + [p for p in sys.path if p]))
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "runs")], cwd=decoy.parent, env=env,
                         capture_output=True, text=True, timeout=300)
    assert "STATUS finished None" in out.stdout and "SAFEPATH None" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
    record = json.loads((tmp_path / "runs" / "a" / "config.json").read_text())
    assert record["environment"]["commit"] != "decoy"


LONG = dict(TINY, total_steps=10_000_000, checkpoint_every=100_000)  # only the interrupt path saves


def _start_long_runner(tmp_path, sigint="default_int_handler"):
    """A runner process (own process group) with one long job, returned once 3 iterations are logged."""
    script = tmp_path / "go.py"
    script.write_text(textwrap.dedent(f"""
        import signal, sys
        from ppo_control.config import make_config
        from ppo_control.experiments.runner import run_jobs
        if __name__ == "__main__":
            signal.signal(signal.SIGINT, signal.{sigint})
            try:
                run_jobs([("long", make_config("default", **{LONG!r}))], sys.argv[1], workers=1)
            except KeyboardInterrupt:
                sys.exit(130)
    """))
    out = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, str(script), str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    metrics = out / "long" / "metrics.jsonl"
    deadline = time.time() + 90
    while not (metrics.exists() and len(read_jsonl(metrics)) >= 3):
        if proc.poll() is not None or time.time() > deadline:
            _kill_group(proc.pid)
            pytest.fail(proc.communicate()[0].decode()[-2000:])
        time.sleep(0.2)
    return proc, out


def _group_alive(pgid) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _assert_group_ends(pgid, timeout: float = 10.0) -> None:
    deadline = time.time() + timeout
    while _group_alive(pgid) and time.time() < deadline:
        time.sleep(0.1)
    assert not _group_alive(pgid), "a process of the runner's group outlived it"


def _kill_group(pgid) -> None:
    if _group_alive(pgid):
        os.killpg(pgid, signal.SIGKILL)


@pytest.mark.parametrize("sigint", ["default_int_handler", "SIG_IGN"])  # a terminal; a shell's `cmd &`
@pytest.mark.slow
def test_ctrl_c_on_the_runner_leaves_a_resumable_checkpoint(tmp_path, sigint):
    proc, out = _start_long_runner(tmp_path, sigint)
    try:
        proc.send_signal(signal.SIGINT)  # the runner only: it must forward the stop to its job
        output = proc.communicate(timeout=90)[0].decode()
    finally:
        _kill_group(proc.pid)
    assert proc.returncode == 130, output[-2000:]
    assert not (out / "long" / "summary.json").exists()
    assert load_checkpoint(out / "long")["iteration"] >= 2
    assert log_lines(out)[-1]["status"] == "interrupted"
    [cfg] = prepare([("long", make_config("default", **LONG))], out)
    assert job_action(cfg) == ("resume", None)


@pytest.mark.slow
def test_sigterm_to_the_runner_and_its_whole_group_saves_once_and_leaves_no_process(tmp_path):
    """What GNU ``timeout`` and ``kill -- -PGID`` do: SIGTERM to the runner, then to every process of
    its group (so the runner sees two, the job one plus the runner's forwarded SIGINT). The job's
    stop path must still save its checkpoint, the runner must still record it, and no worker may be
    left behind (an idle pool worker kept the shell's pipe open and waited forever)."""
    proc, out = _start_long_runner(tmp_path)
    try:
        proc.send_signal(signal.SIGTERM)
        os.killpg(proc.pid, signal.SIGTERM)
        output = proc.communicate(timeout=90)[0].decode()  # EOF only once every holder of the pipe exits
        _assert_group_ends(proc.pid)
    finally:
        _kill_group(proc.pid)
    assert proc.returncode == 130, output[-2000:]
    rows = read_jsonl(out / "long" / "metrics.jsonl")
    assert load_checkpoint(out / "long")["iteration"] == rows[-1]["iteration"], output[-2000:]
    assert log_lines(out)[-1]["status"] == "interrupted", output[-2000:]


@pytest.mark.slow
def test_ctrl_c_to_the_whole_group_leaves_no_process_holding_the_run(tmp_path):
    """What a terminal's Ctrl-C and ``kill -INT -- -PGID`` do: SIGINT to every process of the runner's group at
    once. The job saves and the runner exits 130, and the pool worker that ran the job exits too (it once waited
    on, ignoring signals, with the run directory's lock held, so the run could not be resumed until killed)."""
    proc, out = _start_long_runner(tmp_path)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        output = proc.communicate(timeout=90)[0].decode()
        _assert_group_ends(proc.pid)
    finally:
        _kill_group(proc.pid)
    assert proc.returncode == 130, output[-2000:]
    assert load_checkpoint(out / "long")["iteration"] >= 2
    [cfg] = prepare([("long", make_config("default", **LONG))], out)
    assert job_action(cfg) == ("resume", None)


def test_ray_backend_without_ray_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(RuntimeError, match="pip install"):
        run_jobs([("a", tiny())], tmp_path, backend="ray", echo=lambda s: None)


@pytest.mark.slow
def test_ray_backend_on_a_local_cluster(tmp_path):
    ray = pytest.importorskip("ray")
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as e:  # installed but unable to start here (e.g. no shared memory)
        pytest.skip(f"a local Ray cluster does not start here: {e}")
    try:
        jobs = [("ok", tiny()), ("bad", tiny(env_id="NoSuchEnv-v0"))]
        results = {r.run_name: r for r in run_jobs(jobs, tmp_path, backend="ray", echo=lambda s: None)}
    finally:
        ray.shutdown()
    assert results["ok"].status == "finished" and (tmp_path / "ok" / "summary.json").exists()
    assert results["bad"].status == "failed" and "EnvError" in (tmp_path / "bad" / "error.txt").read_text()
