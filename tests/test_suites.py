"""Suite files: settings, grids and per-task seeds as jobs; a job's run found by its config, wherever it lies."""
import json
import tomllib

import pytest

from ppo_control.config import ConfigError, make_config
from ppo_control.experiments.suites import RunIndex, load_suite, parse_suite, same_run, suite_runs

SUITE = """
tasks = ["Hopper-v5", "HalfCheetah-v5"]
total_steps = 2048
seeds = [1, 2]
seeds_for = { "HalfCheetah-v5" = [1, 2, 3] }

[settings.base]

[settings.fast]
preset = "fast"
tasks = ["Hopper-v5"]
seeds = [7]
hidden_sizes = [32, 32]

[grid]
gae_lambda = [0.9, 0.99]
ent_coef = [0.0]
"""


def suite(text=SUITE, name="s"):
    return parse_suite(tomllib.loads(text), name)


def test_settings_grid_cells_and_per_task_seeds_become_jobs():
    s = suite()
    assert [x.name for x in s.settings] == ["base", "fast", "gae_lambda=0.9,ent_coef=0", "gae_lambda=0.99,ent_coef=0"]
    jobs = s.jobs()
    # task-major; base and the grid cells on both tasks (HalfCheetah with its 3 seeds), fast on Hopper, seed 7
    assert [(j.task, j.setting, j.seed) for j in jobs[:6]] == [
        ("Hopper-v5", "base", 1), ("Hopper-v5", "base", 2), ("Hopper-v5", "fast", 7),
        ("Hopper-v5", "gae_lambda=0.9,ent_coef=0", 1), ("Hopper-v5", "gae_lambda=0.9,ent_coef=0", 2),
        ("Hopper-v5", "gae_lambda=0.99,ent_coef=0", 1)]
    assert len(jobs) == 2 + 1 + 2 * 2 + 3 + 2 * 3
    fast = jobs[2].config
    assert fast == make_config("fast", env_id="Hopper-v5", seed=7, total_steps=2048, hidden_sizes=(32, 32))
    assert fast.hidden_sizes == (32, 32) and fast.preset == "fast"
    assert jobs[3].config.gae_lambda == 0.9 and jobs[3].config.preset == "default"
    assert str(jobs[2].rel_dir) == "s/Hopper-v5/fast/seed_7"
    sub = s.jobs(tasks=["HalfCheetah-v5"], seeds=[3])
    assert [(j.setting, j.seed) for j in sub] == [("base", 3), ("gae_lambda=0.9,ent_coef=0", 3),
                                                  ("gae_lambda=0.99,ent_coef=0", 3)]


def test_a_settings_own_seeds_win_over_the_suites_per_task_seeds():
    # nearest word wins: setting seeds_for[task] > setting seeds > suite seeds_for[task] > suite seeds
    s = suite('''tasks = ["Hopper-v5", "HalfCheetah-v5"]
seeds = [1, 2]
seeds_for = { "HalfCheetah-v5" = [1, 2, 3] }
[settings.inherits]
[settings.own]
seeds = [4]
[settings.own_per_task]
seeds = [4]
seeds_for = { "Hopper-v5" = [5, 6] }
''')
    got = {x.name: {t: x.seeds[t] for t in x.tasks} for x in s.settings}
    assert got == {"inherits": {"Hopper-v5": (1, 2), "HalfCheetah-v5": (1, 2, 3)},
                   "own": {"Hopper-v5": (4,), "HalfCheetah-v5": (4,)},
                   "own_per_task": {"Hopper-v5": (5, 6), "HalfCheetah-v5": (4,)}}


def test_bad_suite_files_are_refused_with_the_reason():
    with pytest.raises(ConfigError, match="unknown keys"):
        suite('tasks = ["Hopper-v5"]\nsetings = 1\n')
    with pytest.raises(ConfigError, match=r"setting 'a'.*\['seed'\]"):
        suite('tasks = ["Hopper-v5"]\n[settings.a]\nseed = 3\n')
    with pytest.raises(ConfigError, match="setting 'a' on Hopper-v5: gae_lambda"):
        suite('tasks = ["Hopper-v5"]\n[settings.a]\ngae_lambda = 2.0\n')
    with pytest.raises(ConfigError, match=r"\['seed'\] cannot be set for every run"):
        suite('tasks = ["Hopper-v5"]\nseed = 3\n')
    with pytest.raises(ConfigError, match=r"\['lrr'\] cannot be set for every run"):
        suite('tasks = ["Hopper-v5"]\noverrides = { lrr = 1 }\n')
    with pytest.raises(ConfigError, match="no suite file"):
        load_suite("no_such_suite")


