"""One frozen, validated configuration for PPO and GRPO runs.

Every field carries a one-line ``help`` that becomes the CLI's ``--help`` text.
Invalid values and invalid combinations are rejected at construction with a
message that says what to change.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Tuple


# Fields that change where/how a run is written, never what it learns: two runs that differ
# only in these are the same setting (grouping in aggregation, conflict checks in the runner).
OUTPUT_ONLY_FIELDS = frozenset({"out_dir", "run_name", "progress", "tensorboard", "device", "torch_threads", "compile",
                                "env_threads", "checkpoint_every", "stop_on_divergence"})

# Fields that ``train --resume RUN_DIR`` may change: total_steps (to extend a run; with anneal_lr the
# schedule is stretched from the current step on) and options that change how a run is run or
# logged, never its state. Any other option given with --resume is refused by name.
RESUMABLE_FIELDS = frozenset({"total_steps", "progress", "tensorboard", "checkpoint_every", "eval_episodes",
                              "device", "torch_threads", "env_threads", "stop_on_divergence", "compile"})


class ConfigError(ValueError):
    """A configuration value or combination that cannot run."""


def _f(default, help: str, **kw):
    return field(default=default, metadata={"help": help, **kw})


@dataclass(frozen=True)
class Config:
    # --- what to run -------------------------------------------------------
    env_id: str = _f("HalfCheetah-v5", "gymnasium env id with a continuous Box action space")
    env_kwargs: Tuple[str, ...] = _f((), "keyword arguments for gymnasium.make as key=value pairs, e.g. "
                                         "include_cfrc_ext_in_observation=False (values: numbers, True/False/None, "
                                         "else strings)")
    algo: str = _f("ppo", "algorithm: ppo (critic + GAE) or grpo (critic-free, groups from shared start states)")
    total_steps: int = _f(1_000_000, "environment steps to train for; PPO rounds up to whole iterations of "
                                     "num_envs*num_steps, GRPO stops at the first iteration boundary at or past it "
                                     "(summary.json: total_steps_requested and global_step)")
    seed: int = _f(1, "seed for torch, numpy and the environments")
    device: str = _f("auto", "torch device for the networks: cpu, cuda, cuda:N or auto")
    torch_threads: int = _f(1, "torch intra-op threads (0 = leave torch's default); 1 is fastest for small MLPs")
    compile: str = _f("auto", "torch.compile the update's loss (forward and backward fused by inductor): on, off, "
                              "or auto = on for PPO runs of >= 10,000 minibatch updates where a C++ compiler exists "
                              "(a one-off compile of ~15-20 s, ~2 s once inductor's disk cache has it)",
                      choices=("auto", "on", "off"))
    # --- environments ------------------------------------------------------
    num_envs: int = _f(4, "number of parallel environments")
    vectorization: str = _f("batched", "vector env backend: batched (native batched MuJoCo stepping, exact "
                                       "gymnasium parity; unsupported tasks fall back to sync), sync (one "
                                       "process) or async (one process per env)",
                            choices=("sync", "async", "batched"))
    env_threads: int = _f(0, "batched backend: MuJoCo thread-pool size (0 = all cores this process may use)")
    num_steps: int = _f(512, "PPO: steps collected per env per iteration (batch = num_envs * num_steps)")
    # --- optimisation ------------------------------------------------------
    lr: float = _f(3e-4, "Adam learning rate")
    anneal_lr: bool = _f(True, "linearly anneal the learning rate to 0 over the run (see lr_floor, lr_decay_steps)")
    lr_floor: float = _f(0.0, "with anneal_lr: decay linearly to lr*lr_floor and stay there, not to 0 (in [0, 1])")
    lr_decay_steps: Optional[int] = _f(None, "with anneal_lr: reach the floor after this many env steps (none = "
                                             "total_steps); longer than the run ends it at a higher lr")
    lr_adapt_kl: Optional[float] = _f(None, "adapt the learning rate to keep approx KL near this (RSL-RL's rule: "
                                            "lr/1.5 above 2x, lr*1.5 below 0.5x, within [1e-5, 1e-2]); the lr lives "
                                            "in the optimizer state, so a resumed or extended run continues it; "
                                            "needs --no-anneal-lr (none = off)")
    adam_eps: float = _f(1e-5, "Adam epsilon")
    update_epochs: int = _f(10, "passes over each batch")
    num_minibatches: int = _f(32, "minibatches per epoch (must divide the batch size)")
    max_grad_norm: float = _f(0.5, "gradient-norm clip, applied to the policy and the critic separately")
    target_kl: Optional[float] = _f(None, "stop the epochs early when the approximate KL exceeds this (none = off)")
    # --- PPO objective -----------------------------------------------------
    gamma: float = _f(0.99, "discount factor")
    gae_lambda: float = _f(0.95, "GAE lambda (1 = Monte-Carlo returns, 0 = one-step TD)")
    clip_coef: float = _f(0.2, "PPO ratio clip epsilon")
    dual_clip: Optional[float] = _f(None, "dual-clip constant c > 1: lower bound c*A where A < 0 (none = plain PPO)")
    norm_adv: bool = _f(True, "normalise advantages per minibatch (PPO)")
    ent_coef: float = _f(0.0, "entropy bonus coefficient")
    vf_coef: float = _f(0.5, "value loss coefficient")
    clip_vloss: bool = _f(False, "clip the value update around the old value estimate (PPO)")
    adv_every_epoch: bool = _f(False, "PPO: recompute advantages and value targets with the current critic before "
                                      "every epoch, not only once per batch")
    value_norm: bool = _f(False, "PPO: the critic fits value targets normalised by the running mean/std of the "
                                 "returns (de-normalised wherever V is used); an alternative to norm_reward")
    # --- agent -------------------------------------------------------------
    hidden_sizes: Tuple[int, ...] = _f((64, 64), "hidden layer sizes of policy and critic, e.g. 64,64 "
                                                 "(each network can override it below)")
    actor_hidden_sizes: Optional[Tuple[int, ...]] = _f(None, "hidden sizes of the policy's mean network "
                                                             "(none = hidden_sizes)")
    critic_hidden_sizes: Optional[Tuple[int, ...]] = _f(None, "hidden sizes of the critic, e.g. 256,256 for a "
                                                              "critic wider than the actor (none = hidden_sizes)")
    activation: str = _f("tanh", "hidden activation", choices=("tanh", "relu", "elu", "silu"))
    layer_norm: str = _f("none", "LayerNorm after each hidden linear layer of: none, actor, critic or both",
                         choices=("none", "actor", "critic", "both"))
    init_log_std: float = _f(0.0, "initial log standard deviation of the Gaussian policy")
    log_std_min: float = _f(-5.0, "lower clamp of log_std, keeps std > 0 (no underflow)")
    log_std_max: float = _f(2.0, "upper clamp of log_std")
    norm_obs: bool = _f(True, "running mean/std observation normalisation (kept in the checkpoint)")
    obs_clip: float = _f(10.0, "clip normalised observations to [-obs_clip, obs_clip]")
    norm_reward: bool = _f(True, "scale rewards by the running std of the discounted return")
    reward_clip: float = _f(10.0, "clip scaled rewards to [-reward_clip, reward_clip]")
    # --- GRPO --------------------------------------------------------------
    group_size: int = _f(16, "GRPO: rollouts per group, all started from the same simulator state")
    start_state: str = _f("reset", "GRPO: where group start states come from: reset, visited (a pool of earlier "
                                   "states) or branch (the current policy's own running trajectories)",
                          choices=("reset", "visited", "branch"))
    horizon: Optional[int] = _f(None, "GRPO: max steps per group rollout (none = until the episode ends)")
    grpo_advantage: str = _f("outcome", "GRPO advantage: outcome (whole-rollout return) or per_step (reward-to-go)",
                             choices=("outcome", "per_step"))
    leave_one_out: bool = _f(False, "GRPO: baseline is the mean of the other members (ablation)")
    grpo_adv_scale: str = _f("group", "GRPO: divide each group-centred advantage by the std of its group (at its "
                                      "time step for per_step): group; or by one RMS over the round's trained "
                                      "steps: batch, so steps whose returns barely differ keep small advantages",
                             choices=("group", "batch"))
    kl_coef: float = _f(0.0, "GRPO: beta of the k3 KL penalty to the reference policy (0 = off)")
    ref_update_every: int = _f(0, "GRPO: refresh the reference policy every K iterations (0 = keep the initial)")
    zero_signal_threshold: float = _f(1e-6, "GRPO: groups with return std below this count as zero-signal")
    groups_per_iter: int = _f(1, "GRPO: group rounds collected per iteration (each round = num_envs/group_size groups)")
    crn: bool = _f(False, "GRPO: common random numbers: after its own first (branch) action each member of a group "
                          "uses the group's one shared noise sequence")
    grpo_step_weight: str = _f("rollout", "GRPO: how trained steps are weighted in the loss: rollout (each member "
                                          "rollout sums to the same weight, 1/len per step: GRPO's per-response "
                                          "average) or step (every trained step the same weight: a plain mean, "
                                          "Dr. GRPO's constant normaliser; differs only where rollouts end early)",
                               choices=("rollout", "step"))
    grpo_freeze_ended: bool = _f(True, "GRPO: a member whose episode has ended is not simulated for the rest of "
                                       "its round (its env idles while the rest of the group runs on): the same "
                                       "training data for less simulation (not with branch starts, whose "
                                       "trunks go on from a member's env after its episode ended); off: it "
                                       "keeps stepping and autoresetting, as runs made before this option did")
    grpo_train_steps: str = _f("all", "GRPO: steps trained on: all (every member step) or branch (only each "
                                      "member's first action, with its rollout's outcome advantage)",
                               choices=("all", "branch"))
    # --- outputs -----------------------------------------------------------
    out_dir: str = _f("runs", "directory under which each run gets its own folder")
    run_name: Optional[str] = _f(None, "run folder name (none = env__algo__seed__time)")
    checkpoint_every: int = _f(10, "write a checkpoint every N iterations (and always at the end / on Ctrl-C)")
    eval_episodes: int = _f(10, "deterministic evaluation episodes at the end of training (0 = skip)")
    eval_interval: int = _f(0, "also evaluate (deterministic) every this many env steps, logged as eval/return "
                               "(0 = off); gives comparable curves for PPO and GRPO")
    eval_interval_episodes: int = _f(5, "episodes per evaluation during training")
    progress: bool = _f(True, "show a live progress bar")
    tensorboard: bool = _f(True, "write TensorBoard event files")
    stop_on_divergence: bool = _f(False, "stop (checkpoint kept, exit code 2) when training diverges: approx_kl > 1 "
                                         "or a value loss > 1e6 or non-finite; without it a warning is printed")
    preset: str = _f("default", "name of the preset this config started from (informational)")

    def __post_init__(self):
        if isinstance(self.compile, bool):  # compile was a flag before (old config.json files, Python callers)
            object.__setattr__(self, "compile", "on" if self.compile else "off")
        for name in _TUPLE_FIELDS:
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        _validate(self)

    @property
    def env_kwargs_dict(self) -> dict:
        """``env_kwargs`` as the dict handed to ``gymnasium.make``."""
        return dict(_parse_env_kwarg(item) for item in self.env_kwargs)

    @property
    def actor_sizes(self) -> Tuple[int, ...]:
        return self.actor_hidden_sizes or self.hidden_sizes

    @property
    def critic_sizes(self) -> Tuple[int, ...]:
        return self.critic_hidden_sizes or self.hidden_sizes

    # ---- derived sizes ----------------------------------------------------
    @property
    def batch_size(self) -> int:
        """PPO: transitions per iteration."""
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def num_iterations(self) -> int:
        """PPO: whole iterations needed to reach total_steps, rounded up (GRPO counts steps as it goes)."""
        return max(1, -(-self.total_steps // self.batch_size))

    @property
    def groups_per_round(self) -> int:
        return self.num_envs // self.group_size

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        for name in _TUPLE_FIELDS:
            if d[name] is not None:
                d[name] = list(d[name])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown config field(s) {unknown}; valid fields: {sorted(names)}")
        d = dict(d)
        for name in _TUPLE_FIELDS:
            if d.get(name) is not None:
                d[name] = tuple(d[name])
        return cls(**d)

    @classmethod
    def from_saved(cls, d: dict) -> "Config":
        """The config of a saved run (checkpoint): fields added after it was written take the value that
        reproduces how it ran (``SAVED_BEFORE``), not today's default, so a resume continues it exactly."""
        return cls.from_dict({**SAVED_BEFORE, **d})

    def replace(self, **changes) -> "Config":
        return dataclasses.replace(self, **changes)


