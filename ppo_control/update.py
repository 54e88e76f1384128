"""The epoch x minibatch update loop shared by PPO and GRPO: the loss, ``loss.backward()``,
per-network gradient clipping, a ``torch.optim`` step.

Which terms a run trains is the algorithm's ``LossTerms`` (``Algorithm.loss_terms``): ``value`` (PPO's
critic loss), ``weighted`` (GRPO's 1/(G*len_i) averaging, ``weights`` in the data), ``kl_ref``
(GRPO's KL to the reference policy, ``ref_logprobs`` in the data, trained where ``kl_coef > 0``);
``dual_clip`` is a parameter.  To add a loss term, add it to ``loss`` in :func:`minibatch_loss`
(and its value to ``stats`` if it should be logged); autograd does the rest.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.util
import shutil
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import nn

from .config import Config
from .flat import MinibatchStep, no_dynamo_import
from .losses import clipped_surrogate, dual_clip_active, kl_k3, value_loss, weighted_mean
from .networks import GaussianPolicy, ValueNet


class NonFiniteError(FloatingPointError):
    """A loss or parameter became NaN/inf."""


@dataclass(frozen=True)
class LossTerms:
    """The terms of :func:`minibatch_loss` an algorithm trains (``Algorithm.loss_terms``), and so the batch
    fields ``update`` reads. The clipped surrogate and the entropy bonus are always there."""
    value: bool = False      # + vf_coef * the critic's value loss (batch: returns, values)
    kl_ref: bool = False     # + kl_coef * k3 KL to a reference policy, logged as grpo/kl_ref (batch: ref_logprobs)
    weighted: bool = False   # per-step loss weights (batch: weights); without, plain means over the minibatch


def _normalise(adv: torch.Tensor) -> torch.Tensor:
    if adv.numel() < 2:
        return adv
    std, mean = torch.std_mean(adv)
    return (adv - mean) / (std + 1e-8)


def _pack(data: dict, keys: List[str]):
    """Concatenate the batch's fields into one ``[B, F]`` table (so a shuffle is one gather)
    and return it with each field's column slice (2-D fields) or column index (1-D fields)."""
    cols, parts, c = {}, [], 0
    for key in keys:
        x = data[key]
        if x.dim() == 1:
            cols[key], c = c, c + 1
            parts.append(x[:, None])
        else:
            cols[key], c = slice(c, c + x.shape[1]), c + x.shape[1]
            parts.append(x)
    return torch.cat(parts, 1), cols


def minibatch_loss(policy: GaussianPolicy, critic: Optional[ValueNet], mb: Dict[str, torch.Tensor], cfg: Config,
                   norm_adv: bool, terms: LossTerms) -> Tuple[torch.Tensor, Dict[str, torch.Tensor], torch.Tensor,
                                                              torch.Tensor]:
    """The loss that is optimised, for one minibatch ``mb`` of ``[b, ...]`` tensors:

        loss = weighted_mean(clipped_surrogate) - ent_coef * weighted_mean(entropy)
               [+ vf_coef * value_term]  [+ kl_coef * weighted_mean(kl_k3)]

    with the bracketed terms where ``terms`` has them (weights where ``terms.weighted``).

    Returns ``(loss, stats, logratio [b], advantages used [b])``; stats are detached scalars.
    """
    logp, ent = policy.log_prob_entropy(mb["obs"], mb["actions"])
    logratio = logp - mb["logprobs"]
    ratio = logratio.exp()
    adv = _normalise(mb["advantages"]) if norm_adv else mb["advantages"]
    w = mb["weights"] if terms.weighted else None
    pg = weighted_mean(clipped_surrogate(ratio, adv, cfg.clip_coef, cfg.dual_clip), w)
    if cfg.ent_coef:
        entropy = weighted_mean(ent, w)
        loss = pg - cfg.ent_coef * entropy
    else:  # logged, not optimised: a zero-weighted term only adds backward work (the same loss and gradients)
        entropy = weighted_mean(ent.detach(), w)
        loss = pg
    stats = {"losses/policy_loss": pg, "losses/entropy": entropy}
    if terms.value:
        vl = value_term(critic, mb, cfg)
        loss = loss + cfg.vf_coef * vl
        stats["losses/value_loss"] = vl
    if terms.kl_ref:
        kl = weighted_mean(kl_k3(logp, mb["ref_logprobs"]), w)
        if cfg.kl_coef > 0:
            loss = loss + cfg.kl_coef * kl
        stats["grpo/kl_ref"] = kl
    return loss, {k: v.detach() for k, v in stats.items()}, logratio.detach(), adv


