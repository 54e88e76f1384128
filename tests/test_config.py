import pytest

from ppo_control.config import Config, ConfigError, make_config


@pytest.mark.parametrize("kw, msg", [
    (dict(num_envs=1, num_steps=100, num_minibatches=32), "must divide the batch size"),
    (dict(dual_clip=1.0), "dual_clip must be > 1"),
    (dict(dual_clip=0.5), "dual_clip must be > 1"),
    (dict(ent_coef=-0.1), "ent_coef must be >= 0"),
    (dict(vf_coef=-1.0), "vf_coef must be >= 0"),
    (dict(clip_coef=0.0), "clip_coef"),
    (dict(gae_lambda=1.5), "gae_lambda"),
    (dict(algo="grpo", group_size=1, num_envs=4), "group_size must be >= 2"),
    (dict(algo="grpo", group_size=4, num_envs=6), "multiple of group_size"),
    (dict(kl_coef=0.1), "GRPO option"),
    (dict(algo="sac"), "not one of"),
    (dict(device="tpu"), "device must be"),
    (dict(hidden_sizes=(64, 0)), "hidden_sizes"),
    (dict(env_threads=-1), "env_threads must be >= 0"),
    (dict(eval_interval=-5), "eval_interval must be >= 0"),
    (dict(eval_interval_episodes=0), "eval_interval_episodes must be >= 1"),
])
def test_invalid_configs_say_what_to_change(kw, msg):
    with pytest.raises(ConfigError, match=msg):
        make_config("default", **kw)


def test_classic_preset_matches_the_literature():
    c = make_config("classic")
    assert (c.num_envs, c.num_steps, c.num_minibatches, c.update_epochs) == (1, 2048, 32, 10)
    assert (c.lr, c.anneal_lr, c.gamma, c.gae_lambda, c.clip_coef, c.ent_coef) == (3e-4, True, 0.99, 0.95, 0.2, 0.0)
    assert c.norm_obs and c.norm_reward and c.obs_clip == 10 and c.reward_clip == 10
    assert c.hidden_sizes == (64, 64) and c.activation == "tanh"
    assert c.minibatch_size == 64 and c.num_iterations == 489  # 1M / 2048 = 488.3 rounded up


def test_round_trip_and_unknown_fields():
    c = make_config("default", env_id="Hopper-v5", dual_clip=3.0)
    assert Config.from_dict(c.to_dict()) == c
    with pytest.raises(ConfigError, match="unknown config field"):
        Config.from_dict({**c.to_dict(), "learning_rate": 1.0})
    with pytest.raises(ConfigError, match="unknown preset"):
        make_config("fastest")


def test_grpo_defaults_to_one_group_of_envs_and_swimmer_gamma():
    assert make_config("default", algo="grpo", group_size=8).num_envs == 8
    assert make_config("default", env_id="Swimmer-v5").gamma == 0.9999
    assert make_config("classic", env_id="Swimmer-v5").gamma == 0.99


def test_fast_preset():
    c = make_config("fast")
    assert (c.num_envs, c.num_steps, c.num_minibatches, c.lr, c.vectorization) == (64, 64, 8, 1e-3, "batched")
    assert c.minibatch_size == 512
    h = make_config("fast", env_id="Hopper-v5")  # the measured per-env exception, overridable as usual
    assert (h.num_envs, h.num_steps, h.num_minibatches, h.lr) == (4, 512, 32, 3e-4)
    assert make_config("fast", env_id="Hopper-v5", lr=1e-3).lr == 1e-3
    assert make_config("classic", env_id="Hopper-v5").num_envs == 1


def test_config_defaults_are_the_default_preset():
    assert Config() == make_config("default")
    assert Config(env_id="Hopper-v5") == make_config("default", env_id="Hopper-v5")


def test_per_network_sizes_and_layer_norm_options():
    c = make_config(hidden_sizes=(32, 32), critic_hidden_sizes=(256, 256), layer_norm="critic")
    assert c.actor_sizes == (32, 32) and c.critic_sizes == (256, 256)
    assert Config.from_dict(c.to_dict()) == c
    with pytest.raises(ConfigError, match="critic_hidden_sizes must be positive"):
        make_config(critic_hidden_sizes=(256, -1))
    with pytest.raises(ConfigError, match="layer_norm='all' is not one of"):
        make_config(layer_norm="all")