# fields whose default changed what a run does when they were added: their value in configs written before
SAVED_BEFORE = {"grpo_freeze_ended": False}

_TUPLE_FIELDS = ("hidden_sizes", "actor_hidden_sizes", "critic_hidden_sizes", "env_kwargs")


def _parse_env_kwarg(item: str):
    """``"key=value"`` -> ``(key, value)`` with value a Python literal (number, True/False/None) or a string."""
    import ast
    key, sep, text = str(item).partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise ConfigError(f"env_kwargs item {item!r} is not key=value with a Python identifier as key, "
                          f"e.g. include_cfrc_ext_in_observation=False")
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        value = text.strip()
    return key, value


def _need(cond: bool, msg: str):
    if not cond:
        raise ConfigError(msg)


def _check_types(c: Config):
    """Every value of the declared type, and every float finite: a NaN, inf or a string from a config file
    or the Python API stops here with the field's name, not deep inside training."""
    import math
    import numbers
    for f in dataclasses.fields(c):
        v, t = getattr(c, f.name), f.type.replace("Optional[", "").rstrip("]")
        if v is None and f.type.startswith("Optional["):
            continue
        if t == "float":
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool)
            _need(not ok or math.isfinite(v), f"{f.name} must be a finite number (got {v})")
        elif t == "int":
            ok = isinstance(v, numbers.Integral) and not isinstance(v, bool)
        elif t == "bool":
            ok = v in (True, False) and not isinstance(v, str)
        elif t == "str":
            ok = isinstance(v, str)
        else:  # tuples, checked by their own rules below
            continue
        _need(ok, f"{f.name} must be {'an' if t == 'int' else 'a'} {t} (got {v!r})")


