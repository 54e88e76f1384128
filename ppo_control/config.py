"""One frozen, validated configuration for PPO and GRPO runs: the schema (each field's one-line ``help``
is its ``--help`` text) and its validation, which says what to change. Presets are data: ``presets/``."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Tuple

from . import presets
from .presets import GRPO_EVAL_INTERVAL, PRESETS, applied_env_overrides  # noqa: F401
from .values import ALGORITHMS, ConfigError, env_kwarg, field_name, register_schema, type_error


# Fields that change where/how a run is written, never what it learns: two runs that differ
# only in these are the same setting (grouping in aggregation, conflict checks in the runner).
OUTPUT_ONLY_FIELDS = frozenset({"out_dir", "run_name", "progress", "tensorboard", "device", "torch_threads", "compile",
                                "parallel_critic", "env_threads", "checkpoint_every", "stop_on_divergence"})

# Fields that ``train --resume RUN_DIR`` may change: total_steps (to extend a run; with anneal_lr the
# schedule is stretched from the current step on) and options that change how a run is run or
# logged, never its state. Any other option given with --resume is refused by name.
RESUMABLE_FIELDS = frozenset({"total_steps", "progress", "tensorboard", "checkpoint_every", "eval_episodes",
                              "device", "torch_threads", "env_threads", "stop_on_divergence", "compile",
                              "parallel_critic"})


def _f(default, help: str, **kw):
    return field(default=default, metadata={"help": help, **kw})


@dataclass(frozen=True)
class Config:
    # --- run and environment -------------------------------------------------
    env_id: str = _f("HalfCheetah-v5", "gymnasium env id with a continuous Box action space")
    env_kwargs: Tuple[str, ...] = _f((), "gymnasium.make keyword arguments, e.g. include_cfrc_ext_in_observation=False "
                                         "(numbers, True/False/None, else strings)")
    algo: str = _f("ppo", "ppo (critic + GAE) or grpo (critic-free, groups from shared start states)")
    total_steps: int = _f(1_000_000, "environment steps to train for; PPO rounds up to whole iterations, GRPO "
                                     "stops at the first iteration end past it")
    seed: int = _f(1, "seed for torch, numpy and the environments")
    device: str = _f("auto", "torch device for the networks: cpu, cuda, cuda:N or auto")
    torch_threads: int = _f(1, "torch intra-op threads (0 = torch's default); 1 is fastest for small MLPs")
    compile: str = _f("auto", "torch.compile the update's loss; auto = on for PPO runs of >= 10,000 minibatch "
                              "updates where a C++ compiler exists (a one-off ~15-20 s)", choices=("auto", "on", "off"))
    parallel_critic: str = _f("auto", "PPO: run the critic's epochs in a second process beside the policy's (the "
                                      "same numbers, bit for bit; the loss eager); auto = on for an eager CPU run "
                                      "with 2+ usable cores, torch_threads 1, no target_kl, no adv_every_epoch",
                              choices=("auto", "on", "off"))
    num_envs: int = _f(4, "number of parallel environments")
    vectorization: str = _f("batched", "vector env backend: batched (native batched MuJoCo, gymnasium's results; "
                                       "other tasks fall back to sync), sync or async", choices=("sync", "async", "batched"))
    env_threads: int = _f(0, "batched backend: MuJoCo thread-pool size (0 = all cores this process may use)")
    # --- PPO: optimiser and objective (GRPO shares those not marked PPO) -------
    num_steps: int = _f(512, "PPO: steps per env per iteration (batch = num_envs * num_steps)")
    lr: float = _f(3e-4, "Adam learning rate")
    anneal_lr: bool = _f(True, "decay the learning rate linearly to 0 over the run (see lr_floor, lr_decay_steps)")
    lr_floor: float = _f(0.0, "with anneal_lr: decay to lr*lr_floor and stay there (in [0, 1])")
    lr_decay_steps: Optional[int] = _f(None, "with anneal_lr: reach the floor after this many env steps "
                                             "(none = total_steps)")
    lr_adapt_kl: Optional[float] = _f(None, "adapt lr to keep approx KL near this (RSL-RL's rule: /1.5 above 2x, "
                                            "*1.5 below 0.5x); needs --no-anneal-lr (none = off)")
    adam_eps: float = _f(1e-5, "Adam epsilon")
    update_epochs: int = _f(10, "passes over each batch")
    num_minibatches: int = _f(32, "minibatches per epoch (must divide the batch size)")
    max_grad_norm: float = _f(0.5, "gradient-norm clip, for the policy and the critic separately")
    target_kl: Optional[float] = _f(None, "stop the epochs early when approx KL exceeds this (none = off)")
    gamma: float = _f(0.99, "discount factor")
    gae_lambda: float = _f(0.95, "PPO: GAE lambda (1 = Monte-Carlo returns, 0 = one-step TD)")
    clip_coef: float = _f(0.2, "ratio clip epsilon")
    dual_clip: Optional[float] = _f(None, "dual-clip constant c > 1: lower bound c*A where A < 0 (none = off)")
    norm_adv: bool = _f(True, "PPO: normalise advantages per minibatch")
    ent_coef: float = _f(0.0, "entropy bonus coefficient")
    vf_coef: float = _f(0.5, "PPO: value loss coefficient")
    clip_vloss: bool = _f(False, "PPO: clip the value update around the old value estimate")
    adv_every_epoch: bool = _f(False, "PPO: recompute advantages and value targets with the current critic every epoch")
    value_norm: bool = _f(False, "PPO: fit value targets normalised by the returns' running mean/std (instead of "
                                 "norm_reward)")
    # --- networks --------------------------------------------------------------
    hidden_sizes: Tuple[int, ...] = _f((64, 64), "hidden layer sizes of policy and critic, e.g. 64,64")
    actor_hidden_sizes: Optional[Tuple[int, ...]] = _f(None, "the policy's own hidden sizes (none = hidden_sizes)")
    critic_hidden_sizes: Optional[Tuple[int, ...]] = _f(None, "PPO: the critic's own hidden sizes, e.g. 256,256 "
                                                              "(none = hidden_sizes)")
    activation: str = _f("tanh", "hidden activation", choices=("tanh", "relu", "elu", "silu"))
    layer_norm: str = _f("none", "LayerNorm after each hidden linear layer of these networks",
                         choices=("none", "actor", "critic", "both"))
    init_log_std: float = _f(0.0, "initial log standard deviation of the Gaussian policy")
    log_std_min: float = _f(-5.0, "lower clamp of log_std (keeps std > 0)")
    log_std_max: float = _f(2.0, "upper clamp of log_std")
    # --- normalisation ----------------------------------------------------------
    norm_obs: bool = _f(True, "running mean/std observation normalisation (kept in the checkpoint)")
    obs_clip: float = _f(10.0, "clip normalised observations to [-obs_clip, obs_clip]")
    norm_reward: bool = _f(True, "PPO: scale rewards by the running std of the discounted return")
    reward_clip: float = _f(10.0, "PPO: clip scaled rewards to [-reward_clip, reward_clip]")
    # --- GRPO ----------------------------------------------------------------------
    group_size: int = _f(16, "GRPO: rollouts per group, all started from the same simulator state")
    start_state: str = _f("reset", "GRPO: group start states: reset, visited (a pool of earlier states) or branch "
                                   "(the policy's own running trajectories)", choices=("reset", "visited", "branch"))
    horizon: Optional[int] = _f(None, "GRPO: max steps per group rollout (none = until the episode ends)")
    grpo_advantage: str = _f("outcome", "GRPO advantage: outcome (whole-rollout return) or per_step (reward-to-go)",
                             choices=("outcome", "per_step"))
    leave_one_out: bool = _f(False, "GRPO: baseline is the mean of the other members (ablation)")
    grpo_adv_scale: str = _f("group", "GRPO: divide centred advantages by their group's std (group) or by one RMS "
                                      "over the round (batch)", choices=("group", "batch"))
    kl_coef: float = _f(0.0, "GRPO: beta of the k3 KL penalty to the reference policy (0 = off)")
    ref_update_every: int = _f(0, "GRPO: refresh the reference policy every K iterations (0 = keep the initial)")
    zero_signal_threshold: float = _f(1e-6, "GRPO: groups with return std below this count as zero-signal")
    groups_per_iter: int = _f(1, "GRPO: group rounds per iteration (each round = num_envs/group_size groups)")
    crn: bool = _f(False, "GRPO: common random numbers: after its first action each member uses the group's noise")
    grpo_step_weight: str = _f("rollout", "GRPO: loss weight per trained step: rollout (1/len, GRPO's average) or "
                                          "step (a plain mean, Dr. GRPO)", choices=("rollout", "step"))
    grpo_freeze_ended: bool = _f(True, "GRPO: stop simulating a member whose episode ended (same data, less "
                                       "simulation; off: it autoresets, as older runs did)")
    grpo_train_steps: str = _f("all", "GRPO: steps trained on: all, or branch (each member's first action only)",
                               choices=("all", "branch"))
    # --- logging and output ---------------------------------------------------------
    out_dir: str = _f("runs", "directory under which each run gets its own folder")
    run_name: Optional[str] = _f(None, "run folder name (none = env__algo__seed__time)")
    checkpoint_every: int = _f(10, "write a checkpoint every N iterations (and always at the end / on Ctrl-C)")
    eval_episodes: int = _f(10, "deterministic evaluation episodes at the end of training (0 = skip)")
    eval_interval: int = _f(0, "also evaluate every this many env steps, logged as eval/return (0 = off)")
    eval_interval_episodes: int = _f(5, "episodes per evaluation during training")
    progress: bool = _f(True, "show a live progress bar")
    tensorboard: bool = _f(True, "write TensorBoard event files")
    stop_on_divergence: bool = _f(False, "stop (checkpoint kept, exit code 2) when approx_kl > 1 or the value loss "
                                         "> 1e6 or non-finite; else warn")
    preset: str = _f("default", "the preset (or config file) this config started from (informational)")

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
        return dict(map(env_kwarg, self.env_kwargs))

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

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        for name in _TUPLE_FIELDS:
            if d[name] is not None:
                d[name] = list(d[name])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        for name in d:
            field_name(name)  # an unknown field is named with the closest valid one
        return cls(**d)  # lists become tuples in __post_init__

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
# lower bounds of counts and coefficients; fields that are off with none must be > 0 otherwise
_AT_LEAST = {"num_envs": 1, "num_steps": 1, "update_epochs": 1, "num_minibatches": 1, "checkpoint_every": 1,
             "eval_interval_episodes": 1, "env_threads": 0, "seed": 0, "torch_threads": 0, "eval_episodes": 0,
             "eval_interval": 0, "zero_signal_threshold": 0, "ent_coef": 0, "vf_coef": 0, "kl_coef": 0}
_POSITIVE_OR_NONE = ("lr_decay_steps", "lr_adapt_kl", "target_kl")


def _need(cond: bool, msg: str):
    if not cond:
        raise ConfigError(msg)


def _validate(c: Config):
    # every value of its declared type and every float finite: a NaN, inf or a string from a file or the
    # Python API stops here with the field's name, not deep inside training
    for f in dataclasses.fields(c):
        v, choices = getattr(c, f.name), f.metadata.get("choices")
        _need(not (msg := type_error(f, v)), msg)
        _need(not choices or v in choices, f"{f.name}={v!r} is not one of {list(choices or ())}")
    for name, low in _AT_LEAST.items():
        _need(getattr(c, name) >= low, f"{name} must be >= {low} (got {getattr(c, name)})")
    for name in _POSITIVE_OR_NONE:
        _need(getattr(c, name) is None or getattr(c, name) > 0, f"{name} must be > 0 or none (got {getattr(c, name)})")
    _need(c.total_steps > 0, f"total_steps must be > 0 (got {c.total_steps})")
    _need(0 < c.lr <= 1, f"lr must be in (0, 1] (got {c.lr}); Adam's usual range is 1e-5 to 1e-2")
    _need(0 < c.adam_eps < 1, f"adam_eps must be in (0, 1) (got {c.adam_eps})")
    _need(c.max_grad_norm > 0, f"max_grad_norm must be > 0 (got {c.max_grad_norm}); a very large value turns "
                               f"clipping off")
    _need(c.run_name is None or (c.run_name.strip() not in ("", ".", "..") and "/" not in c.run_name
                                 and "\\" not in c.run_name),
          f"run_name must be a plain folder name, no '/' (got {c.run_name!r}); put folders in --out-dir")
    _need(0.0 <= c.lr_floor <= 1.0, f"lr_floor must be in [0, 1], a fraction of lr (got {c.lr_floor})")
    _need(c.lr_adapt_kl is None or not c.anneal_lr,
          "lr_adapt_kl adapts the learning rate itself; add --no-anneal-lr (or drop --lr-adapt-kl)")
    _need(0.0 <= c.gamma <= 1.0, f"gamma must be in [0, 1] (got {c.gamma})")
    _need(0.0 <= c.gae_lambda <= 1.0, f"gae_lambda must be in [0, 1] (got {c.gae_lambda})")
    _need(0.0 < c.clip_coef < 1.0, f"clip_coef must be in (0, 1) (got {c.clip_coef})")
    _need(c.dual_clip is None or c.dual_clip > 1.0,
          f"dual_clip must be > 1 (the lower bound is c*A for A < 0), or none to disable it (got {c.dual_clip})")
    c.env_kwargs_dict  # raises for an item that is not key=value
    for name in _TUPLE_FIELDS[:3]:
        v = getattr(c, name)
        _need((v is None and name != "hidden_sizes") or (v is not None and len(v) >= 1 and all(int(h) > 0 for h in v)),
              f"{name} must be positive integers, e.g. 64,64 (got {v})")
    _need(c.log_std_min < c.log_std_max, "log_std_min must be below log_std_max")
    _need(c.log_std_min <= c.init_log_std <= c.log_std_max,
          f"init_log_std={c.init_log_std} must lie inside [log_std_min, log_std_max]")
    _need(c.obs_clip > 0 and c.reward_clip > 0, "obs_clip and reward_clip must be > 0")
    _need(c.device in ("auto", "cpu", "cuda") or (c.device.startswith("cuda:") and c.device[5:].isdigit()),
          f"device must be cpu, cuda, cuda:N or auto (got {c.device!r})")
    # each algorithm's own rules, through the registry's view (values.ALGORITHMS: the package's __init__
    # registers the algorithms before any Config is built; this module cannot import them, they import it)
    _need(c.algo in ALGORITHMS, f"algo={c.algo!r} is not one of {sorted(ALGORITHMS)}")
    ALGORITHMS[c.algo].check_config(c)
    if c.parallel_critic == "on":
        _check_parallel_critic(c)


def _check_parallel_critic(c: Config):
    """What ``parallel_critic=on`` cannot split: the two processes step in lockstep only when neither half needs
    the other's numbers before the update ends (critic_process.py)."""
    _need(ALGORITHMS[c.algo].splits_critic, f"parallel_critic=on: algo={c.algo} has no critic update to run in "
                                            f"a second process; use --parallel-critic auto or off")
    _need(c.torch_threads == 1, f"parallel_critic=on runs each half of the update on one thread; set "
                                f"--torch-threads 1 (got {c.torch_threads}) or --parallel-critic off")
    _need(c.target_kl is None, "parallel_critic=on: target_kl stops the epochs on the policy's KL, which the "
                               "critic's process does not see; drop --target-kl or use --parallel-critic off")
    _need(not c.adv_every_epoch, "parallel_critic=on: adv_every_epoch needs the updated critic between epochs; "
                                 "drop --adv-every-epoch or use --parallel-critic off")
    _need(c.compile != "on", "parallel_critic=on runs the loss eagerly; use --compile off (or auto), or "
                             "--parallel-critic off")
    _need(not c.device.startswith("cuda"), "parallel_critic=on runs the critic on the CPU; use --device cpu or "
                                           "--parallel-critic off")


register_schema(Config)


def make_config(preset: str = "default", **overrides) -> Config:
    """A Config from a preset (a built-in name or a TOML file, see ``presets``), its task row for ``env_id``,
    then ``overrides``."""
    return Config(**presets.resolved(preset, overrides))
