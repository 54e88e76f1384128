"""The update's work after ``loss.backward()``, one op per buffer instead of one per parameter.

With the classic preset's networks (13 parameter tensors) and 64-sample minibatches, zeroing the
gradients, clipping them per network and Adam's step cost more in per-tensor overhead than in
arithmetic: ``torch.optim.Adam.step`` alone spent ~100 µs a minibatch, ~30 of them advancing 13
step counters.  :class:`FlatAdam` makes the parameters, their gradients and the optimizer's moments
and step counters views of one buffer each, and steps the flat buffers with torch.optim's own Adam
(the functional ``torch.optim.adam.adam``, with the param group's settings; a few small tensors stay
separate in that call, see ``__init__``): the same elementwise update, bit for bit, as ``optimizer.step()``
(tests/test_flat.py).  The optimizer stays the object that is checkpointed:
its ``state`` holds the views, so its ``state_dict`` is unchanged.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import List, Optional

import torch
from torch import nn
from torch.optim.adam import adam

_ALIGN = 16  # elements: 64 bytes of float32


class FlatAdam:
    """Flat views of ``optimizer`` (a ``torch.optim.Adam`` with state for every parameter) over ``groups``,
    the networks' parameter lists; build it with :func:`flat_adam`."""

    def __init__(self, optimizer: torch.optim.Adam, groups: List[List[nn.Parameter]]):
        self.optimizer, self.group = optimizer, optimizer.param_groups[0]
        self.params = [p for g in groups for p in g]
        state = {p: optimizer.state[p] for p in self.params}
        # Each network's span of the buffers: first its parameters whose size is a multiple of _ALIGN, stepped as
        # one tensor, then the others, each stepped as a tensor of its own. The CPU kernels treat the last
        # size % vector-width elements of a tensor in scalar code, which rounds Adam's step differently from
        # their vector code: a parameter whose size leaves such a tail keeps its own tensor in the step, and
        # every view starts on a 64-byte boundary, so the step and the gradient norms are bit-identical to
        # ``optimizer.step()`` and ``clip_grad_norms`` on separate tensors.
        bulk = [[p for p in g if p.numel() % _ALIGN == 0] for g in groups]
        layout = [b + [p for p in g if p.numel() % _ALIGN] for g, b in zip(groups, bulk)]
        offset, n = {}, 0
        for p in (p for g in layout for p in g):
            offset[p] = n
            n += -(-p.numel() // _ALIGN) * _ALIGN
        like = self.params[0]
        self.P, self.G, self.EA, self.EAS = bufs = [like.new_zeros(n) for _ in range(4)]  # the gaps stay 0
        self.steps = torch.stack([state[p]["step"] for p in self.params])  # each parameter's counter: one element
        self.segments, self._lists = [], [[], [], [], []]  # per network (gradient span, parameters); Adam's tensors
        with torch.no_grad():
            for g, b, order in zip(groups, bulk, layout):
                i = offset[order[0]]
                if b:
                    j = offset[b[-1]] + b[-1].numel()
                    for lst, buf in zip(self._lists, bufs):
                        lst.append(buf[i:j])
                for p in order:
                    s, k = state[p], offset[p]
                    view = lambda buf: buf[k:k + p.numel()].view_as(p)  # noqa: E731
                    view(self.P).copy_(p)
                    if p.grad is not None:  # built between backward and the first step (flat_adam's init)
                        view(self.G).copy_(p.grad)
                    view(self.EA).copy_(s["exp_avg"])
                    view(self.EAS).copy_(s["exp_avg_sq"])
                    p.data = view(self.P)
                    p.grad = view(self.G)  # backward accumulates into it in place
                    s["exp_avg"], s["exp_avg_sq"] = view(self.EA), view(self.EAS)
                    if p.numel() % _ALIGN:
                        for lst, buf in zip(self._lists, bufs):
                            lst.append(view(buf))
                last = order[-1]
                self.segments.append((self.G[i:offset[last] + last.numel()], len(g)))
        for k, p in enumerate(self.params):
            state[p]["step"] = self.steps[k]
        self.step_ts = [self.steps[0].clone() for _ in self._lists[0]]  # the counters the flat step advances
        self.grads = [p.grad for p in self.params]
        self.segs, self.counts = [seg for seg, _ in self.segments], [n for _, n in self.segments]
        # the fused kernel called directly (``step``): plain Adam (no decoupled decay) with float settings, on a
        # device whose fused kernel torch has; anything else goes through torch.optim's functional ``adam``
        group = self.group
        self._fused = bool(group["fused"]) and hasattr(torch, "_fused_adam_") \
            and not group.get("decoupled_weight_decay", False) and not group["capturable"] \
            and not group["differentiable"] and like.device.type in ("cpu", "cuda") \
            and all(isinstance(x, (int, float)) for x in (group["eps"], group["weight_decay"], *group["betas"]))
        self._views = [(state[p]["exp_avg"], state[p]["exp_avg_sq"], state[p]["step"]) for p in self.params]

    def intact(self, groups: List[List[nn.Parameter]]) -> bool:
        """Whether the views still stand (a ``load_state_dict`` of the optimizer or ``zero_grad()`` replaces them)."""
        if not _same([p for g in groups for p in g], self.params) or self.optimizer.param_groups[0] is not self.group:
            return False
        ptr = self.P.untyped_storage().data_ptr()
        for p, g, (ea, eas, st), s in zip(self.params, self.grads, self._views, self._states()):
            if p.grad is not g or p.untyped_storage().data_ptr() != ptr or s.get("exp_avg") is not ea \
                    or s.get("exp_avg_sq") is not eas or s.get("step") is not st:
                return False
        return True

    def _states(self):
        return (self.optimizer.state[p] for p in self.params)

    def zero_grad(self) -> None:
        self.G.zero_()

    @torch.no_grad()
    def clip_grad_norms(self, max_norm: float) -> None:
        """:func:`clip_grad_norms` on the flat gradients: the same norms (per parameter, then per network),
        each network's gradients scaled by one (foreach) multiply of its segment."""
        coefs = clip_coefs(torch._foreach_norm(self.grads, 2.0), self.counts, max_norm)
        torch._foreach_mul_(self.segs, coefs)

    @torch.no_grad()
    def step(self) -> None:
        """``optimizer.step()`` over the flat buffers (``adam`` is what ``torch.optim.Adam.step`` calls). With
        ``fused=True`` (the run's default on the CPU) the fused kernel is called as ``adam`` calls it once its
        Python has checked the arguments and grouped the tensors by device, which for these few tensors of one
        device cost about as much as the kernel (tests/test_flat.py: the same numbers as ``optimizer.step()``)."""
        g, (p, grad, ea, eas) = self.group, self._lists
        if self._fused and not isinstance(g["lr"], torch.Tensor):
            torch._foreach_add_(self.step_ts, 1)
            torch._fused_adam_(p, grad, ea, eas, [], self.step_ts, amsgrad=False, lr=g["lr"], beta1=g["betas"][0],
                               beta2=g["betas"][1], weight_decay=g["weight_decay"], eps=g["eps"],
                               maximize=g["maximize"], grad_scale=None, found_inf=None)
            self.steps.copy_(self.step_ts[0])
            return
        adam(p, grad, ea, eas, [], self.step_ts, amsgrad=False, has_complex=False,
             beta1=g["betas"][0], beta2=g["betas"][1], lr=g["lr"], weight_decay=g["weight_decay"], eps=g["eps"],
             maximize=g["maximize"], foreach=g["foreach"], capturable=g["capturable"], differentiable=False,
             fused=g["fused"], grad_scale=None, found_inf=None, decoupled_weight_decay=g["decoupled_weight_decay"])
        self.steps.copy_(self.step_ts[0])


class MinibatchStep:
    """One minibatch's ``loss.backward()``, ``clip_grad_norm_`` on each network of ``groups`` (their parameter
    lists) separately and ``optimizer.step()``: the step from the run's first minibatch on, the zeroing of the
    gradients and the clipping from the second, on the flat buffers of :class:`FlatAdam`."""

    def __init__(self, optimizer: torch.optim.Optimizer, groups: List[List[nn.Parameter]]):
        self.optimizer, self.groups = optimizer, groups
        self.params = [p for g in groups for p in g]
        self.flat, self.tried = flat_adam(optimizer, groups), False

    def __call__(self, loss: torch.Tensor, max_grad_norm: float) -> None:
        if self.flat is not None:
            self.flat.zero_grad()
            backward(loss)
            self.flat.clip_grad_norms(max_grad_norm)
            self.flat.step()
            return
        for p in self.params:  # optimizer.zero_grad(set_to_none=True) without its wrappers' cost
            p.grad = None
        backward(loss)
        clip_grad_norms(self.groups, max_grad_norm)
        if not self.tried:  # a run's first step makes Adam's state (flat_adam's init), then steps flat
            self.flat, self.tried = flat_adam(self.optimizer, self.groups, init=True), True
        if self.flat is not None:
            self.flat.step()
        else:
            self.optimizer.step()


_ENGINE = getattr(getattr(torch.autograd, "Variable", None), "_execution_engine", None)


def backward(loss: torch.Tensor) -> None:
    """``loss.backward()``: the same autograd engine and gradients, called as ``torch.autograd.backward`` calls it
    but, for a CPU loss, without the Python context it stashes for the engine's device threads. A CPU graph runs
    in the calling thread, and with the stash the engine's backward of a 64-sample classic minibatch took ~15%
    longer (~30 µs of ~200, CPU time); gradients are bit for bit those of ``loss.backward()``
    (tests/test_flat.py). Anything else (an accelerator, a tensor subclass, a torch without the engine
    handle) goes through ``loss.backward()``."""
    if _ENGINE is None or loss.device.type != "cpu" or type(loss) is not torch.Tensor or loss.grad_fn is None:
        loss.backward()
        return
    _ENGINE.run_backward((loss,), (torch.ones_like(loss, memory_format=torch.preserve_format),), False, False, (),
                         allow_unreachable=True, accumulate_grad=True)


@torch.no_grad()
def clip_grad_norms(groups: List[List[nn.Parameter]], max_norm: float) -> None:
    """``nn.utils.clip_grad_norm_(g, max_norm, foreach=True)`` for each parameter group ``g`` (each network
    clipped by its own norm), the same arithmetic with one ``_foreach_norm`` pass for all the groups: at
    64-sample minibatches clip_grad_norm_'s Python (grouping by device, two calls a network) cost more
    than its arithmetic."""
    grads = [[p.grad for p in g if p.grad is not None] for g in groups]
    grads = [g for g in grads if g]  # a network without gradients is left alone, as clip_grad_norm_ does
    if not grads:
        return
    norms = torch._foreach_norm([x for g in grads for x in g], 2.0)
    for g, coef in zip(grads, clip_coefs(norms, [len(g) for g in grads], max_norm)):
        torch._foreach_mul_(g, coef)


def clip_coefs(norms: List[torch.Tensor], counts: List[int], max_norm: float) -> List[torch.Tensor]:
    """clip_grad_norm_'s factor per network: ``norms`` holds each parameter's gradient norm, network after
    network, ``counts`` how many belong to each; the factor is min(1, max_norm / (total norm + 1e-6)).

    clip_grad_norm_'s arithmetic (``vector_norm`` of the stacked norms, ``max_norm / x`` as torch computes it,
    ``reciprocal(x) * max_norm``, then ``clamp(max=1)``) with one foreach call per op for all the networks:
    the same numbers, fewer calls."""
    stacked, i = [], 0
    for n in counts:
        stacked.append(torch.stack(norms[i:i + n]))
        i += n
    coefs = torch._foreach_norm(stacked, 2.0)
    torch._foreach_add_(coefs, 1e-6)
    torch._foreach_reciprocal_(coefs)
    torch._foreach_mul_(coefs, float(max_norm))
    torch._foreach_clamp_max_(coefs, 1.0)
    return coefs


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def flat_adam(optimizer: torch.optim.Optimizer, groups: List[List[nn.Parameter]],
              init: bool = False) -> Optional[FlatAdam]:
    """The :class:`FlatAdam` of ``optimizer`` over ``groups`` (kept on the optimizer and reused while its
    views stand), or None where the plain loop must run: another optimizer, amsgrad, several param groups,
    mixed devices or dtypes, or before Adam has state, with one step count, for every parameter (a
    parameter that gets no gradient keeps no state, and the flat step would move its moments).

    ``init``: where no parameter has state yet and every one has a gradient (between the run's first
    backward and its first step), create the state first with Adam's own lazy initialisation, the one
    ``optimizer.step()`` runs, so the first step is a flat one too (``optimizer.step()`` imports
    torch._dynamo: see :func:`no_dynamo_import`)."""
    cached = getattr(optimizer, "_flat_adam", None)
    if cached is not None and cached.intact(groups):
        return cached
    params = [p for g in groups for p in g]
    if type(optimizer) is not torch.optim.Adam or len(optimizer.param_groups) != 1:
        return None
    group = optimizer.param_groups[0]
    if not _same(group["params"], params) or group["amsgrad"] or group["differentiable"] or not params:
        return None
    if any(p.device != params[0].device or p.dtype != params[0].dtype or not p.requires_grad for p in params):
        return None
    if init and not optimizer.state and all(p.grad is not None for p in params):
        optimizer._init_group(group, [], [], [], [], [], [])  # noqa: SLF001 - what Adam.step() calls first
    state = [optimizer.state.get(p, {}) for p in params]
    if any(set(s) != {"step", "exp_avg", "exp_avg_sq"} for s in state):
        return None
    if any(s["step"].shape != () or not torch.equal(s["step"], state[0]["step"]) for s in state):
        return None
    optimizer._flat_adam = FlatAdam(optimizer, groups)  # noqa: SLF001 - reused by the next update
    return optimizer._flat_adam


# torch.optim.Optimizer's methods that torch wraps in ``torch._disable_dynamo``
_DYNAMO_DISABLED = ("add_param_group", "state_dict", "load_state_dict")


@contextmanager
def no_dynamo_import():
    """Inside this block, building a ``torch.optim`` optimizer, its ``state_dict`` and ``load_state_dict`` do
    not import ``torch._dynamo``.

    torch marks those methods "not to be traced by torch.compile" with ``torch._disable_dynamo``, which
    imports torch._dynamo at the first call to build the marker: ~1.2 s of CPU here, a tenth of a whole
    40,960-step classic run that never compiles.  While torch._dynamo is not imported nothing can be
    tracing, and the marker would call the method as it is: here it is told to, through the attribute it
    caches the marked method under (``torch/_compile.py``), which is removed again at the end of the block.
    Once torch._dynamo is imported (a compiled run) the block changes nothing."""
    fns = []
    if "torch._dynamo" not in sys.modules:
        fns = [getattr(getattr(torch.optim.Optimizer, name), "__wrapped__", None) for name in _DYNAMO_DISABLED]
        fns = [f for f in fns if f is not None and not hasattr(f, "__dynamo_disable")]
    for f in fns:
        setattr(f, "__dynamo_disable", f)
    try:
        yield
    finally:
        for f in fns:
            if getattr(f, "__dynamo_disable", None) is f:
                delattr(f, "__dynamo_disable")
