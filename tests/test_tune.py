"""``ppo-control tune``: spaces checked against Config, the objective from hand-made metrics, seeded
sampling, and tiny real studies that run, resume, report and prune (the pruned runs stopped)."""
import json
import shlex
import statistics

import optuna
import pytest

from ppo_control.checkpoint import load_checkpoint
from ppo_control.cli import build_parser, main
from ppo_control.cliargs import config_from_args
from ppo_control.config import OUTPUT_ONLY_FIELDS, ConfigError, make_config
from ppo_control.experiments import search_space, tune
from ppo_control.experiments.jobs import LOG_NAME
from ppo_control.experiments.search_space import SPACES, parse_space, sample_values
from ppo_control.metrics import read_jsonl

TINY = dict(env_id="InvertedPendulum-v5", total_steps=2048, eval_interval=512, eval_interval_episodes=2, num_envs=2,
            num_steps=64, num_minibatches=4, update_epochs=2, eval_episodes=0, tensorboard=False,
            vectorization="sync")
SPACE = {"lr": ("log", 1e-4, 1e-3), "gae_lambda": ("float", 0.9, 0.99), "ent_coef": ("log0", 1e-4, 1e-2),
         "critic_hidden_sizes": ("cat", [(16,), (32, 32)])}


def quiet(_):
    pass


def learning_fields(cfg):
    return {k: v for k, v in cfg.to_dict().items() if k not in OUTPUT_ONLY_FIELDS}


# The search space --------------------------------------------------------------------------------

@pytest.mark.parametrize("space,match", [
    ({"gae_lamda": ("float", 0.8, 0.99)}, "unknown config field 'gae_lamda'; did you mean gae_lambda"),
    ({"learning_rate_x": ("log", 1e-4, 1e-3)}, "unknown config field 'learning_rate_x'"),
    ({"seed": ("int", 1, 5)}, "use --seeds"),
    ({"torch_threads": ("int", 1, 4)}, "output-only"),
    ({"lr": ("uniform", 1e-4, 1e-3)}, "kind one of"),
    ({"lr": ("log", 0.0, 1e-3)}, "low > 0"),
    ({"lr": ("float", 1e-3, 1e-4)}, "low < high"),
    ({"update_epochs": ("float", 1.0, 5.0)}, "samples floats but the field is int"),
    ({"activation": ("cat", ["tanh", "sigmoid"])}, "activation='sigmoid' is not a valid setting"),
    ({"gae_lambda": ("float", 0.8, 1.5)}, "gae_lambda=1.5 is not a valid setting.*gae_lambda must be in"),
    ({"num_minibatches": ("cat", [8, 8])}, "repeated choice"),
    ({"lr": ("cat", [])}, "at least one value"),
])
def test_a_bad_space_is_refused_naming_the_entry(space, match):
    with pytest.raises(ConfigError, match=match):
        parse_space(space, "default", {}, "search space 'x'")


def test_a_searched_field_cannot_also_be_fixed():
    with pytest.raises(ConfigError, match="lr: also given as a fixed option"):
        parse_space({"lr": ("log", 1e-4, 1e-3)}, "default", {"lr": 3e-4})


def test_shipped_spaces_are_valid_config_fields():
    for name, space in SPACES.items():
        assert [p.name for p in parse_space(space, "default", {}, name)] == list(space)


def test_sampled_values_are_config_values():
    params = parse_space({"ent_coef": ("log0", 1e-4, 1e-2), "critic_hidden_sizes": ("cat", [(64, 64), (256, 256)]),
                          "update_epochs": ("int", 5, 20)})
    fixed = optuna.trial.FixedTrial({"ent_coef": 5e-5, "critic_hidden_sizes": "256x256", "update_epochs": 7})
    assert sample_values(fixed, params) == {"ent_coef": 0.0, "critic_hidden_sizes": (256, 256), "update_epochs": 7}
    assert sample_values(optuna.trial.FixedTrial({"ent_coef": 2e-3, "critic_hidden_sizes": "64x64",
                                                  "update_epochs": 20}), params)["ent_coef"] == 2e-3