def _validate(c: Config):
    _check_types(c)
    for f in dataclasses.fields(c):
        choices = f.metadata.get("choices")
        if choices and getattr(c, f.name) not in choices:
            raise ConfigError(f"{f.name}={getattr(c, f.name)!r} is not one of {list(choices)}")
    _need(c.total_steps > 0, f"total_steps must be > 0 (got {c.total_steps})")
    _need(c.num_envs >= 1, f"num_envs must be >= 1 (got {c.num_envs})")
    _need(c.num_steps >= 1, f"num_steps must be >= 1 (got {c.num_steps})")
    _need(c.env_threads >= 0, f"env_threads must be >= 0 (got {c.env_threads})")
    _need(c.update_epochs >= 1, f"update_epochs must be >= 1 (got {c.update_epochs})")
    _need(c.num_minibatches >= 1, f"num_minibatches must be >= 1 (got {c.num_minibatches})")
    _need(0 < c.lr <= 1, f"lr must be in (0, 1] (got {c.lr}); Adam's usual range is 1e-5 to 1e-2")
    _need(0 < c.adam_eps < 1, f"adam_eps must be in (0, 1) (got {c.adam_eps})")
    _need(c.max_grad_norm > 0, f"max_grad_norm must be > 0 (got {c.max_grad_norm}); 0 would zero every "
                               f"gradient, a very large value turns clipping off")
    _need(c.seed >= 0, f"seed must be >= 0 (got {c.seed})")
    _need(c.torch_threads >= 0, f"torch_threads must be >= 0 (got {c.torch_threads})")
    _need(c.zero_signal_threshold >= 0, f"zero_signal_threshold must be >= 0 (got {c.zero_signal_threshold})")
    _need(c.run_name is None or (c.run_name.strip() not in ("", ".", "..") and "/" not in c.run_name
                                 and "\\" not in c.run_name),
          f"run_name must be a plain folder name, no '/' (got {c.run_name!r}); put folders in --out-dir")
    _need(0.0 <= c.lr_floor <= 1.0, f"lr_floor must be in [0, 1], a fraction of lr (got {c.lr_floor})")
    _need(c.lr_decay_steps is None or c.lr_decay_steps > 0, f"lr_decay_steps must be > 0 or none (got {c.lr_decay_steps})")
    _need(c.lr_adapt_kl is None or c.lr_adapt_kl > 0, f"lr_adapt_kl must be > 0 or none (got {c.lr_adapt_kl})")
    _need(c.lr_adapt_kl is None or not c.anneal_lr,
          "lr_adapt_kl adapts the learning rate itself; add --no-anneal-lr (or drop --lr-adapt-kl)")
    _need(0.0 <= c.gamma <= 1.0, f"gamma must be in [0, 1] (got {c.gamma})")
    _need(0.0 <= c.gae_lambda <= 1.0, f"gae_lambda must be in [0, 1] (got {c.gae_lambda})")
    _need(0.0 < c.clip_coef < 1.0, f"clip_coef must be in (0, 1) (got {c.clip_coef})")
    _need(c.dual_clip is None or c.dual_clip > 1.0,
          f"dual_clip must be > 1 (the lower bound is c*A for A < 0), or none to disable it (got {c.dual_clip})")
    for name in ("ent_coef", "vf_coef", "kl_coef"):
        _need(getattr(c, name) >= 0, f"{name} must be >= 0 (got {getattr(c, name)})")
    _need(c.target_kl is None or c.target_kl > 0, f"target_kl must be > 0 or none (got {c.target_kl})")
    c.env_kwargs_dict  # raises for an item that is not key=value
    for name in _TUPLE_FIELDS[:3]:
        v = getattr(c, name)
        _need((v is None and name != "hidden_sizes") or (v is not None and len(v) >= 1 and all(int(h) > 0 for h in v)),
              f"{name} must be positive integers, e.g. 64,64 (got {v})")
    _need(c.log_std_min < c.log_std_max, "log_std_min must be below log_std_max")
    _need(c.log_std_min <= c.init_log_std <= c.log_std_max,
          f"init_log_std={c.init_log_std} must lie inside [log_std_min, log_std_max]")
    _need(c.obs_clip > 0 and c.reward_clip > 0, "obs_clip and reward_clip must be > 0")
    _need(c.checkpoint_every >= 1, f"checkpoint_every must be >= 1 (got {c.checkpoint_every})")
    _need(c.eval_episodes >= 0, f"eval_episodes must be >= 0 (got {c.eval_episodes})")
    _need(c.eval_interval >= 0 and c.eval_interval_episodes >= 1,
          "eval_interval must be >= 0 and eval_interval_episodes >= 1")
    _need(c.device in ("auto", "cpu", "cuda") or (c.device.startswith("cuda:") and c.device[5:].isdigit()),
          f"device must be cpu, cuda, cuda:N or auto (got {c.device!r})")
    check = ALGORITHM_CHECKS.get(c.algo)  # each algorithm's own rules
    _need(check is not None, f"algo={c.algo!r} is not one of {sorted(ALGORITHM_CHECKS)}")
    check(c)


