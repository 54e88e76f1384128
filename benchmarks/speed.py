"""Speed benchmarks, every number a side-by-side ratio from one run.

  python benchmarks/speed.py env      # (2) env-only steps/s: gymnasium sync/async, batched, EnvPool
                                      # (3) the raw physics limit on all cores, and each backend's share
  python benchmarks/speed.py ppo      # (1) end-to-end PPO (ppo_control.train) vs Stable-Baselines3 PPO
  python benchmarks/speed.py wall1m   # (4) 1M-step PPO wall time per vector-env backend

Each writes ``<out>.md`` and ``<out>.json`` (default ``results/speed/<subcommand>``) with the
command, git commit, CPU model, core count, versions, load average and wall time.
Measurements of one group (task, num_envs) are interleaved repeat by repeat, so that a
machine shared with other work slows every backend alike; tables show medians.
EnvPool and Stable-Baselines3 are benchmark-only extras (``pip install envpool
stable-baselines3``), never imported by ppo_control itself.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shlex
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np

from ppo_control.envs import VecEnv
from ppo_control.envs.batched import BatchedMujocoVecEnv, default_threads
from ppo_control.runinfo import environment_info

GYM_BACKENDS = ("sync", "async")
ENV_INTRO = ("Env steps/s (all envs counted), uniform random actions, median over repeats; in brackets the median "
             "share of the physics limit measured in the same repeat. Ratios are per repeat, then the median.\n")


# --- (2) env-only throughput ----------------------------------------------------------
class EnvPoolEnv:
    """EnvPool's gymnasium API behind reset/step (its own MuJoCo build and C++ threads)."""

    def __init__(self, env_id, num_envs, nthread):
        import envpool
        self.env = envpool.make_gymnasium(env_id, num_envs=num_envs, batch_size=num_envs, seed=0,
                                          num_threads=min(nthread, num_envs))
        self.num_envs, self.act_dim = num_envs, self.env.action_space.shape[0]
        self.action_low, self.action_high = self.env.action_space.low, self.env.action_space.high

    def reset(self, seed=None):
        return self.env.reset()[0]

    def step(self, actions):
        return self.env.step(actions)

    def close(self):
        self.env.close()


def make_backend(name, env_id, num_envs, nthread):
    if name in GYM_BACKENDS:
        return VecEnv(env_id, num_envs, name)
    if name == "batched":  # MuJoCo's thread pool on all cores (the default)
        return BatchedMujocoVecEnv(env_id, num_envs, nthread=nthread)
    if name == "batched1":  # one thread: better when other work keeps the cores busy
        return BatchedMujocoVecEnv(env_id, num_envs, nthread=1)
    if name == "envpool":
        return EnvPoolEnv(env_id, num_envs, nthread)
    raise ValueError(f"unknown backend {name!r}")


def env_throughput(env, steps: int, seed: int = 0) -> float:
    """Env steps/s (all envs counted) of ``steps`` vector steps with uniform random actions."""
    rng = np.random.default_rng(seed)
    acts = rng.uniform(env.action_low, env.action_high, size=(steps + 5, env.num_envs, env.act_dim))
    env.reset(seed=seed)
    for t in range(5):  # warm-up: first-call checks, page faults, thread pools
        env.step(acts[t])
    t0 = time.perf_counter()
    for t in range(5, steps + 5):
        env.step(acts[t])
    return steps * env.num_envs / (time.perf_counter() - t0)