def value_term(critic: ValueNet, mb: Dict[str, torch.Tensor], cfg: Config) -> torch.Tensor:
    """PPO's value loss on one minibatch (a scalar): the mean of ``losses.value_loss`` over ``[b]``, taken in the
    space the critic's net fits (``critic.normalize``: identity unless value_norm), clipped where clip_vloss.
    :func:`minibatch_loss` adds ``vf_coef`` times it; a split update's critic process optimises that product."""
    vclip = cfg.clip_coef if cfg.clip_vloss else None
    n = critic.normalize
    return value_loss(n(critic(mb["obs"])), n(mb["returns"]), n(mb["values"]), vclip).mean()


def shuffled_minibatches(table: torch.Tensor, col: dict, generator: torch.Generator, epochs: int, n_mb: int,
                         refresh: Optional[Callable[[], Dict[str, torch.Tensor]]] = None, normalise: Optional[str] = None):
    """Per epoch, the list of ``n_mb`` minibatches of one shuffle of ``table``'s ``[B, F]`` rows (a
    ``torch.randperm`` from ``generator``): dicts of ``[b, ...]`` views, one per field of ``col`` (``_pack``).
    ``refresh`` (see :func:`update`) rewrites its fields before every epoch after the first. ``normalise``: a 1-D
    field given to each minibatch normalised over that minibatch (what ``minibatch_loss`` does with ``norm_adv``),
    every minibatch of the epoch in one op: the same numbers (tests/test_update.py)."""
    B = table.shape[0]
    b = B // n_mb
    for epoch in range(epochs):
        if refresh is not None and epoch > 0:
            for key, x in refresh().items():
                table[:, col[key]] = x
        shuffled = table[torch.randperm(B, generator=generator).to(table.device)]
        if normalise is not None and b >= 2:
            x = shuffled[:n_mb * b, col[normalise]].view(n_mb, b)
            std, mean = torch.std_mean(x, dim=1, keepdim=True)
            x.sub_(mean).div_(std + 1e-8)
        # every minibatch's field views made once per epoch (one split per field, not a slice per minibatch)
        parts = {key: shuffled[:, c].split(b) for key, c in col.items()}
        yield [{key: v[k] for key, v in parts.items()} for k in range(n_mb)]


def update(policy: GaussianPolicy, critic: Optional[ValueNet], optimizer: torch.optim.Optimizer,
           data: dict, cfg: Config, generator: torch.Generator, norm_adv: bool,
           refresh: Optional[Callable[[], Dict[str, torch.Tensor]]] = None, compiled: Optional[bool] = None, *,
           terms: LossTerms, critic_process=None) -> dict:
    """Optimise on one batch. ``data`` holds flat ``[B, ...]`` tensors (see ``Batch.flat``); ``terms`` (the
    algorithm's ``loss_terms``) says which loss terms are trained and so which of its fields are read.

    Per minibatch: :func:`minibatch_loss`, then :class:`MinibatchStep` (``loss.backward()``, ``clip_grad_norm_``
    on the policy and the critic separately, ``optimizer.step()``).  ``refresh`` (PPO's ``adv_every_epoch``)
    returns new flat ``advantages`` and ``returns`` before every epoch after the first.  ``compiled``
    runs the loss through ``torch.compile`` (default: ``cfg.compile == "on"``; training passes
    :func:`compile_decision`, which also resolves ``"auto"``).  ``critic_process`` (a
    ``critic_process.CriticProcess``, PPO's ``parallel_critic``): the critic's ``vf_coef * value_term`` is
    optimised there, on the same minibatches, while this process optimises the policy's terms; the networks
    share no parameter and Adam is elementwise, so parameters, Adam's state and statistics are those of the
    one-process update, bit for bit.
    Statistics stay on the device until the end (no host sync per minibatch unless
    ``target_kl`` needs one).  Returns the mean of each statistic over the minibatches that ran.
    """
    keys = ["obs", "actions", "logprobs", "advantages"]
    keys += ["weights"] * terms.weighted + ["ref_logprobs"] * terms.kl_ref
    keys += ["returns", "values"] if terms.value else []
    table, col = _pack(data, keys)
    n_mb = min(cfg.num_minibatches, table.shape[0])
    compiled = cfg.compile == "on" if compiled is None else compiled
    loss_fn = compiled_loss() if compiled else minibatch_loss
    if critic_process is not None:
        if compiled or refresh is not None or cfg.target_kl is not None or not terms.value or terms.kl_ref:
            raise ValueError("a split update needs an eager loss with a value term, no refresh and no target_kl")
        critic_process.start(cfg, table, col, n_mb, generator, critic, optimizer)
        step = MinibatchStep(critic_process.policy_optimizer(optimizer, policy), [list(policy.parameters())])
        loss_critic, terms = None, dataclasses.replace(terms, value=False)
    else:
        nets = [policy] + ([critic] if critic is not None else [])
        step, loss_critic = MinibatchStep(optimizer, [list(n.parameters()) for n in nets]), critic
    stats, logratios, advs = [], [], []
    epoch, stop = 0, False
    # eager: the advantages normalised per minibatch in one op per epoch (the compiled loss keeps its own, the
    # arithmetic it was traced with)
    pre = norm_adv and not compiled
    minibatch_lists = shuffled_minibatches(table, col, generator, cfg.update_epochs, n_mb, refresh,
                                           normalise="advantages" if pre else None)
    for epoch, minibatches in enumerate(minibatch_lists):
        for mb in minibatches:
            loss, st, logratio, adv = loss_fn(policy, loss_critic, mb, cfg, norm_adv and not pre, terms)
            step(loss, cfg.max_grad_norm)
            stats += st.values()
            logratios.append(logratio)
            advs.append(adv)
            if cfg.target_kl is not None and float(((logratio.exp() - 1.0) - logratio).mean()) > cfg.target_kl:
                stop = True
                break
        if stop:
            break
    names, per_mb = list(st), torch.stack(stats).view(-1, len(st))  # [minibatches, stats]
    if critic_process is not None:  # the value loss joins the table where the one-process update has it
        names.append("losses/value_loss")
        per_mb = torch.cat([per_mb, critic_process.finish(critic, optimizer)[:, None]], 1)
    return _summary(names, per_mb, logratios, advs, cfg, epoch, stop)