# algo name -> that algorithm's check_config, filled by ppo_control.algorithms.register (the package's
# __init__ imports the algorithms, so they are registered before any Config is built; this module cannot
# import them: they import it)
ALGORITHM_CHECKS: dict = {}


# Presets --------------------------------------------------------------------
# "classic": the MuJoCo PPO settings of Schulman et al. (2017) as used by most
# public benchmarks, so returns compare with the literature.
CLASSIC = dict(num_envs=1, num_steps=2048, num_minibatches=32, update_epochs=10, lr=3e-4,
               anneal_lr=True, gamma=0.99, gae_lambda=0.95, clip_coef=0.2, ent_coef=0.0,
               vf_coef=0.5, max_grad_norm=0.5, norm_obs=True, norm_reward=True, obs_clip=10.0,
               reward_clip=10.0, hidden_sizes=(64, 64), activation="tanh", clip_vloss=False,
               norm_adv=True, target_kl=None, dual_clip=None, init_log_std=0.0)

# "default": the same batch of 2048 transitions per update, collected by 4
# envs stepped together (batched policy inference, fewer Python calls).
DEFAULT = dict(CLASSIC, num_envs=4, num_steps=512)

# "fast": 64 envs x 64 steps, 8 minibatches of 512, lr 1e-3: an eighth of the gradient steps of
# "classic" on 8x larger minibatches, with a larger step size to match. Chosen by measurement on
# HalfCheetah-v5 (README, results/): with lr 3e-4 the same batch shape lost ~30% of the return.
FAST = dict(CLASSIC, num_envs=64, num_steps=64, num_minibatches=8, lr=1e-3, vectorization="batched")

