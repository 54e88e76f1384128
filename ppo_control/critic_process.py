"""PPO's update on two cores: the critic's epochs in a forked process while this one runs the policy's.

PPO's loss is the policy's terms plus ``vf_coef * value_term``; the two networks share no parameter,
gradients are clipped per network and Adam is elementwise, so the critic's half of every minibatch
step needs nothing from the policy's.  The critic's process (forked when the run's ``TrainState`` is
built, before the envs start any thread) gets the packed batch and the shuffle generator's state, and
runs the same shuffles, minibatches and steps (``update.shuffled_minibatches``, ``flat.MinibatchStep``)
on its copy of the critic with an Adam of the same settings; the trainer steps an Adam over the policy
that keeps its per-parameter state in the run's one optimizer (the checkpointed one, format unchanged)
and copies the critic's parameters, Adam state and per-minibatch value losses back at the end of
the update.  Every number equals the one-process update's, bit for bit (tests/test_critic_process.py).

The worker ignores SIGINT and SIGTERM (a stop goes to the trainer, which checkpoints and then ends
it), runs one torch thread (a forked child entering an OpenMP pool started in its parent hangs; one
thread never enters it), and ends when its pipe closes, so it never outlives the trainer.
"""
from __future__ import annotations

import gc
import os
import pickle
import signal
import time
import weakref
from multiprocessing.connection import Pipe
from typing import Optional, Tuple

import torch

from .config import ConfigError
from .flat import MinibatchStep, no_dynamo_import
from .networks import make_critic
from .update import compile_decision, shuffled_minibatches, value_term

_STOPS = {signal.SIGINT, signal.SIGTERM}  # the trainer's to handle (train.stop_signals_as_interrupt)
_ADAM_KEYS = ("step", "exp_avg", "exp_avg_sq")  # Adam's per-parameter state, in the order Adam makes it
_LIVE: "weakref.WeakSet[CriticProcess]" = weakref.WeakSet()


class CriticProcessError(RuntimeError):
    """The critic's process failed or ended during an update."""


def parallel_critic_decision(cfg, device: torch.device, algorithm, compiled: bool) -> Tuple[bool, str]:
    """Whether a run of ``cfg`` puts the critic's update in a second process, and why (``algorithm``: the
    ``Algorithm`` class of ``cfg.algo``; ``compiled``: the run's resolved torch.compile decision)."""
    if cfg.parallel_critic != "auto":
        if cfg.parallel_critic == "on" and not hasattr(os, "fork"):
            raise ConfigError("parallel_critic=on forks a process, and this platform has no os.fork; use "
                              "--parallel-critic off")
        return cfg.parallel_critic == "on", f"parallel_critic={cfg.parallel_critic}"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    why = ("this algorithm has no critic" if not algorithm.uses_critic else
           "this algorithm's update does not split" if not algorithm.splits_critic else
           f"the networks are on {device}" if device.type != "cpu" else
           "no os.fork on this platform" if not hasattr(os, "fork") else
           f"{cores} usable core" if cores < 2 else
           f"torch_threads={cfg.torch_threads} (each half runs one thread)" if cfg.torch_threads != 1 else
           "target_kl stops the epochs on the policy's KL" if cfg.target_kl is not None else
           "adv_every_epoch needs the updated critic between epochs" if cfg.adv_every_epoch else
           "the loss is compiled (the split runs it eagerly)" if compiled else
           # torch's autograd starts a thread per accelerator at the first backward and from then on refuses
           # backward in a forked child ("Unable to handle autograd's threading in combination with fork")
           "an accelerator is present" if _accelerator_present() else "")
    if why:
        return False, f"auto: off, {why}"
    return True, f"auto: on, the critic's epochs in a second process ({cores} usable cores)"


def run_plans(cfg, device: torch.device, algorithm) -> Tuple[Tuple[bool, str], Tuple[bool, str]]:
    """(compile decision, parallel-critic decision) of a run: the split is weighed first, since where the
    critic can update in a second process, ``--compile auto`` keeps the loss eager."""
    plan = compile_decision(cfg, device, algorithm, splits=parallel_critic_decision(cfg, device, algorithm, False)[0])
    return plan, parallel_critic_decision(cfg, device, algorithm, plan[0])


def _accelerator_present() -> bool:
    acc = getattr(torch, "accelerator", None)
    return acc.is_available() if acc is not None else torch.cuda.is_available()