def test_print_config_shows_preset_env_overrides_and_flags(capsys):
    import json

    from ppo_control.cli import main
    assert main(["train", "--preset", "fast", "--env-id", "Hopper-v5", "--lr", "5e-4", "--print-config"]) == 0
    out = json.loads(capsys.readouterr().out)
    cfg = out["config"]
    assert (cfg["num_envs"], cfg["num_steps"], cfg["lr"], cfg["preset"]) == (4, 512, 5e-4, "fast")
    # lr was given on the command line, so of Hopper's per-env overrides only the batch shape applies
    assert out["env_overrides_applied"] == {"num_envs": 4, "num_steps": 512, "num_minibatches": 32}
    assert main(["train", "--critic-hidden-sizes", "128,128", "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["critic_hidden_sizes"] == [128, 128]


def test_tuned_preset_rows_apply_per_task_and_name_their_source():
    from ppo_control.presets import load
    c = make_config("tuned", env_id="HalfCheetah-v5")
    assert (c.init_log_std, c.critic_sizes, c.actor_sizes, c.eval_interval) == (-0.5, (256, 256), (64, 64), 50_000)
    assert (c.num_envs, c.num_steps, c.num_minibatches, c.lr) == (64, 64, 8, 1e-3)
    h = make_config("tuned", env_id="Hopper-v5")
    assert (h.num_envs, h.num_steps, h.lr, h.init_log_std) == (4, 512, 3e-4, -0.5)
    assert (make_config("tuned", env_id="Swimmer-v5").gamma, make_config("tuned", env_id="Swimmer-v5").num_envs) == \
        (0.9999, 8)  # the Optuna study's batch shape, then gamma 0.9999 with value-target normalisation
    rows = load("tuned").tasks
    assert set(rows) == {"HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5", "Swimmer-v5"}
    assert all("results/" in row.source and "benchmarks/" in row.source for row in rows.values())
    for env in ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5"):  # rows that took the ablation's `details`
        d = make_config("tuned", env_id=env)
        assert (d.adv_every_epoch, d.value_norm, d.norm_reward, d.vf_coef) == (True, True, False, 0.25), env
    u = make_config("tuned", env_id="Humanoid-v5")  # not ablated: the preset's own settings
    assert (u.adv_every_epoch, u.value_norm, u.norm_reward, u.vf_coef) == (False, False, True, 0.5)


# the flags issue 12's GRPO benchmarks give on top of the default preset (benchmarks/grpo_tuning.sh's base
# cells): the preset's rows must resolve to exactly these, so the measured runs are runs of the preset
_GRPO_CELL = dict(algo="grpo", start_state="visited", horizon=512, gamma=0.998, grpo_advantage="per_step",
                  group_size=8, num_envs=64, init_log_std=-0.5, eval_interval=50_000)
_GRPO_TASK_CELLS = {
    "HalfCheetah-v5": dict(_GRPO_CELL, start_state="reset", horizon=256, gamma=0.99, grpo_adv_scale="batch"),
    "Hopper-v5": _GRPO_CELL,
    "Walker2d-v5": _GRPO_CELL,
    "Ant-v5": dict(_GRPO_CELL, horizon=256, gamma=0.995),
    "Humanoid-v5": _GRPO_CELL,  # no row: the preset's own settings
}


@pytest.mark.parametrize("env", sorted(_GRPO_TASK_CELLS))
def test_grpo_preset_is_the_measured_benchmark_cell_of_each_task(env):
    import dataclasses
    got = make_config("grpo", env_id=env)
    want = make_config("default", env_id=env, **_GRPO_TASK_CELLS[env])
    diff = {f.name: (getattr(got, f.name), getattr(want, f.name)) for f in dataclasses.fields(Config)
            if f.name != "preset" and getattr(got, f.name) != getattr(want, f.name)}
    assert diff == {}
    assert (got.algo, got.preset, got.num_envs // got.group_size) == ("grpo", "grpo", 8)


def test_grpo_preset_rows_name_their_source_and_refuse_ppo():
    from ppo_control.presets import load
    rows = load("grpo").tasks
    assert set(rows) == {"HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5"}
    assert all("benchmarks/" in row.source and "results/" in row.source for row in rows.values())
    # naming the algorithm again keeps the preset's 64 envs (a PPO preset run as GRPO gets one group instead)
    assert make_config("grpo", algo="grpo", env_id="Hopper-v5").num_envs == 64
    assert make_config("default", algo="grpo").num_envs == 16
    with pytest.raises(ConfigError, match=r"preset 'grpo' holds GRPO's settings; with --algo ppo choose one of "
                                          r"\['classic', 'default', 'fast', 'tuned'\]"):
        make_config("grpo", algo="ppo")


def test_grpo_preset_on_the_command_line(capsys):
    import json

    from ppo_control.cli import main
    assert main(["train", "--preset", "grpo", "--env-id", "HalfCheetah-v5", "--seed", "3", "--print-config"]) == 0
    out = json.loads(capsys.readouterr().out)
    cfg = out["config"]
    assert (cfg["algo"], cfg["start_state"], cfg["horizon"], cfg["gamma"], cfg["grpo_adv_scale"], cfg["seed"]) == \
        ("grpo", "reset", 256, 0.99, "batch", 3)
    assert out["env_overrides_applied"] == {"start_state": "reset", "horizon": 256, "gamma": 0.99,
                                            "grpo_adv_scale": "batch"}


def test_the_tuned_ant_row_keeps_one_learning_rate_schedule_at_any_horizon():
    """Ant's tuned row adapts lr to a KL target and does not anneal it, so a 10M-step config is the 1M one
    but for total_steps (the schedule that collapsed at 10M was annealed over the run)."""
    short, long = (make_config("tuned", env_id="Ant-v5", total_steps=n) for n in (1_000_000, 10_000_000))
    assert (short.anneal_lr, short.lr_adapt_kl) == (False, 0.01)
    assert {k for k, v in short.to_dict().items() if long.to_dict()[k] != v} == {"total_steps"}
    assert make_config("tuned", env_id="Ant-v5", lr_adapt_kl=None, anneal_lr=True).anneal_lr  # can be undone