# "tuned": the fast preset's batch shape with what measured best on HalfCheetah-v5 (README "Results",
# results/tuned_pilot.md): log_std starting at -0.5 (std 0.61) and a 256x256 critic beside the 64x64
# actor (Andrychowicz et al. 2021). Adding advantages every epoch + value-target normalisation + vf 0.25
# tied with it (final 5,697 vs 5,931, peak mean eval 6,550 vs 6,520; 2 seeds), so the simpler one won
# and those stay options (the ablation is still to run).
# Periodic deterministic evaluation every 50k steps gives the learning curve and the peak metric.
TUNED = dict(FAST, init_log_std=-0.5, critic_hidden_sizes=(256, 256), eval_interval=50_000)

# Tianshou's details: advantages recomputed every epoch, value-target normalisation instead of reward
# scaling, value coefficient 0.25 (the `details` change of benchmarks/tuned_ablation.sh).
TIANSHOU_DETAILS = dict(adv_every_epoch=True, value_norm=True, norm_reward=False, vf_coef=0.25)
_ABLATION = ("ablation, {n} seeds: bash benchmarks/tuned_ablation.sh {env} details 1 .. {n} (commit {commit}), "
             "results/tuned_ablation/ablation.md: final return {base} -> {new}")

# The tuned preset's per-task rows: env id -> (settings on top of TUNED, where they came from).
TUNED_ROWS = {
    "HalfCheetah-v5": (dict(TIANSHOU_DETAILS),
                       "pilot: bash benchmarks/tuned_pilot.sh HalfCheetah-v5 1 2 (candidate c2 of c0-c3), commit d5c25ab; "
                       "results/tuned_pilot.md; + " + _ABLATION.format(env="HalfCheetah-v5", n=10, commit="6b8c87b",
                                                                       base="5,435", new="5,606")),
    "Hopper-v5": (dict(num_envs=4, num_steps=512, num_minibatches=32, lr=3e-4, **TIANSHOU_DETAILS),
                  "the fast preset's Hopper batch shape (results/fast_hopper_tune.md, commit abf866b): "
                  "large batches lost return on Hopper; + " + _ABLATION.format(env="Hopper-v5", n=5, commit="2dca118",
                                                                            base="2,286", new="2,806")),
    "Walker2d-v5": (dict(TIANSHOU_DETAILS), _ABLATION.format(env="Walker2d-v5", n=5, commit="2dca118, seeds 4-5 299e571",
                                                      base="3,119", new="4,027")),
    "Ant-v5": (dict(TIANSHOU_DETAILS), _ABLATION.format(env="Ant-v5", n=5, commit="299e571", base="915", new="1,231")),
    # trial 8's values exactly as Optuna drew them, so the study's own runs (seeds 1-2) are runs of this row
    "Swimmer-v5": (dict(num_envs=8, num_steps=256, num_minibatches=16, update_epochs=9, lr=0.0005916350112240497,
                        gamma=0.999, gae_lambda=0.9521791151205858, init_log_std=-0.4314381388768631),
                   "Optuna study Swimmer-v5__tuned__ppo_lite (bash benchmarks/tune_study.sh Swimmer-v5 14, stopped "
                   "after 10 trials; commit 6b8c87b), best trial 8: eval 159 on seeds 1-2; every gamma 0.9999 trial "
                   "(SB3-zoo's setting, this row's earlier value) ended below 45; results/tune/Swimmer-v5__tuned__ppo_lite.md"),
}