class CriticProcess:
    """A forked process that runs the critic's half of ``update.update`` (its ``critic_process``)."""

    def __init__(self):
        mine, theirs = Pipe()
        # a stop signal that lands during the fork must reach the trainer only: blocked until the child ignores it
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the caller's code
            code = 1
            try:
                mine.close()
                code = _serve(theirs, mask)
            finally:
                os._exit(code)
        theirs.close()
        self.pid, self._policy_opt, self._pending = pid, None, False
        self._proc = {"conn": mine, "pid": pid, "owner": os.getpid(), "reaped": None}
        self._close = weakref.finalize(self, _shutdown, self._proc)  # also at exit, if nobody closed it
        _LIVE.add(self)
        try:  # its first word: it ignores stop signals and has closed what it must not hold (the run's lock)
            self._recv()
        except BaseException:
            self.close()
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def policy_optimizer(self, optimizer: torch.optim.Optimizer, policy) -> torch.optim.Adam:
        """An Adam over the policy's parameters with ``optimizer``'s settings and per-parameter state (the same
        dicts: the policy's moments live in the run's one optimizer, which is checkpointed)."""
        params = list(policy.parameters())
        opt = self._policy_opt
        if opt is None or len(opt.param_groups[0]["params"]) != len(params) or \
                any(p is not q for p, q in zip(opt.param_groups[0]["params"], params)):
            opt = self._policy_opt = _adam(params, _settings(optimizer))
        opt.param_groups[0].update(_settings(optimizer))  # the lr of this iteration
        opt.state = optimizer.state  # re-linked each update: load_state_dict replaces the dict
        return opt

    def start(self, cfg, table: torch.Tensor, col: dict, n_mb: int, generator: torch.Generator, critic,
              optimizer: torch.optim.Optimizer) -> None:
        """Send the critic's half of an update: the packed ``[B, F]`` batch, the generator's state before the
        epochs' shuffles, the critic (parameters and buffers) and its Adam state in ``optimizer``."""
        if self._pending:  # the last update stopped before its end (an exception): its reply is of no use
            self._recv()
        params = list(critic.parameters())
        state = [optimizer.state.get(p) for p in params]
        adam = None if any(not s or tuple(s) != _ADAM_KEYS for s in state) else \
            [[s[k].detach().cpu().numpy() for k in _ADAM_KEYS] for s in state]
        self._send({"cfg": cfg, "table": table.numpy(), "col": col, "n_mb": n_mb,
                    "generator": generator.get_state().numpy(), "adam": adam, "settings": _settings(optimizer),
                    "critic": [t.numpy() for t in critic.state_dict().values()]})
        self._pending = True

    def finish(self, critic, optimizer: torch.optim.Optimizer) -> torch.Tensor:
        """Wait for the critic's half; copy its parameters into ``critic`` and its Adam state into ``optimizer``;
        return the value loss of each minibatch ``[minibatches]``."""
        out = self._recv()
        params = list(critic.parameters())
        with torch.no_grad():
            for p, a in zip(params, out["params"]):
                p.copy_(torch.from_numpy(a))
        for p, arrays in zip(params, out["adam"]):
            _set_adam_state(optimizer.state[p], arrays)
        return torch.from_numpy(out["value_loss"])

    def close(self) -> None:
        """End the worker (its work is of no use once the trainer stops) and reap it."""
        self._close()

    def _send(self, msg: dict) -> None:
        try:
            self._proc["conn"].send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, AttributeError):
            raise CriticProcessError(self._ended()) from None

    def _recv(self) -> dict:
        self._pending = False
        try:
            status, payload = pickle.loads(self._proc["conn"].recv_bytes())
        except (EOFError, OSError, AttributeError):
            raise CriticProcessError(self._ended()) from None
        if status != "ok":
            raise CriticProcessError(f"the critic's process failed in the update: {payload}")
        return payload

    def _ended(self) -> str:
        """One line on why the worker is gone: how it ended, and what to do."""
        proc, how = self._proc, "ended"
        for _ in range(100):  # its pipe closed as it ended: its exit status follows at once
            if proc["reaped"] is not None or proc["conn"] is None:
                break
            try:
                pid, status = os.waitpid(proc["pid"], os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its status is gone (and its pid is not ours to kill)
                proc["reaped"] = -1
                break
            if pid:
                proc["reaped"] = status
                break
            time.sleep(0.01)
        status = proc["reaped"]
        if status is not None and status >= 0:
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            how = f"was killed by {signal.Signals(sig).name}" if sig else f"exited with code {os.WEXITSTATUS(status)}"
        return f"the critic's process (pid {proc['pid']}) {how} during the update"


def _settings(optimizer: torch.optim.Optimizer) -> dict:
    return {k: v for k, v in optimizer.param_groups[0].items() if k != "params"}


def _adam(params, settings: dict) -> torch.optim.Adam:
    with no_dynamo_import():
        opt = torch.optim.Adam(params)
    opt.param_groups[0].update(settings)
    return opt


def _set_adam_state(s: dict, arrays) -> None:
    """Set one parameter's Adam state to ``arrays`` (step, exp_avg, exp_avg_sq): in place where it has them
    (FlatAdam's views stay valid), else as new tensors."""
    if tuple(s) == _ADAM_KEYS:
        for k, a in zip(_ADAM_KEYS, arrays):
            s[k].copy_(torch.from_numpy(a))
    else:
        s.clear()
        s.update({k: torch.from_numpy(a).clone() for k, a in zip(_ADAM_KEYS, arrays)})


# ---- the worker -------------------------------------------------------------------------------------------

def _serve(conn, mask) -> int:
    """The worker's loop: one reply per update message, until the pipe closes."""
    for sig in _STOPS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    gc.freeze()  # objects inherited from the trainer are never collected here (their finalisers are the trainer's)
    torch.set_num_threads(1)
    half = _CriticHalf()
    conn.send_bytes(pickle.dumps(("ok", "ready")))
    while True:
        try:
            msg = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return 0
        try:
            reply = ("ok", half.update(msg))
        except Exception as e:  # noqa: BLE001 - reported to the trainer, which raises it
            reply = ("error", f"{type(e).__name__}: {' '.join(str(e).split())}")
        try:
            conn.send_bytes(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            return 0


class _CriticHalf:
    """The worker's critic (built as the trainer's, by ``make_critic``) and the Adam that steps it."""

    def __init__(self):
        self.critic: Optional[torch.nn.Module] = None
        self.opt: Optional[torch.optim.Adam] = None

    def update(self, msg: dict) -> dict:
        cfg, col, table = msg["cfg"], msg["col"], torch.from_numpy(msg["table"])
        if self.critic is None:
            self.critic = make_critic(cfg, col["obs"].stop - col["obs"].start)
            self.opt = _adam(list(self.critic.parameters()), msg["settings"])
        critic, opt = self.critic, self.opt
        params = list(critic.parameters())
        with torch.no_grad():
            for t, a in zip(critic.state_dict().values(), msg["critic"]):
                t.copy_(torch.from_numpy(a))
        opt.param_groups[0].update(msg["settings"])
        if msg["adam"] is None:
            opt.state.clear()  # the run's first step makes it
        else:
            for p, arrays in zip(params, msg["adam"]):
                _set_adam_state(opt.state[p], arrays)
        generator = torch.Generator().set_state(torch.from_numpy(msg["generator"]))
        step, losses = MinibatchStep(opt, [params]), []
        for minibatches in shuffled_minibatches(table, col, generator, cfg.update_epochs, msg["n_mb"]):
            for mb in minibatches:
                vl = value_term(critic, mb, cfg)
                step(cfg.vf_coef * vl, cfg.max_grad_norm)
                losses.append(vl.detach())
        return {"value_loss": torch.stack(losses).numpy(), "params": [p.detach().numpy() for p in params],
                "adam": [[opt.state[p][k].numpy() for k in _ADAM_KEYS] for p in params]}


# ---- process hygiene --------------------------------------------------------------------------------------

def _shutdown(proc: dict) -> None:
    """Close the trainer's end of the pipe, kill the worker and reap it (only in the process that forked it)."""
    conn, proc["conn"] = proc["conn"], None
    if conn is None or os.getpid() != proc["owner"]:
        return
    conn.close()
    if proc["reaped"] is None:
        try:
            os.kill(proc["pid"], signal.SIGKILL)
            proc["reaped"] = os.waitpid(proc["pid"], 0)[1]
        except (ProcessLookupError, ChildProcessError):
            pass


def _after_fork_in_child() -> None:
    # a process forked later (another run's worker, an async env) must not hold a worker's pipe open: the
    # worker ends on EOF only when the trainer's end is closed in every process
    for cp in list(_LIVE):
        conn, cp._proc["conn"] = cp._proc["conn"], None
        if conn is not None:
            conn.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