def test_a_setting_turns_off_an_optional_field_a_preset_row_sets_with_none():
    s = suite('tasks = ["Hopper-v5"]\n[settings.kl]\nanneal_lr = false\nlr_adapt_kl = 0.01\n'
              '[settings.off]\nlr_adapt_kl = "none"\ntarget_kl = "None"\n')
    kl, off = (j.config for j in s.jobs())
    assert kl.lr_adapt_kl == 0.01 and not kl.anneal_lr
    assert off.lr_adapt_kl is None and off.target_kl is None and off == make_config("default", env_id="Hopper-v5")
    with pytest.raises(ConfigError, match="setting 'a': lr_adapt_kl = 'fast'"):
        suite('tasks = ["Hopper-v5"]\n[settings.a]\nlr_adapt_kl = "fast"\n')


def write_cfg(root, rel, cfg: dict, finished=True):
    d = root / rel
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"config": cfg}))
    if finished:
        (d / "summary.json").write_text("{}")
    return d


def test_a_run_matches_on_every_field_the_job_sets():
    want = make_config("default", env_id="Hopper-v5", seed=1, total_steps=2048).to_dict()
    assert same_run(dict(want, out_dir="elsewhere", run_name="x", torch_threads=4), want)  # output-only fields
    assert not same_run(dict(want, lr=1e-3), want)
    # a run saved before a field existed had its default: it matches the default, and only the default
    old = {k: v for k, v in want.items() if k != "value_norm"}
    assert same_run(old, want) and not same_run(old, dict(want, value_norm=True))
    # GRPO's options do not exist for a PPO run; for a GRPO run they count
    assert same_run(dict(want, horizon=7), want)
    g = make_config("default", algo="grpo", env_id="Hopper-v5", seed=1, total_steps=2048).to_dict()
    assert not same_run(dict(g, horizon=7), g)


def test_each_job_finds_its_run_in_any_folder_and_prefers_its_own(tmp_path):
    s = suite('tasks = ["Hopper-v5"]\ntotal_steps = 2048\nseeds = [1, 2]\n[settings.base]\n', name="tiny")
    cfg = {j.seed: j.config.to_dict() for j in s.jobs()}
    write_cfg(tmp_path, "old/a/Hopper__s1", cfg[1])
    write_cfg(tmp_path, "old/a/Hopper__s2", cfg[2], finished=False)
    write_cfg(tmp_path, "old/other/x", dict(cfg[1], lr=1e-2))  # another setting: never found
    got = {j.seed: d for j, d in suite_runs(s, RunIndex(tmp_path))}
    assert got == {1: tmp_path / "old/a/Hopper__s1", 2: tmp_path / "old/a/Hopper__s2"}
    # the same run in a second folder holding more of the setting's seeds wins over the first ...
    write_cfg(tmp_path, "more/Hopper__s1", cfg[1])
    write_cfg(tmp_path, "more/Hopper__s2", cfg[2])
    got = {j.seed: d for j, d in suite_runs(s, RunIndex(tmp_path))}
    assert got == {1: tmp_path / "more/Hopper__s1", 2: tmp_path / "more/Hopper__s2"}
    # ... and the suite's own folder over both, even unfinished
    write_cfg(tmp_path, "tiny/Hopper-v5/base/seed_1", cfg[1], finished=False)
    got = {j.seed: d for j, d in suite_runs(s, RunIndex(tmp_path))}
    assert got[1] == tmp_path / "tiny/Hopper-v5/base/seed_1"
    assert [d for _, d in suite_runs(s, RunIndex(tmp_path / "nothing"))] == [None, None]


def test_the_committed_suites_parse():
    from ppo_control.experiments.suites import SUITES_DIR
    names = sorted(p.stem for p in SUITES_DIR.glob("*.toml"))
    assert {"mujoco_1m", "mujoco_10m", "lambda_ent", "grpo_vs_ppo_10m", "speed"} <= set(names)
    m = load_suite("mujoco_1m")
    assert len(m.tasks) == 10 and {"tuned", "default"} <= {s.name for s in m.settings}
    assert m.settings[0].seeds["HalfCheetah-v5"] == tuple(range(1, 11))
    assert len(load_suite("lambda_ent").settings) == 6  # 3 lambdas x 2 entropy coefficients