GRPO_EVAL_INTERVAL = 50_000  # make_config's eval_interval for GRPO when none is given

# "grpo": critic-free GRPO with what measured best at 1M steps (issue 12; README "GRPO for continuous control",
# results/grpo_factorial/reading.md): groups of 8 members put into one restored simulator state, 64 envs (8 groups
# per round), per-step group-relative advantages, common random numbers off, std starting at 0.61, and for tasks
# that end in a fall the visited-start cell whose horizon sees the fall (H 512, gamma 0.998). Per-task rows below;
# a task without a row gets these settings unmeasured. PPO's optimiser settings (default preset) throughout.
GRPO = dict(DEFAULT, algo="grpo", num_envs=64, group_size=8, start_state="visited", horizon=512, gamma=0.998,
            grpo_advantage="per_step", init_log_std=-0.5, eval_interval=GRPO_EVAL_INTERVAL)
_GRPO_SRC = "final deterministic eval at 1M, results/grpo_1m/targets.md; "
GRPO_ROWS = {
    "HalfCheetah-v5": (dict(start_state="reset", horizon=256, gamma=0.99, grpo_adv_scale="batch"),
                       _GRPO_SRC + "reset H 256 / 0.99 with batch-scaled advantages 2,308 [1,967, 2,631] over 10 seeds "
                       "(ENV=HalfCheetah-v5 bash benchmarks/grpo_tuning.sh advbatch+gamma0.99 1 .. 10, commits "
                       "f18fd3a-a1a5697); per-group scaling at 0.995: 1,654 (10)"),
    "Hopper-v5": (dict(), _GRPO_SRC + "visited H 512 / 0.998 2,053 [1,603, 2,476] over 10 runs in two batches "
                  "(benchmarks/grpo_factorial.sh, benchmarks/grpo_falling_pilot.sh) and 2,381 / 1,329 in a third "
                  "(ENV=Hopper-v5 bash benchmarks/grpo_tuning.sh base 1 2); an entropy bonus of 0.01 gave the "
                  "same (results/grpo_factorial/reading.md, fourth round)"),
    "Walker2d-v5": (dict(), _GRPO_SRC + "visited H 512 / 0.998 1,262 [973, 1,654] over 5 seeds "
                    "(benchmarks/grpo_falling_pilot.sh) and 862 over 6 more (ENV=Walker2d-v5 bash "
                    "benchmarks/grpo_tuning.sh base 1 .. 6); no change tried beat it by more than its seed noise, "
                    "and none reaches half of PPO (results/grpo_factorial/reading.md, third and fourth rounds)"),
    "Ant-v5": (dict(horizon=256, gamma=0.995), _GRPO_SRC + "visited H 256 / 0.995 991 [941, 1,038] over 5 seeds "
               "(benchmarks/grpo_falling_pilot.sh; a policy that stands, not one that runs)"),
}