# --- (3) the physics limit ----------------------------------------------------------
class PhysicsLimit:
    """Raw MuJoCo throughput with no Python between substeps, in env steps/s (substeps / frame_skip).

    one_thread: mj_step(nstep=frame_skip) on one MjData; ideal = one_thread * threads;
    rollout: mujoco.rollout on all threads; batch: mujoco.batch.Batch.rollout on all threads (the engine
    the batched backend uses).  Both run nbatch sims with uniform random controls held for frame_skip
    substeps, in one native call, from given states (the batched backend's own, so that the limit sees
    the contacts the benchmarked episodes have) or else gymnasium's reset states.  limit = the fastest.
    """

    def __init__(self, env_id: str, nbatch: int, steps: int, nthread: int):
        import gymnasium as gym
        import mujoco
        import mujoco.batch
        import mujoco.rollout
        self.mj, u = mujoco, gym.make(env_id).unwrapped
        self.m, self.fs, self.nbatch, self.steps, self.nthread = u.model, u.frame_skip, nbatch, steps, nthread
        full, integ = mujoco.mjtState.mjSTATE_FULLPHYSICS, mujoco.mjtState.mjSTATE_INTEGRATION
        self.states = np.empty((nbatch, mujoco.mj_stateSize(self.m, full)))
        self.rows = np.empty((nbatch, mujoco.mj_stateSize(self.m, integ)))
        for i in range(nbatch):  # gymnasium's reset states, as rollout's FULLPHYSICS and Batch's rows
            u.reset(seed=i)
            mujoco.mj_getState(self.m, u.data, self.states[i], full)
            mujoco.mj_getState(self.m, u.data, self.rows[i], integ)
        self.ro = mujoco.rollout.Rollout(nthread=nthread)
        self.datas = [mujoco.MjData(self.m) for _ in range(nthread)]
        self.batch = mujoco.batch.Batch(self.m, nbatch, nthread=nthread)
        self.state_out = np.empty((nbatch, steps * self.fs, self.states.shape[1]))
        self.one = mujoco.MjData(self.m)

    def measure(self, seed: int = 0, rows=None) -> dict:
        """rows: mjSTATE_INTEGRATION states [k, nstate] to start from (repeated to nbatch)."""
        mj, m, fs, n, T = self.mj, self.m, self.fs, self.nbatch, self.steps
        full, integ = mj.mjtState.mjSTATE_FULLPHYSICS, mj.mjtState.mjSTATE_INTEGRATION
        rows = self.rows if rows is None else np.resize(rows, self.rows.shape)  # cycles whole rows
        states = np.empty_like(self.states)
        for i in range(n):  # rollout takes FULLPHYSICS states
            mj.mj_setState(m, self.one, rows[i], integ)
            mj.mj_getState(m, self.one, states[i], full)
        rng = np.random.default_rng(seed)
        lo, hi = m.actuator_ctrlrange.T
        ctrl = rng.uniform(lo, hi, size=(n, T, m.nu)).repeat(fs, axis=1)  # [n, T*fs, nu]
        out = {}
        mj.mj_setState(m, self.one, rows[0], integ)
        t0 = time.perf_counter()
        n1 = n * T // 2
        for t in range(n1):
            self.one.ctrl[:] = ctrl[t % n, (t % T) * fs]
            mj.mj_step(m, self.one, nstep=fs)
        out["one_thread"] = n1 / (time.perf_counter() - t0)
        out["ideal"] = out["one_thread"] * self.nthread
        self.ro.rollout(m, self.datas, states, ctrl[:, :fs], nstep=fs)  # warm-up
        t0 = time.perf_counter()
        self.ro.rollout(m, self.datas, states, ctrl, state=self.state_out)
        out["rollout"] = n * T / (time.perf_counter() - t0)
        self.batch.state[:] = rows
        t0 = time.perf_counter()
        self.batch.rollout(fs * T, control=ctrl, record=())
        out["batch"] = n * T / (time.perf_counter() - t0)
        # the fastest raw physics this machine gave in this repeat: with other work on the cores,
        # one thread can beat the all-core pool
        out["limit"] = max(out["one_thread"], out["rollout"], out["batch"])
        return out

    def close(self):
        self.ro.close()


def profile_batched(env_id: str, num_envs: int, steps: int, nthread: int) -> dict:
    """Where the batched backend's step time goes (fractions of the total)."""
    env = BatchedMujocoVecEnv(env_id, num_envs, nthread=nthread)
    env.reset(seed=0)
    acts = np.random.default_rng(0).uniform(env.action_low, env.action_high, size=(steps, num_envs, env.act_dim))
    prof = cProfile.Profile()
    prof.enable()
    for t in range(steps):
        env.step(acts[t])
    prof.disable()
    env.close()
    stats = pstats.Stats(prof).stats
    total = sum(v[2] for v in stats.values())  # tottime summed = all time spent
    part = lambda pred, idx=2: sum(v[idx] for k, v in stats.items() if pred(k))  # noqa: E731
    native = part(lambda k: k[2] == "<built-in method mujoco._batch.step>")
    rne = part(lambda k: k[2] in ("<built-in method mujoco._batch.get_data>",
                                  "<built-in method mujoco._functions.mj_rnePostConstraint>"))
    resets = part(lambda k: k[2] == "_reset_envs", idx=3)
    return {"native_step": native / total, "cfrc_ext_rne": rne / total, "resets": resets / total,
            "numpy_and_python": (total - native - rne - resets) / total, "seconds": total}