def _summary(names: List[str], per_mb: torch.Tensor, logratios: list, advs: list, cfg: Config, epoch: int,
             stop: bool) -> dict:
    """The update's statistics: the mean of each column of ``per_mb`` ``[minibatches, stats]`` and those of the
    ratios (``logratios``, ``advs``: ``[b]`` per minibatch)."""
    means = per_mb.mean(0)
    if not torch.isfinite(means).all():
        raise NonFiniteError(f"non-finite loss in the update ({dict(zip(names, means.tolist()))})")
    out = dict(zip(names, means.tolist()))
    lr_ = torch.stack(logratios)
    ratio = lr_.exp()
    out["losses/approx_kl"] = float(((ratio - 1.0) - lr_).mean())  # k3 estimate of KL(old || new)
    out["losses/clipfrac"] = float(((ratio - 1.0).abs() > cfg.clip_coef).float().mean())
    out["losses/dual_clip_frac"] = 0.0 if cfg.dual_clip is None else float(
        dual_clip_active(ratio, torch.stack(advs), cfg.clip_coef, cfg.dual_clip).float().mean())
    out["losses/epochs"] = epoch + 1
    out["losses/early_stop"] = float(stop)
    return out


# compile="auto" turns torch.compile on for PPO runs of at least this many minibatch updates: it saves
# ~0.4 ms per update on the CPU (benchmarks/update_speed.py, wall_1m.py) against a one-off ~15-20 s compile
# (~2 s with inductor's disk cache warm): it pays from ~5,000 updates with the cache warm, ~40,000 cold
COMPILE_MIN_UPDATES = 10_000
_COMPILED: dict = {}


def compile_decision(cfg: Config, device: torch.device, algorithm, splits: bool = False) -> Tuple[bool, str]:
    """Whether the update's loss runs through ``torch.compile`` for ``cfg`` on ``device``, and why;
    ``algorithm`` (the ``Algorithm`` class of ``cfg.algo``) says how many updates the run makes; ``splits``:
    whether the eager update would run the critic's half in a second process
    (``critic_process.run_plans`` decides both)."""
    if cfg.compile != "auto":
        return cfg.compile == "on", f"compile={cfg.compile}"
    if cfg.parallel_critic == "on":
        return False, "auto: off, parallel_critic=on runs the loss eagerly"
    n = algorithm.planned_updates(cfg)
    if n is None:
        return False, f"auto: {algorithm.compile_auto_off}"
    if n < COMPILE_MIN_UPDATES:
        return False, f"auto: off, {n:,} minibatch updates < {COMPILE_MIN_UPDATES:,} (the compile would not pay)"
    if splits:
        # measured side by side (results/speed/wall_1m_fast_auto.md, wall_163k_split.md): eager with the critic on
        # the second core beats the compiled one-process update (fast 1M 38.8 s against 51.0 s warm)
        return False, "auto: off, the critic's update runs in a second process instead (faster than compiling)"
    missing = _compiler_missing(device)
    if missing:
        return False, f"auto: off, {missing}"
    return True, f"auto: on, {n:,} minibatch updates (the first one compiles: ~15-20 s, ~2 s cached)"