PRESETS = {"classic": CLASSIC, "default": DEFAULT, "fast": FAST, "tuned": TUNED, "grpo": GRPO}

# Per-environment adjustments on top of a preset (before explicit overrides), each chosen by
# measurement (README "Results"):
# - default / Swimmer: gamma 0.9999, the usual setting for Swimmer's slow, far-sighted reward.
# - fast / Hopper: every large-batch setting we tried lost return against classic on Hopper
#   (64x64 envs/steps, 8 minibatches, lr 1e-3: 1.8k; 32x64, 16 minibatches: 1.8k; 32x64,
#   32 minibatches: 2.3k; classic 2.5k), while the default preset's shape (4 envs x 512 steps,
#   32 minibatches, lr 3e-4) matched it (2.4k-2.6k, 6 seeds) in less wall time; so "fast" uses that.
ENV_OVERRIDES = {
    "default": {"Swimmer-v5": dict(gamma=0.9999)},
    "fast": {"Hopper-v5": dict(num_envs=4, num_steps=512, num_minibatches=32, lr=3e-4)},
    "tuned": {env_id: row for env_id, (row, _source) in TUNED_ROWS.items()},
    "grpo": {env_id: row for env_id, (row, _source) in GRPO_ROWS.items()},
}


# Presets tuned at 1M env steps whose learning-rate schedule is measured to fail in much longer runs, per
# (preset, env id): anneal_lr decays over total_steps, so a 10M run keeps a 1M run's peak lr ten times as
# long while the policy std shrinks as fast. Measured by benchmarks/grpo_10m.sh (results/grpo_10m/
# ant_ppo_diag.md; README "10M steps"): the tuned Ant row at 10M ended at 488 (5 seeds, below its own 1M
# runs' 1,529), and with lr_decay_steps=1000000, lr_floor=0.1 at 3,519 (5 seeds, 2,183-5,081).
TUNED_AT_STEPS = 1_000_000
LONG_RUN_SCHEDULE = {("tuned", "Ant-v5"): "at 10M steps its 5 seeds collapsed to a mean of 488 (its 1M runs: 1,529); "
                                          "with --lr-decay-steps 1000000 --lr-floor 0.1 they ended at 3,519"}