def cmd_env(args) -> dict:
    """Rows: one per (task, num_envs, repeat) with every backend's steps/s and the physics limit,
    measured back to back, so that ratios come from measurements under the same machine load."""
    nthread = args.threads or default_threads()
    rows, skipped, profiles = [], [], {}
    for env_id in args.env_ids:
        limit = PhysicsLimit(env_id, args.physics_batch, args.physics_steps, nthread)
        for n in args.num_envs:
            backends = {}
            for name in args.backends:
                if name == "async" and n > args.async_max_envs:
                    skipped.append((env_id, n, name, f"skipped: > --async-max-envs={args.async_max_envs} processes"))
                    continue
                try:
                    backends[name] = make_backend(name, env_id, n, nthread)
                except Exception as e:  # e.g. EnvPool not installable here: record why
                    skipped.append((env_id, n, name, f"unavailable: {type(e).__name__}: {e}"))
            steps = max(args.min_steps, args.env_steps // n)
            for r in range(args.repeats):
                # the load of a shared machine drifts within seconds: the limit is measured right after
                # 'batched' (from its states), and the order of the others rotates from repeat to repeat
                order = list(backends)
                order = order[r % len(order):] + order[:r % len(order)]
                sps, phys = {}, None
                for name in order:
                    sps[name] = env_throughput(backends[name], steps, seed=r)
                    if name == "batched":
                        phys = limit.measure(seed=r, rows=backends[name].batch.state.copy())
                rows.append({"env_id": env_id, "num_envs": n, "repeat": r, "order": order, "sps": sps,
                             "physics": phys if phys is not None else limit.measure(seed=r)})
            for env in backends.values():
                env.close()
            med = {b: median(x["sps"][b] for x in rows[-args.repeats:]) for b in backends}
            print(f"{env_id} N={n}: " + ", ".join(f"{b}={v:.0f}" for b, v in med.items()), flush=True)
        limit.close()
        if args.profile_envs:
            profiles[env_id] = profile_batched(env_id, args.profile_envs, args.profile_steps, nthread)
    return {"rows": rows, "skipped": skipped, "profiles": profiles, "threads": nthread}


def summarize_env(res: dict, args) -> tuple[str, dict]:
    """Medians of steps/s and of per-repeat ratios (batched / best gymnasium, backend / physics limit)."""
    md, summary, nan = [], {}, float("nan")
    why = {(e, n, b): w for e, n, b, w in res["skipped"]}
    for env_id in args.env_ids:
        mine = [x for x in res["rows"] if x["env_id"] == env_id]
        phys = {k: median(x["physics"][k] for x in mine) for k in mine[0]["physics"]}
        md += [f"\n### {env_id}\n",
               "batched = MuJoCo thread pool on all cores (default), batched1 = one thread.\n",
               f"Physics limit from the batched env's states, median of all groups (env steps/s = substeps/s / frame_skip, {res['threads']} "
               f"threads, {args.physics_batch} sims): mujoco.rollout {phys['rollout']:.0f}, mujoco.batch "
               f"{phys['batch']:.0f}; one thread {phys['one_thread']:.0f} (x{res['threads']} = ideal "
               f"{phys['ideal']:.0f}); limit = the fastest of these three in each repeat.\n",
               "| envs | " + " | ".join(args.backends) + " | limit (same repeats) | batched / best gymnasium |",
               "|---:|" + "---:|" * (len(args.backends) + 2)]
        summary[env_id] = {"physics": phys, "by_num_envs": {}}
        for n in args.num_envs:
            reps = [x for x in mine if x["num_envs"] == n]
            cells, entry = [], {"median_sps": {}, "share_of_limit": {}}
            for b in args.backends:
                if reps and b in reps[0]["sps"]:
                    entry["median_sps"][b] = median(x["sps"][b] for x in reps)
                    entry["share_of_limit"][b] = median(x["sps"][b] / x["physics"]["limit"] for x in reps)
                    cells.append(f"{entry['median_sps'][b]:.0f} ({entry['share_of_limit'][b]:.0%})")
                else:
                    cells.append(why.get((env_id, n, b), "-"))
            gyms = [b for b in GYM_BACKENDS if reps and b in reps[0]["sps"]]
            ratio = median(x["sps"]["batched"] / max(x["sps"][b] for b in gyms) for x in reps) \
                if gyms and "batched" in reps[0]["sps"] else nan
            entry["batched_over_best_gym"] = ratio
            entry["limit"] = median(x["physics"]["limit"] for x in reps)
            summary[env_id]["by_num_envs"][n] = entry
            md.append(f"| {n} | " + " | ".join(cells) + f" | {entry['limit']:.0f} | {ratio:.2f}x |")
        if env_id in res["profiles"]:
            p = res["profiles"][env_id]
            md.append(f"\nBatched step profile at {args.profile_envs} envs (cProfile): native mj_step in "
                      f"mujoco.batch {p['native_step']:.0%}, cfrc_ext via mj_rnePostConstraint "
                      f"{p['cfrc_ext_rne']:.0%}, autoresets {p['resets']:.0%}, numpy/Python "
                      f"{p['numpy_and_python']:.0%}.")
    t = args.target_envs
    if t in args.num_envs:
        md.append(f"\n### Targets at {t} envs (issue: >= 1.5x the best gymnasium vector env, >= 60% of the "
                  f"physics limit)\n")
        for env_id in args.env_ids:
            s = summary[env_id]["by_num_envs"][t]
            r, f = s["batched_over_best_gym"], s["share_of_limit"].get("batched", nan)
            md.append(f"- {env_id}: {r:.2f}x the best gymnasium vector env ({'met' if r >= 1.5 else 'MISSED'}), "
                      f"{f:.0%} of the physics limit ({'met' if f >= 0.6 else 'MISSED'})")
    md.append("\nNotes: the limit is measured right after the batched run, from its states; a share above 100% "
              "means the machine's load changed in between (other work on a shared machine). EnvPool links its "
              "own MuJoCo build and task code, so its physics cost is not bound by this limit. batched1 shows one "
              "MuJoCo thread, which wins when other work keeps the second core busy.")
    return "\n".join(md), summary


# --- (1) end-to-end PPO vs Stable-Baselines3, (4) 1M-step wall times -----------------
def run_ppo_control(env_id, total_steps, num_envs, vectorization, seed, out_dir, compile_="auto") -> dict:
    from ppo_control.config import make_config
    from ppo_control.train import train
    cfg = make_config("default", env_id=env_id, total_steps=total_steps, num_envs=num_envs, seed=seed,
                      num_steps=2048 // num_envs, vectorization=vectorization, eval_episodes=0, progress=False,
                      tensorboard=False, out_dir=str(out_dir), run_name=f"{env_id}_{vectorization}_{num_envs}_s{seed}",
                      compile=compile_)
    t0 = time.perf_counter()
    s = train(cfg)
    wall = time.perf_counter() - t0
    # end to end (env creation and setup included), the conservative side: SB3's time below is learn() only
    return {"wall_s": wall, "train_wall_s": s["wall_time"], "sps": s["global_step"] / wall,
            "train_sps": s["global_step"] / s["wall_time"], "steps": s.get("global_step", total_steps),
            **run_decisions(s["run_dir"])}


def run_decisions(run_dir) -> dict:
    """How a run ran, as its config.json records it: the compile and parallel_critic decisions (None where the
    checkout that wrote it had no such option)."""
    rec = json.loads((Path(run_dir) / "config.json").read_text())
    return {"compile": rec.get("compile"), "parallel_critic": rec.get("parallel_critic")}


def run_sb3(env_id, total_steps, num_envs, seed) -> dict:
    """SB3 PPO with the same settings as ppo_control's default preset (2048-step batches, 32 minibatches)."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
    torch.set_num_threads(1)  # ppo_control's default torch_threads, for the same footing
    venv = VecNormalize(DummyVecEnv([lambda: gym.make(env_id)] * num_envs), gamma=0.99)
    model = PPO("MlpPolicy", venv, n_steps=2048 // num_envs, batch_size=2048 // 32, n_epochs=10,
                learning_rate=lambda f: 3e-4 * f, gamma=0.99, gae_lambda=0.95, clip_range=0.2, ent_coef=0.0,
                vf_coef=0.5, max_grad_norm=0.5, seed=seed, device="cpu", verbose=0)
    t0 = time.perf_counter()
    model.learn(total_timesteps=total_steps)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "sps": total_steps / wall, "steps": total_steps}


def cmd_ppo(args) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for env_id in args.env_ids:
            for r in range(args.repeats):  # interleaved: ppo_control then SB3 in each repeat
                rows.append({"env_id": env_id, "impl": "ppo_control", "repeat": r,
                             **run_ppo_control(env_id, args.total_steps, args.ppo_envs, args.vectorization, r + 1, tmp,
                                                  args.compile)})
                rows.append({"env_id": env_id, "impl": "sb3", "repeat": r,
                             **run_sb3(env_id, args.total_steps, args.ppo_envs, r + 1)})
    md = ["| env | ppo_control steps/s, end to end | ppo_control steps/s, training loop | SB3 steps/s, learn() | "
          "ratio, end to end | ratio, training loop |", "|---|---:|---:|---:|---:|---:|"]
    for env_id in args.env_ids:
        a = median(x["sps"] for x in rows if x["env_id"] == env_id and x["impl"] == "ppo_control")
        t = median(x["train_sps"] for x in rows if x["env_id"] == env_id and x["impl"] == "ppo_control")
        b = median(x["sps"] for x in rows if x["env_id"] == env_id and x["impl"] == "sb3")
        md.append(f"| {env_id} | {a:.0f} | {t:.0f} | {b:.0f} | {a / b:.2f}x | {t / b:.2f}x |")
    for env_id in args.env_ids:
        per = [f"{x['impl']} {x['sps']:.0f}" for x in rows if x["env_id"] == env_id]
        md.append(f"\n{env_id}, steps/s end to end per run in the order run: {', '.join(per)}")
    decided = sorted({f"compile {x['compile']}, parallel_critic {x['parallel_critic']}" for x in rows
                      if x["impl"] == "ppo_control"})
    md.append(f"\nppo_control's runs: {'; '.join(decided)}.")
    md.append(f"\nppo_control ran with --compile {args.compile}; a compiled loss is built in the first run "
              f"(inductor's disk cache then serves the later ones), its compile time inside the end-to-end time.")
    md.append("\nEnd to end = ppo_control's whole train() call (env creation, setup, a compiled run's compile, "
              "and the loop) against SB3's learn() alone (its setup is outside the timer); training loop = the "
              "iterations only, like learn().")
    return {"rows": rows, "markdown": "\n".join(md)}


def cmd_wall1m(args) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for env_id in args.env_ids:
            for vec in args.backends:
                rows.append({"env_id": env_id, "vectorization": vec,
                             **run_ppo_control(env_id, args.total_steps, args.ppo_envs, vec, 1, tmp)})
    md = [f"| env | backend | wall (s) for {args.total_steps} steps | steps/s |", "|---|---|---:|---:|"]
    md += [f"| {x['env_id']} | {x['vectorization']} | {x['wall_s']:.1f} | {x['sps']:.0f} |" for x in rows]
    return {"rows": rows, "markdown": "\n".join(md)}


# --- output ---------------------------------------------------------------------------
def write(out: Path, title: str, body: str, payload: dict, info: dict, wall: float) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    head = [f"# {title}\n", f"Command: `{info['command']}`  ", f"Commit: `{info['commit']}` (dirty: {info['dirty']})  ",
            f"Machine: {info['cpu']}, {info['cores']} cores; load average {info['load_before']} before, "
            f"{info['load_after']} after (shared machine: compare ratios, not absolute numbers)  ",
            f"Versions: python {info['python']}, mujoco {info['mujoco']}, gymnasium {info['gymnasium']}, "
            f"numpy {info['numpy']}, torch {info['torch']}" + "".join(f", {k} {v}" for k, v in info['extras'].items())
            + "  ", f"Wall time: {wall:.0f} s; date {info['date']}\n"]
    out.with_suffix(".md").write_text("\n".join(head) + body + "\n")
    out.with_suffix(".json").write_text(json.dumps({"info": info, "wall_s": wall, **payload}, indent=1, default=str))
    print(f"wrote {out.with_suffix('.md')} and .json")


def _extras() -> dict:
    found = {}
    for mod in ("envpool", "stable_baselines3"):
        try:
            found[mod] = __import__(mod).__version__
        except Exception:
            found[mod] = "not installed"
    return found


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("env", help="(2)+(3) env-only throughput and the physics limit")
    e.add_argument("--env-ids", nargs="+", default=["HalfCheetah-v5", "Hopper-v5", "Ant-v5"])
    e.add_argument("--num-envs", nargs="+", type=int, default=[1, 16, 64, 256])
    e.add_argument("--backends", nargs="+", default=["sync", "async", "batched", "batched1", "envpool"])
    e.add_argument("--repeats", type=int, default=6, help="interleaved repeats per group; medians reported")
    e.add_argument("--env-steps", type=int, default=600, help="env steps (all envs) per measurement")
    e.add_argument("--min-steps", type=int, default=20, help="at least this many vector steps per measurement")
    e.add_argument("--async-max-envs", type=int, default=256, help="skip gymnasium async above this many processes")
    e.add_argument("--physics-batch", type=int, default=64, help="simulations in the physics-limit runs")
    e.add_argument("--physics-steps", type=int, default=10, help="env steps per simulation in the physics-limit runs")
    e.add_argument("--profile-envs", type=int, default=64, help="profile the batched step at this many envs (0 = off)")
    e.add_argument("--profile-steps", type=int, default=100)
    e.add_argument("--target-envs", type=int, default=64)
    e.add_argument("--rerender", default=None, help="rewrite the Markdown from a saved JSON result (no measuring)")
    for q, name in ((sub.add_parser("ppo", help="(1) end-to-end PPO vs Stable-Baselines3"), "ppo"),
                    (sub.add_parser("wall1m", help="(4) 1M-step wall time per backend"), "wall1m")):
        q.add_argument("--env-ids", nargs="+", default=["HalfCheetah-v5", "Hopper-v5"])
        q.add_argument("--total-steps", type=int, default=1_000_000 if name == "wall1m" else 100_000)
        q.add_argument("--ppo-envs", type=int, default=4, help="num_envs (2048 // num_envs steps per env per update)")
        q.add_argument("--repeats", type=int, default=1)
        if name == "ppo":
            q.add_argument("--vectorization", default="batched")
            q.add_argument("--compile", default="auto", choices=("auto", "on", "off"),
                           help="ppo_control's --compile (auto: on from 10,000 minibatch updates, i.e. >= 65,536 "
                                "classic steps; its compile time counts in the end-to-end time)")
        else:
            q.add_argument("--backends", nargs="+", default=["sync", "async", "batched"])
    for q in sub.choices.values():
        q.add_argument("--threads", type=int, default=0, help="MuJoCo threads (0 = all cores this process may use)")
        q.add_argument("--out", default=None, help="output path without suffix (default results/speed/<subcommand>)")
    args = p.parse_args(argv)

    info = dict(environment_info(), command=" ".join(map(shlex.quote, ["python"] + sys.argv)),
                load_before=" ".join(f"{x:.2f}" for x in os.getloadavg()), extras=_extras(),
                date=time.strftime("%Y-%m-%d %H:%M:%S %z"))
    if args.cmd == "env" and args.rerender:  # tables again from saved measurements, nothing measured
        saved = json.loads(Path(args.rerender).read_text())
        body, _ = summarize_env(saved, argparse.Namespace(**saved["args"]))
        write(Path(args.out or args.rerender).with_suffix(""), "Env-only throughput and the physics limit",
              ENV_INTRO + body, {k: v for k, v in saved.items() if k not in ("info", "wall_s")}, saved["info"],
              saved["wall_s"])
        return
    t0 = time.perf_counter()
    if args.cmd == "env":
        res = cmd_env(args)
        body, summary = summarize_env(res, args)
        payload, title = {**res, "summary": summary, "args": vars(args)}, "Env-only throughput and the physics limit"
        body = ENV_INTRO + body
    elif args.cmd == "ppo":
        res = cmd_ppo(args)
        payload, title, body = {**res, "args": vars(args)}, "End-to-end PPO: ppo_control vs Stable-Baselines3", res["markdown"]
    else:
        res = cmd_wall1m(args)
        payload, title, body = {**res, "args": vars(args)}, "PPO wall time per vector-env backend", res["markdown"]
    wall = time.perf_counter() - t0
    info["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(body)
    write(Path(args.out or f"results/speed/{args.cmd}"), title, body, payload, info, wall)


if __name__ == "__main__":
    main()
