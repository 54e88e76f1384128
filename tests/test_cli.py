"""The command line explains itself: --version, a grouped train --help with choices, --print-config by
algorithm, `ppo-control presets`, --config FILE and its one-line errors."""
import json

import pytest

from ppo_control import __version__
from ppo_control.cli import main
from ppo_control.config import make_config


def run(capsys, *argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own exits (--help, --version, usage errors)
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def test_version(capsys):
    rc, out, _ = run(capsys, "--version")
    assert (rc, out) == (0, f"ppo-control {__version__}\n")


def test_train_help_is_grouped_shows_choices_and_fits_a_few_screens(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rc, out, _ = run(capsys, "train", "--help")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "usage: ppo-control train [--preset NAME | --config FILE] [OPTIONS]"
    sections = [line[:-1] for line in lines if line and not line.startswith(" ") and line.endswith(":")]
    assert sections == ["options", "run and environment",
                        "PPO (the optimiser and the clipped objective; GRPO shares those not marked PPO)", "networks",
                        "normalisation", "GRPO (with --algo grpo)", "logging and output"]
    assert any(line.startswith("  --activation {tanh,relu,elu,silu}") for line in lines)
    assert any(line.startswith("  --[no-]norm-obs ") for line in lines)
    assert len(lines) < 200  # 287 when every option was in one group with a 60-line usage


def test_every_field_is_in_one_help_group():
    import dataclasses

    from ppo_control.cliargs import GROUPS
    from ppo_control.config import Config
    grouped = [n for names in GROUPS.values() for n in names]
    assert sorted(grouped) == sorted(f.name for f in dataclasses.fields(Config) if f.name != "preset")


def test_print_config_shows_the_fields_of_its_algorithm(capsys):
    rc, out, _ = run(capsys, "train", "--preset", "grpo", "--env-id", "Hopper-v5", "--print-config")
    grpo = json.loads(out)["config"]
    rc2, out, _ = run(capsys, "train", "--env-id", "Hopper-v5", "--print-config")
    ppo = json.loads(out)["config"]
    assert rc == rc2 == 0
    assert (grpo["group_size"], grpo["horizon"], grpo["start_state"]) == (8, 512, "visited")
    assert not {"gae_lambda", "vf_coef", "num_steps", "critic_hidden_sizes", "value_norm"} & set(grpo)
    assert (ppo["gae_lambda"], ppo["num_steps"]) == (0.95, 512)
    assert not {"group_size", "horizon", "kl_coef", "crn"} & set(ppo)
    assert {"lr", "gamma", "hidden_sizes", "seed", "preset"} <= set(grpo) & set(ppo)


def test_presets_lists_every_preset_with_its_description(capsys):
    rc, out, _ = run(capsys, "presets")
    lines = out.splitlines()
    assert rc == 0 and [line.split()[0] for line in lines[:5]] == ["classic", "default", "fast", "grpo", "tuned"]
    assert lines[2].startswith("fast     64 envs x 64 steps, 8 minibatches of 512, lr 1e-3")


def test_presets_name_shows_each_value_and_where_it_came_from(capsys):
    rc, out, _ = run(capsys, "presets", "tuned", "--env-id", "Hopper-v5")
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  ") and
            not line.strip().startswith(("source", "task row source"))}
    assert rc == 0
    assert rows["init_log_std"] == ["-0.5", "preset"]
    assert rows["vectorization"] == ["batched", "base", "fast"]
    assert rows["clip_coef"] == ["0.2", "base", "classic"]
    assert rows["num_minibatches"] == ["32", "task", "row"]  # fast's 8, replaced by the Hopper row
    assert rows["critic_hidden_sizes"] == ["256,256", "preset"]
    assert "task row source: the fast preset's Hopper batch shape" in out
    rc, out, _ = run(capsys, "presets", "tuned", "--env-id", "Humanoid-v5")  # no row: fast's 8 minibatches
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  ")}
    assert rows["num_minibatches"] == ["8", "base", "fast"] and "task row" not in out.split("task rows")[0]


def write(tmp_path, text, name="my.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_config_file_with_a_base_and_a_task_row(tmp_path, capsys):
    path = write(tmp_path, '[preset]\ndescription = "mine"\nbase = "fast"\n[preset.settings]\nlr = 5e-4\n'
                           'hidden_sizes = [32, 32]\ntarget_kl = "none"\n'
                           '[tasks."Hopper-v5"]\nsource = "a test"\nnum_envs = 8\n')
    rc, out, _ = run(capsys, "train", "--config", path, "--env-id", "Hopper-v5", "--seed", "4", "--print-config")
    cfg = json.loads(out)["config"]
    assert rc == 0
    # the file's lr and sizes, fast's batch shape but for the row's 8 envs, the flag's seed
    assert (cfg["lr"], cfg["hidden_sizes"], cfg["num_envs"], cfg["num_steps"], cfg["num_minibatches"], cfg["seed"],
            cfg["preset"]) == (5e-4, [32, 32], 8, 64, 8, 4, path)
    assert json.loads(out)["env_overrides_applied"] == {"num_envs": 8}
    rc, out, _ = run(capsys, "train", "--config", path, "--print-config")  # HalfCheetah: no row
    assert rc == 0 and json.loads(out)["config"]["num_envs"] == 64


def test_a_file_can_build_on_a_file_beside_it(tmp_path, capsys, monkeypatch):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "num_envs = 8\nlr = 1e-3\n", "common.toml")
    child = write(tmp_path / "sub", '[preset]\nbase = "common.toml"\n[preset.settings]\nlr = 2e-3\n', "child")
    monkeypatch.chdir(tmp_path)  # the base is found beside the file, not in the working directory
    rc, out, _ = run(capsys, "train", "--config", "sub/child", "--print-config")
    cfg = json.loads(out)["config"]
    assert rc == 0 and (cfg["num_envs"], cfg["lr"], cfg["preset"]) == (8, 2e-3, "sub/child")
    monkeypatch.chdir(tmp_path / "sub")  # a bare name after --config is a file too
    rc, out, _ = run(capsys, "train", "--config", "child", "--print-config")
    assert rc == 0 and json.loads(out)["config"]["preset"] == "./child"


def test_a_flat_config_file_starts_from_the_schema_defaults(tmp_path, capsys):
    path = write(tmp_path, "lr = 1e-3\nnum_envs = 8\ntotal_steps = 2e5\nnorm_reward = false\n")
    cfg = make_config(path)
    assert (cfg.lr, cfg.num_envs, cfg.total_steps, cfg.norm_reward, cfg.num_steps) == (1e-3, 8, 200_000, False, 512)
    assert isinstance(cfg.total_steps, int)


def test_sweep_takes_a_config_file(tmp_path, capsys):
    from ppo_control.experiments.sweep import expand_grid
    path = write(tmp_path, "num_envs = 2\nnum_steps = 64\nnum_minibatches = 4\n")
    jobs = expand_grid(path, {}, [("lr", [1e-3, 3e-4])], [1, 2])
    assert [(cfg.lr, cfg.seed, cfg.num_envs, cfg.num_steps) for _, cfg in jobs] == \
        [(1e-3, 1, 2, 64), (1e-3, 2, 2, 64), (3e-4, 1, 2, 64), (3e-4, 2, 2, 64)]
    rc, out, _ = run(capsys, "sweep", "--config", path, "--grid", "lr=1e-3,3e-4", "--seeds", 1, 2, 3, "--dry-run",
                       "--out-dir", tmp_path)
    assert rc == 0 and out.splitlines()[-1] == "6 jobs"


@pytest.mark.parametrize("text,message", [
    ("gae_lamda = 0.9\n", "unknown config field 'gae_lamda'; did you mean gae_lambda?"),
    ("learning_rate = 1e-3\n", "unknown config field 'learning_rate'; did you mean lr?"),
    ("[preset.settings]\nn_steps = 128\n", "[preset.settings] unknown config field 'n_steps'; did you mean num_steps?"),
    ("lr = \"fast\"\n", "lr = 'fast': expected float (e.g. 0.95)"),
    ("num_envs = 2.5\n", "num_envs = 2.5: expected int (e.g. 3)"),
    ("hidden_sizes = 64\n", "hidden_sizes = 64: expected Tuple[int, ...] (e.g. 64x64)"),
    ("activation = \"sigmoid\"\n", "activation='sigmoid' is not one of ['tanh', 'relu', 'elu', 'silu']"),
    ("lr = 1e-3\nnum_envs = = 4\n", "not valid TOML: Invalid value (at line 2, column 12)"),
    ("[preset]\nbase = \"quick\"\n", "unknown preset 'quick'; choose one of"),
    ("[tasks.\"Hopper-v5\"]\nn_envs = 5\n", "[tasks.\"Hopper-v5\"] unknown config field 'n_envs'"),
    ("lr = 2.0\n", "lr must be in (0, 1]"),  # a valid type, an invalid value: the schema's own check
    ("lr = 1e-3\n[preset]\nbase = \"fast\"\n", "lr at the top level: in a file with [preset] or [tasks] tables, "
                                                  "fields go under [preset.settings]"),
])
def test_bad_config_files_get_one_line_naming_the_fix(tmp_path, capsys, text, message):
    path = write(tmp_path, text)
    rc, out, err = run(capsys, "train", "--config", path, "--print-config")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
    assert message in err and err.startswith("ppo-control: error: "), err


def test_a_missing_config_file_and_preset_with_config(tmp_path, capsys):
    rc, _, err = run(capsys, "train", "--config", tmp_path / "nope.toml", "--print-config")
    assert rc == 2 and "nope.toml: no such config file" in err
    rc, _, err = run(capsys, "train", "--preset", "fast", "--config", tmp_path / "x.toml")
    assert rc == 2 and "not allowed with argument --preset" in err


def test_plot_refuses_a_curve_no_run_logged(tmp_path, capsys):
    from rundirs import write_run
    write_run(tmp_path / "runs", "a", [1.0, 2.0])
    write_run(tmp_path / "runs", "b", [1.5, 2.5], seed=2)
    out = tmp_path / "p.png"
    rc, _, err = run(capsys, "plot", tmp_path / "runs", "--curve", "eval/return", "--out", out)
    assert rc == 2 and err == ("ppo-control: error: none of the 2 runs logged eval/return (runs trained with "
                               "--eval-interval N log it); nothing plotted\n")
    assert not out.exists()  # (the training-episode curve of these runs plots: tests/test_plotting.py)