def long_run_warning(cfg: Config) -> Optional[str]:
    """A warning for a preset row whose lr schedule is measured to fail past TUNED_AT_STEPS, when ``cfg``
    runs longer than that on the preset's own schedule (None otherwise, or once the user set one)."""
    why = LONG_RUN_SCHEDULE.get((cfg.preset, cfg.env_id))
    if why is None or not cfg.anneal_lr or cfg.lr_decay_steps is not None or cfg.lr_floor > 0 \
            or cfg.total_steps <= TUNED_AT_STEPS:
        return None
    return (f"preset {cfg.preset!r} on {cfg.env_id} was tuned at {TUNED_AT_STEPS:,} steps and anneals lr over the "
            f"whole run; {why} (results/grpo_10m/ant_ppo_diag.md). For {cfg.total_steps:,} steps consider "
            f"--lr-decay-steps {TUNED_AT_STEPS} --lr-floor 0.1")


def applied_env_overrides(cfg: Config) -> dict:
    """The per-env adjustments of ``cfg.preset`` for ``cfg.env_id`` that ``cfg`` carries (not overridden)."""
    table = ENV_OVERRIDES.get(cfg.preset, {}).get(cfg.env_id, {})
    return {k: v for k, v in table.items() if getattr(cfg, k) == v}



def make_config(preset: str = "default", **overrides) -> Config:
    """Build a Config from a named preset, env-specific tweaks, then explicit overrides."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    values = dict(PRESETS[preset])
    preset_algo = values.get("algo", Config.algo)
    if preset_algo == "grpo" and overrides.get("algo", "grpo") != "grpo":
        raise ConfigError(f"preset {preset!r} holds GRPO's settings; with --algo {overrides['algo']} choose "
                          f"one of {sorted(p for p, v in PRESETS.items() if v.get('algo', Config.algo) != 'grpo')}")
    env_id = overrides.get("env_id", Config.env_id)
    values.update(ENV_OVERRIDES.get(preset, {}).get(env_id, {}))
    ppo_preset_as_grpo = overrides.get("algo") == "grpo" and preset_algo != "grpo"
    if ppo_preset_as_grpo and "num_envs" not in overrides:
        # GRPO needs whole groups: one group per round unless told otherwise
        values["num_envs"] = overrides.get("group_size", Config.group_size)
    if ppo_preset_as_grpo and "eval_interval" not in overrides:
        # short-horizon GRPO trains on no whole episode, so its only return curve is this evaluation
        values["eval_interval"] = GRPO_EVAL_INTERVAL
    values.update(overrides)
    values["preset"] = preset
    return Config(**values)