def test_each_trial_is_seeded_by_its_number(tmp_path):
    """Two workers on one study (same --sampler-seed) draw different trials; a new study draws the same again."""
    params = parse_space(SPACE)

    def draws(storage, n):
        studies = [optuna.create_study(study_name="s", storage=storage, load_if_exists=True) for _ in range(2)]
        out = []
        for i in range(n):  # the two "workers" take turns
            trial, values = tune.ask(studies[i % 2], params, sampler_seed=7)
            out.append((trial.number, values))
        return out
    first = draws(f"sqlite:///{tmp_path}/a.db", 4)
    assert [n for n, _ in first] == [0, 1, 2, 3]
    assert len({json.dumps(tune._jsonable(v), sort_keys=True) for _, v in first}) == 4
    assert draws(f"sqlite:///{tmp_path}/b.db", 4) == first


# The objective ------------------------------------------------------------------------------------

def test_objective_from_a_runs_metrics(tmp_path):
    rows = [(128, None), (512, 10.0), (640, None), (1030, 20.0), (1536, 30.0), (2100, 70.0)]
    with open(tmp_path / "metrics.jsonl", "w") as f:
        for step, value in rows:
            f.write(json.dumps({"iteration": step // 128, "global_step": step, "eval/return": value}) + "\n")
    (tmp_path / "summary.json").write_text(json.dumps({"final_return": 55.5}))
    assert tune.eval_curve(tmp_path, 512) == {512: 10.0, 1024: 20.0, 1536: 30.0, 2048: 70.0}
    assert tune.run_value("eval_last3", tmp_path, 512) == pytest.approx((20 + 30 + 70) / 3)
    assert tune.run_value("eval_auc", tmp_path, 512) == pytest.approx(32.5)
    assert tune.run_value("final_return", tmp_path, 512) == 55.5


# Studies ------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_study_runs_resumes_and_reports_the_best_as_a_train_command(tmp_path):
    storage, runs = f"sqlite:///{tmp_path}/study.db", tmp_path / "runs"
    kw = dict(space=SPACE, fixed=TINY, seeds=[1, 2], out_dir=runs, workers=1, pruner="none", echo=quiet)
    study = tune.run_study("tiny", storage, n_trials=2, **kw)
    assert (tmp_path / "study.db").exists()
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    for t in trials:  # the value is the seed mean of each run's last 3 evaluations, read here by hand
        per_seed = []
        for seed in (1, 2):
            rows = read_jsonl(runs / "tiny" / f"trial_{t.number:04d}" / f"InvertedPendulum-v5__s{seed}" / "metrics.jsonl")
            evals = [r["eval/return"] for r in rows if r.get("eval/return") is not None]
            assert len(evals) == 4  # 2048 steps, one evaluation every 512
            per_seed.append(statistics.mean(evals[-3:]))
        assert t.value == pytest.approx(statistics.mean(per_seed))
        assert sorted(t.intermediate_values) == [512, 1024, 1536, 2048]
    assert trials[0].params != trials[1].params

    again = tune.run_study("tiny", storage, n_trials=1, **kw)  # the same command continues the study
    assert [(t.number, t.state.name) for t in again.get_trials()] == [(0, "COMPLETE"), (1, "COMPLETE"), (2, "COMPLETE")]
    assert [t.value for t in again.get_trials()[:2]] == [t.value for t in trials]
    with pytest.raises(ConfigError, match="seeds: \\[1, 2\\] there, \\[1, 2, 3\\] here"):
        tune.run_study("tiny", storage, n_trials=1, **{**kw, "seeds": [1, 2, 3]})

    md = tune.write_report(again, tmp_path / "tiny", ["ppo-control", "tune"], storage)
    text = md.read_text()
    best = again.best_trial
    assert f"Trial {best.number}, objective {best.value:.1f}" in text and "3 complete" in text
    [line] = [x.strip() for x in text.splitlines() if x.strip().startswith("ppo-control train")]
    cfg = config_from_args(build_parser().parse_args(shlex.split(line)[1:]))
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in best.user_attrs["values"].items()}
    assert learning_fields(cfg) == learning_fields(make_config("default", **TINY, **values, seed=1))
    assert (tmp_path / "tiny.csv").read_text().count("complete") == 3


@pytest.mark.slow
def test_pruned_trial_stops_its_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(tune, "POLL_S", 0.2)
    long = {**TINY, "total_steps": 200_000}
    study = tune.run_study("p", f"sqlite:///{tmp_path}/p.db", SPACE, fixed=long, seeds=[1, 2], n_trials=1,
                           out_dir=tmp_path, workers=2, pruner=optuna.pruners.ThresholdPruner(lower=1e9), echo=quiet)
    [t] = study.get_trials()
    # pruned at the first evaluation; on a fast machine one poll may already see the second one too
    assert t.state.name == "PRUNED" and t.user_attrs["pruned_at"] == 512 and min(t.intermediate_values) == 512
    trial_dir = tmp_path / "p" / "trial_0000"
    assert {r["status"] for r in read_jsonl(trial_dir / LOG_NAME)} == {"interrupted"}
    for seed in (1, 2):
        run_dir = trial_dir / f"InvertedPendulum-v5__s{seed}"
        assert not (run_dir / "summary.json").exists()
        assert load_checkpoint(run_dir)["global_step"] < 200_000


def test_command_line_errors_name_the_problem(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(search_space.SPACES, "typo", {"gae_lamda": ("float", 0.8, 0.99)})
    base = ["tune", "--env-id", "InvertedPendulum-v5", "--eval-interval", "512", "--results-dir", str(tmp_path)]
    assert main(base + ["--space", "typo"]) == 2
    assert "search space 'typo': unknown config field 'gae_lamda'; did you mean gae_lambda" in capsys.readouterr().err
    assert main(base + ["--report"]) == 2
    assert "no study 'InvertedPendulum-v5__default__ppo'" in capsys.readouterr().err
    assert main(base[:3] + ["--results-dir", str(tmp_path)]) == 2  # no --eval-interval
    assert "set --eval-interval" in capsys.readouterr().err


def test_an_invalid_combination_fails_the_trial_not_the_study(tmp_path):
    """Each value is valid alone, but 2 envs x 48 steps = 96 transitions do not split into 64 minibatches."""
    storage = f"sqlite:///{tmp_path}/c.db"
    space = {"num_steps": ("cat", [64, 48]), "num_minibatches": ("cat", [4, 64])}
    fixed = {k: v for k, v in TINY.items() if k not in space}
    study = tune.run_study("c", storage, space, fixed=fixed, n_trials=0, pruner="none", echo=quiet)
    study.enqueue_trial({"num_steps": 48, "num_minibatches": 64})
    study = tune.run_study("c", storage, space, fixed=fixed, n_trials=1, pruner="none", out_dir=tmp_path, echo=quiet)
    [t] = study.get_trials()
    assert t.state.name == "FAIL" and "invalid combination: num_minibatches=64 must divide" in t.user_attrs["error"]
    assert not (tmp_path / "c").exists()  # nothing ran


def test_a_trial_is_the_config_its_study_began_with_not_todays_preset_row():
    """A preset row changed after the study began does not move the trial's config or its train command."""
    from types import SimpleNamespace
    from ppo_control.experiments.tune_report import train_command, trial_config
    base = make_config("tuned", env_id="Swimmer-v5").to_dict()
    base.update(gamma=0.999, value_norm=False)  # the row as it resolved when the study began
    study = SimpleNamespace(user_attrs={"setup": {"preset": "tuned", "fixed": {"env_id": "Swimmer-v5"},
                                                  "seeds": [1, 2], "config": base}})
    cfg = trial_config(study, SimpleNamespace(user_attrs={"values": {"lr": 0.001}}))
    assert (cfg.gamma, cfg.value_norm, cfg.lr, cfg.seed) == (0.999, False, 0.001, 1)
    cmd = train_command(cfg)
    assert cmd[cmd.index("--gamma") + 1] == "0.999" and "--no-value-norm" in cmd and "--lr" in cmd
    assert not any("grpo" in c for c in cmd)  # GRPO's options are not a PPO run's
