"""Grid parsing (typed by Config field), expansion into named jobs, validation errors, the CLI entry."""
import pytest

from ppo_control.cli import build_parser, main
from ppo_control.config import ConfigError
from ppo_control.experiments.sweep import expand_grid, parse_grid, parse_value


def test_values_take_the_field_type():
    assert parse_value("gae_lambda", "0.9") == 0.9 and isinstance(parse_value("ent_coef", "0"), float)
    assert parse_value("total_steps", "1e6") == 1_000_000 and isinstance(parse_value("num_envs", "8"), int)
    assert parse_value("norm_obs", "false") is False and parse_value("anneal-lr", "yes") is True
    assert parse_value("target_kl", "none") is None and parse_value("target_kl", "0.02") == 0.02
    assert parse_value("hidden_sizes", "256x256") == (256, 256) and parse_value("hidden_sizes", "64") == (64,)
    assert parse_value("activation", "relu") == "relu"


@pytest.mark.parametrize("name,text,match", [
    ("gae_lambda", "high", "expected float"),
    ("num_envs", "2.5", "expected int"),
    ("norm_obs", "maybe", "expected bool"),
    ("hidden_sizes", "64xwide", "expected Tuple"),
    ("activation", "sigmoid", "not one of"),
    ("gae_lamda", "0.9", "did you mean gae_lambda"),
])
def test_bad_values_are_rejected_with_a_reason(name, text, match):
    with pytest.raises(ConfigError, match=match):
        parse_value(name, text)


def test_parse_grid():
    grid = parse_grid(["gae_lambda=0.9,0.95,0.99", "ent-coef=0,0.01"])
    assert grid == [("gae_lambda", [0.9, 0.95, 0.99]), ("ent_coef", [0.0, 0.01])]


@pytest.mark.parametrize("specs,match", [
    (["gae_lambda"], "expected FIELD=V1,V2"),
    (["gae_lambda="], "no values"),
    (["seed=1,2"], "use --seeds"),
    (["run_name=a,b"], "generated"),
    (["gae_lambda=0.9", "gae_lambda=0.95"], "given twice"),
    (["ent_coef=0,0.0"], "repeated value"),
])
def test_grid_spec_errors(specs, match):
    with pytest.raises(ConfigError, match=match):
        parse_grid(specs)


def test_expansion_names_every_cell_and_seed():
    grid = parse_grid(["gae_lambda=0.9,0.95,0.99", "ent_coef=0,0.01"])
    jobs = expand_grid("default", {"env_id": "Hopper-v5", "total_steps": 5000}, grid, [1, 2, 3])
    names = [n for n, _ in jobs]
    assert len(jobs) == 18 and len(set(names)) == 18
    assert names[:3] == ["Hopper-v5__gae_lambda=0.9__ent_coef=0__s1", "Hopper-v5__gae_lambda=0.9__ent_coef=0__s2",
                         "Hopper-v5__gae_lambda=0.9__ent_coef=0__s3"]
    assert names[-1] == "Hopper-v5__gae_lambda=0.99__ent_coef=0.01__s3"
    cfg = dict(jobs)["Hopper-v5__gae_lambda=0.95__ent_coef=0.01__s2"]
    assert (cfg.gae_lambda, cfg.ent_coef, cfg.seed, cfg.total_steps, cfg.env_id) == (0.95, 0.01, 2, 5000, "Hopper-v5")
    assert [n for n, _ in expand_grid("default", {"env_id": "Hopper-v5", "total_steps": 5000}, grid, [1, 2, 3])] \
        == names  # deterministic: the same command finds the same run directories


def test_expansion_without_grid_and_with_env_grid():
    assert [n for n, _ in expand_grid("default", {}, [], [7])] == ["HalfCheetah-v5__s7"]
    jobs = expand_grid("default", {}, parse_grid(["env_id=Hopper-v5,Swimmer-v5", "lr=1e-4"]), [1])
    assert [n for n, _ in jobs] == ["Hopper-v5__lr=0.0001__s1", "Swimmer-v5__lr=0.0001__s1"]
    assert jobs[1][1].gamma == 0.9999  # per-env preset tweak still applies


def test_invalid_cells_fail_before_anything_runs():
    with pytest.raises(ConfigError, match="grid cell gae_lambda=1.5: gae_lambda must be in"):
        expand_grid("default", {}, parse_grid(["gae_lambda=0.9,1.5"]), [1])
    with pytest.raises(ConfigError, match="num_minibatches=3 must divide"):
        expand_grid("default", {"num_steps": 64, "num_envs": 1}, parse_grid(["num_minibatches=2,3"]), [1])
    with pytest.raises(ConfigError, match="both as a fixed option and in --grid"):
        expand_grid("default", {"gae_lambda": 0.9}, parse_grid(["gae_lambda=0.9,0.95"]), [1])
    with pytest.raises(ConfigError, match="distinct"):
        expand_grid("default", {}, [], [1, 1])


def test_cli_dry_run(capsys, tmp_path):
    rc = main(["sweep", "--env-id", "Hopper-v5", "--grid", "gae_lambda=0.9,0.95,0.99", "--grid", "ent_coef=0,0.01",
               "--seeds", "1", "2", "3", "--total-steps", "1000", "--out-dir", str(tmp_path), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0 and "18 jobs" in out and f"{tmp_path}/Hopper-v5__gae_lambda=0.9__ent_coef=0__s1" in out
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_cli_reports_bad_grids_as_usage_errors(capsys):
    assert main(["sweep", "--grid", "gae_lambda=2", "--dry-run"]) == 2
    assert "gae_lambda must be in [0, 1]" in capsys.readouterr().err


def test_parser_registers_the_commands():
    p = build_parser()
    ns = p.parse_args(["plot", "a", "b", "--out", "x.png", "--group-by", "gae_lambda", "--x", "time"])
    assert ns.run_dirs == ["a", "b"] and ns.group_by == ["gae_lambda"] and ns.x == "time"
    ns = p.parse_args(["sweep", "--workers", "3", "--backend", "ray", "--lr", "1e-4"])
    assert ns.workers == 3 and ns.backend == "ray" and ns.lr == 1e-4


@pytest.mark.parametrize("argv", [
    "sweep --grid gae_lambda=0.9,0.95 --grid ent_coef=0,0.01 --seeds 1 2 --target-kl none --no-norm-obs "
    "--hidden-sizes 64,64 --out-dir runs/x --dry-run",
    "plot a b --out x.png --group-by gae_lambda ent_coef --heatmap gae_lambda ent_coef",
])
def test_recorded_command_parses_back_to_the_same_options(argv):
    from ppo_control.experiments.sweep import command_line
    ns = build_parser().parse_args(argv.split())
    cmd = command_line(ns)
    assert cmd[:2] == ["ppo-control", ns.command]
    assert vars(build_parser().parse_args(cmd[1:])) == vars(ns)