@functools.lru_cache(maxsize=None)
def _compiler_missing(device: torch.device) -> str:
    if device.type == "cpu" and not any(shutil.which(c) for c in ("g++", "c++", "clang++", "cl")):
        return "no C++ compiler on PATH for inductor's CPU code"
    if device.type == "cuda" and importlib.util.find_spec("triton") is None:
        return "triton is not installed for inductor's CUDA code"
    return ""


def abandon_compile_work() -> int:
    """Cancel inductor's queued C++ compile jobs (a stop during the first compile); returns how many.

    Inductor compiles kernels in a thread pool, and the interpreter joins that pool's threads at exit
    after they have run every queued job: a Ctrl-C or SIGTERM during a cold first compile waited
    15-20 s here for kernels nobody would use, and minutes on a loaded machine. The jobs already
    running finish (one g++ per thread; ``compile_work_running`` says whether they still are); a later
    compile in the same process gets a fresh pool."""
    mod = sys.modules.get("torch._inductor.async_compile")
    if mod is None or not mod.AsyncCompile.pool.cache_info().currsize:
        return 0
    pool = mod.AsyncCompile.pool()
    queued = pool._work_queue.qsize()  # noqa: SLF001 - only for the count; the cancel below is public API
    pool.shutdown(wait=False, cancel_futures=True)
    mod.AsyncCompile.pool.cache_clear()
    _COMPILED.setdefault("abandoned", []).append(pool)
    return queued


def compile_work_running() -> bool:
    """Whether a compile pool given up by ``abandon_compile_work`` still has a thread running a job."""
    return any(t.is_alive() for pool in _COMPILED.get("abandoned", ()) for t in pool._threads)  # noqa: SLF001


def compiled_loss():
    """``minibatch_loss`` through ``torch.compile`` (one per process; shapes that change, as GRPO's
    batches do, are traced once more as dynamic, then reused).  If inductor cannot build it (no
    compiler, an unsupported op), the loss runs eagerly from then on, with one line on stderr."""
    if "loss" not in _COMPILED:
        compiled = {}  # device type -> compiled loss

        def loss(*args):
            if _COMPILED.get("failed"):
                return minibatch_loss(*args)
            dev = next(args[0].parameters()).device.type
            if dev not in compiled:
                # on the CPU inductor's C++ wrapper calls the kernels without Python between them: 0.96x and 0.98x
                # the CPU time per compiled classic minibatch in two runs of 12 pairs, the same numbers bit for bit
                # (results/speed/cpp_wrapper.md)
                compiled[dev] = torch.compile(minibatch_loss, options={"cpp_wrapper": True} if dev == "cpu" else None)
            try:
                out = compiled[dev](*args)
            except Exception as e:  # noqa: BLE001 - any compile failure falls back to the same loss, eagerly
                if _COMPILED.get("worked"):
                    raise
                _COMPILED["failed"] = True
                print(f"ppo-control: torch.compile failed ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}); "
                      f"the loss runs eagerly (pass --compile off to skip the attempt)", file=sys.stderr)
                return minibatch_loss(*args)
            _COMPILED["worked"] = True
            return out
        _COMPILED["loss"] = loss
    return _COMPILED["loss"]


def make_optimizer(nets: List[nn.Module], cfg: Config) -> torch.optim.Adam:
    """One Adam over the policy (and critic) parameters; ``fused`` where the device supports it."""
    params = [p for n in nets for p in n.parameters()]
    with no_dynamo_import():
        return torch.optim.Adam(params, lr=cfg.lr, eps=cfg.adam_eps, **_fast_adam_kwargs(params[0].device))


def _fast_adam_kwargs(device: torch.device) -> dict:
    # fused measured fastest on the CPU (benchmarks/update_speed.py: foreach 1.17x, for-loop 1.24x the
    # time of fused per classic update); the CPU fused kernel exists from torch 2.4 on
    cpu_fused = tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 4)
    return {"fused": True} if device.type == "cuda" or cpu_fused else {"foreach": True}


def check_finite(*modules: nn.Module) -> None:
    for m in modules:
        if m is None:
            continue
        for name, p in m.named_parameters():
            if not torch.isfinite(p).all():
                raise NonFiniteError(f"parameter {type(m).__name__}.{name} became non-finite")
