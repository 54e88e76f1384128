"""Writes tests/data/old_runs/: two tiny runs stopped mid-way by the code of commit 190f9f7 (the last
checkpoint format before algorithms moved behind one interface), and the parameters that same code
reaches when it resumes them to the end. tests/test_train.py resumes the copies with today's code and
asserts the same parameters bit for bit.

It must run at commit 190f9f7 (it checks the package layout of that commit):
    git worktree add --detach /tmp/old 190f9f7
    cd /tmp/old && PYTHONPATH=$PWD python /path/to/tests/data/make_old_runs.py /path/to/tests/data/old_runs
"""
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

import torch

RUNS = {  # InvertedPendulum, tiny networks: each checkpoint is a few KB
    "ppo": dict(num_envs=2, num_steps=32, num_minibatches=2, update_epochs=2, total_steps=256),
    "grpo_visited": dict(algo="grpo", start_state="visited", num_envs=4, group_size=2, horizon=16,
                         num_minibatches=2, update_epochs=2, total_steps=200, kl_coef=0.1, eval_interval=0),
}
COMMON = dict(env_id="InvertedPendulum-v5", hidden_sizes=(8, 8), eval_episodes=0, progress=False,
              tensorboard=False, checkpoint_every=1, run_name="run")
STOP_AT = 3  # the run is stopped (as by Ctrl-C) when its 3rd iteration starts: the checkpoint holds iteration 2


def _check_commit():
    if importlib.util.find_spec("ppo_control.grpo") is None or importlib.util.find_spec("ppo_control.algorithms"):
        sys.exit("make_old_runs.py must run with the package of commit 190f9f7 on PYTHONPATH (see its docstring)")


def _stopped_run(name: str, out: Path) -> None:
    from ppo_control import make_config, train
    train_mod = importlib.import_module("ppo_control.train")  # the module (the package exports train())
    real, calls = train_mod._iteration, [0]

    def stop_at(ts):
        calls[0] += 1
        if calls[0] == STOP_AT:
            raise KeyboardInterrupt("fixture: stop")
        return real(ts)
    train_mod._iteration = stop_at
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = make_config("default", out_dir=tmp, **COMMON, **RUNS[name])
            try:
                train(cfg)
            except KeyboardInterrupt:
                pass
            shutil.copytree(Path(tmp) / "run", out / name, ignore=shutil.ignore_patterns("tb", "*.lock"))
    finally:
        train_mod._iteration = real


def _continued(name: str, out: Path) -> dict:
    from ppo_control import train
    from ppo_control.checkpoint import load_checkpoint
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / name
        shutil.copytree(out / name, run)
        train(resume=str(run), command=["fixture"])
        st = load_checkpoint(run)
    return {k: st[k] for k in ("iteration", "global_step", "policy", "critic", "ref_policy")}


def main(out: str) -> None:
    _check_commit()
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    expected = {}
    for name in RUNS:
        _stopped_run(name, out)
        expected[name] = _continued(name, out)
    torch.save(expected, out / "expected.pt")
    print("wrote", out, sorted(p.name for p in out.iterdir()))


if __name__ == "__main__":
    main(sys.argv[1])
