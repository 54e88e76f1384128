"""Per-task observation, reward, termination and reset functions for the batched backend.

Each builder reads every parameter from a gymnasium env instance (``env.unwrapped`` of
``gym.make(env_id, **env_kwargs)``), so defaults and ``env_kwargs`` stay gymnasium's.
The functions repeat gymnasium's v5 ``step``/``_get_obs``/``reset_model`` code for a
whole batch at once, in the same operation order, so that results agree to rounding.

A ``Sim`` maps MjData field names to batched arrays: ``qpos [N, nq]``, ``qvel [N, nv]``,
``ctrl [N, nu]`` and each field in ``Task.outputs`` (``xpos [N, nbody, 3]``, ...), all as
gymnasium's ``env.data`` holds them after ``mj_step`` (derived fields one substep behind
the state, as MuJoCo leaves them) or after a reset's ``mj_forward``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Tuple

import numpy as np

Sim = Mapping[str, np.ndarray]
ResetFn = Callable[[np.random.Generator], Tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Task:
    """One task's batched functions (all arrays ``[N, ...]``, N = envs in the call)."""
    outputs: Tuple[str, ...]                       # derived MjData fields the functions read
    position: Callable[[Sim], np.ndarray]          # [N, k] whose change / dt is the rewarded velocity
    observe: Callable[[Sim], np.ndarray]           # -> obs [N, obs_dim], a new array
    reward: Callable[[Sim, np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]
    # (sim, velocity [N, k], action [N, nu]) -> reward [N] float64, terminated [N] bool
    reset_state: ResetFn                           # one env's (qpos [nq], qvel [nv]) from its RNG
    rne_post_constraint: bool = False              # reads cfrc_ext, which gymnasium computes after
    #                                                mj_step with mj_rnePostConstraint


def _ctrl_cost(weight: float, action: np.ndarray) -> np.ndarray:
    """weight * sum(action^2) per row [N]; keeps the action's dtype as gymnasium's scalar code does."""
    return weight * np.add.reduce(np.square(action), -1)  # np.sum(..., axis=-1) without its Python wrappers


def _no_position(sim: Sim) -> np.ndarray:
    return np.zeros((len(sim["qpos"]), 0))


def _qpos_prefix(k: int) -> Callable[[Sim], np.ndarray]:
    return lambda sim: sim["qpos"][:, :k]


def _reset_noise(u, qvel_normal: bool) -> ResetFn:
    """init + U(-s, s) on qpos, then init + U(-s, s) or + s*N(0, 1) on qvel (gymnasium's draw order)."""
    s, q0, v0, nq, nv = u._reset_noise_scale, u.init_qpos.copy(), u.init_qvel.copy(), u.model.nq, u.model.nv

    def reset_state(rng: np.random.Generator):
        qpos = q0 + rng.uniform(low=-s, high=s, size=nq)
        if qvel_normal:
            qvel = v0 + s * rng.standard_normal(nv)
        else:
            qvel = v0 + rng.uniform(low=-s, high=s, size=nv)
        return qpos, qvel
    return reset_state


def _planar_obs(u, clip_qvel: bool, nskip: int) -> Callable[[Sim], np.ndarray]:
    skip = nskip * int(u._exclude_current_positions_from_observation)

    def observe(sim: Sim) -> np.ndarray:
        qvel = np.clip(sim["qvel"], -10, 10) if clip_qvel else sim["qvel"]
        return np.concatenate([sim["qpos"][:, skip:], qvel], axis=1)
    return observe


def half_cheetah(u) -> Task:
    fw, cw = u._forward_reward_weight, u._ctrl_cost_weight

    def reward(sim, vel, action):
        return fw * vel[:, 0] - _ctrl_cost(cw, action), np.zeros(len(vel), bool)
    return Task((), _qpos_prefix(1), _planar_obs(u, False, 1), reward, _reset_noise(u, qvel_normal=True))


def swimmer(u) -> Task:
    fw, cw = u._forward_reward_weight, u._ctrl_cost_weight

    def reward(sim, vel, action):
        return fw * vel[:, 0] - _ctrl_cost(cw, action), np.zeros(len(vel), bool)
    return Task((), _qpos_prefix(2), _planar_obs(u, False, 2), reward, _reset_noise(u, qvel_normal=False))


def hopper_walker(u) -> Task:
    """Hopper-v5 and Walker2d-v5 (Walker has no healthy state range)."""
    fw, cw, hr, stop = u._forward_reward_weight, u._ctrl_cost_weight, u._healthy_reward, u._terminate_when_unhealthy
    z_lo, z_hi = u._healthy_z_range
    a_lo, a_hi = u._healthy_angle_range
    state_range = getattr(u, "_healthy_state_range", None)

    def healthy(sim):
        z, angle = sim["qpos"][:, 1], sim["qpos"][:, 2]
        ok = (z_lo < z) & (z < z_hi) & (a_lo < angle) & (angle < a_hi)
        if state_range is not None:
            state = np.concatenate([sim["qpos"], sim["qvel"]], axis=1)[:, 2:]
            ok &= np.all((state_range[0] < state) & (state < state_range[1]), axis=1)
        return ok

    def reward(sim, vel, action):
        ok = healthy(sim)
        return (fw * vel[:, 0] + ok * hr) - _ctrl_cost(cw, action), ~ok & bool(stop)
    return Task((), _qpos_prefix(1), _planar_obs(u, True, 1), reward, _reset_noise(u, qvel_normal=False))


def inverted_pendulum(u) -> Task:
    def observe(sim):
        return np.concatenate([sim["qpos"], sim["qvel"]], axis=1)

    def reward(sim, vel, action):
        obs = observe(sim)
        term = ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)
        return (~term).astype(np.float64), term
    return Task((), _no_position, observe, reward, _reset_noise(u, qvel_normal=False))


def inverted_double_pendulum(u) -> Task:
    hr = u._healthy_reward

    def observe(sim):
        qpos, qvel = sim["qpos"], sim["qvel"]
        return np.concatenate([qpos[:, :1], np.sin(qpos[:, 1:]), np.cos(qpos[:, 1:]), np.clip(qvel, -10, 10),
                               np.clip(sim["qfrc_constraint"], -10, 10)[:, :1]], axis=1)

    def reward(sim, vel, action):
        tip = sim["site_xpos"][:, 0]
        x, y = tip[:, 0], tip[:, 2]
        v1, v2 = sim["qvel"][:, 1], sim["qvel"][:, 2]
        term = y <= 1
        dist_penalty = 0.01 * x ** 2 + (y - 2) ** 2
        vel_penalty = 1e-3 * v1 ** 2 + 5e-3 * v2 ** 2
        return hr * (~term) - dist_penalty - vel_penalty, term
    return Task(("site_xpos", "qfrc_constraint"), _no_position, observe, reward, _reset_noise(u, qvel_normal=True))


def ant(u) -> Task:
    fw, cw, kw, hr = u._forward_reward_weight, u._ctrl_cost_weight, u._contact_cost_weight, u._healthy_reward
    stop, (z_lo, z_hi), (f_lo, f_hi) = u._terminate_when_unhealthy, u._healthy_z_range, u._contact_force_range
    body = u.model.body(u._main_body).id
    skip = 2 * int(u._exclude_current_positions_from_observation)
    with_forces = bool(u._include_cfrc_ext_in_observation)

    def observe(sim):
        parts = [sim["qpos"][:, skip:], sim["qvel"]]
        if with_forces:
            parts.append(np.clip(sim["cfrc_ext"], f_lo, f_hi)[:, 1:].reshape(len(sim["qpos"]), -1))
        return np.concatenate(parts, axis=1)

    def reward(sim, vel, action):
        n = len(vel)
        state = np.concatenate([sim["qpos"], sim["qvel"]], axis=1)
        ok = np.isfinite(state).all(axis=1) & (z_lo <= state[:, 2]) & (state[:, 2] <= z_hi)
        forces = np.clip(sim["cfrc_ext"], f_lo, f_hi).reshape(n, -1)
        costs = _ctrl_cost(cw, action) + kw * np.sum(np.square(forces), axis=1)
        return (vel[:, 0] * fw + ok * hr) - costs, ~ok & bool(stop)
    return Task(("xpos", "cfrc_ext"), lambda sim: sim["xpos"][:, body, :2], observe, reward,
                _reset_noise(u, qvel_normal=True), rne_post_constraint=True)


def _humanoid_obs(u) -> Callable[[Sim], np.ndarray]:
    skip = 2 * int(u._exclude_current_positions_from_observation)
    extra = [name for name, on in (("cinert", u._include_cinert_in_observation),
                                   ("cvel", u._include_cvel_in_observation),
                                   ("qfrc_actuator", u._include_qfrc_actuator_in_observation),
                                   ("cfrc_ext", u._include_cfrc_ext_in_observation)) if on is True]

    def observe(sim):
        n = len(sim["qpos"])
        parts = [sim["qpos"][:, skip:], sim["qvel"]]
        for name in extra:  # qfrc_actuator drops the 6 free-joint dofs, the others the world body
            parts.append(sim[name][:, 6:] if name == "qfrc_actuator" else sim[name][:, 1:].reshape(n, -1))
        return np.concatenate(parts, axis=1)
    return observe


_HUMANOID_OUTPUTS = ("xipos", "cinert", "cvel", "qfrc_actuator", "cfrc_ext")


def humanoid(u) -> Task:
    fw, cw, kw, hr = u._forward_reward_weight, u._ctrl_cost_weight, u._contact_cost_weight, u._healthy_reward
    stop, (z_lo, z_hi), (k_lo, k_hi) = u._terminate_when_unhealthy, u._healthy_z_range, u._contact_cost_range
    mass = u.model.body_mass.copy()

    def mass_center(sim):  # gymnasium's mass_center(): mass-weighted mean of the bodies' xipos, x and y
        return (np.einsum("b,nbj->nj", mass, sim["xipos"]) / mass.sum())[:, 0:2]

    def reward(sim, vel, action):
        n = len(vel)
        z = sim["qpos"][:, 2]
        ok = (z_lo < z) & (z < z_hi)
        contact = np.clip(kw * np.sum(np.square(sim["cfrc_ext"].reshape(n, -1)), axis=1), k_lo, k_hi)
        costs = _ctrl_cost(cw, sim["ctrl"]) + contact  # Humanoid charges data.ctrl, not the action
        return (fw * vel[:, 0] + ok * hr) - costs, ~ok & bool(stop)
    return Task(_HUMANOID_OUTPUTS, mass_center, _humanoid_obs(u), reward, _reset_noise(u, qvel_normal=False),
                rne_post_constraint=True)


def humanoid_standup(u) -> Task:
    cw, kw, (k_lo, k_hi), h = u._ctrl_cost_weight, u._impact_cost_weight, u._impact_cost_range, u.model.opt.timestep

    def reward(sim, vel, action):
        n = len(vel)
        impact = np.clip(kw * np.sum(np.square(sim["cfrc_ext"].reshape(n, -1)), axis=1), k_lo, k_hi)
        r = (sim["qpos"][:, 2] - 0) / h - _ctrl_cost(cw, sim["ctrl"]) - impact + 1
        return r, np.zeros(n, bool)
    return Task(_HUMANOID_OUTPUTS, _no_position, _humanoid_obs(u), reward, _reset_noise(u, qvel_normal=False),
                rne_post_constraint=True)


def reacher(u) -> Task:
    wd, wc = u._reward_dist_weight, u._reward_control_weight
    tip, target = u.model.body("fingertip").id, u.model.body("target").id
    q0, v0, nq, nv = u.init_qpos.copy(), u.init_qvel.copy(), u.model.nq, u.model.nv

    def observe(sim):
        qpos, theta = sim["qpos"], sim["qpos"][:, :2]
        vec = sim["xpos"][:, tip] - sim["xpos"][:, target]
        return np.concatenate([np.cos(theta), np.sin(theta), qpos[:, 2:], sim["qvel"][:, :2], vec[:, :2]], axis=1)

    def reward(sim, vel, action):
        vec = sim["xpos"][:, tip] - sim["xpos"][:, target]
        r = -np.linalg.norm(vec, axis=1) * wd + (-np.square(action).sum(axis=-1) * wc)
        return r, np.zeros(len(vel), bool)

    def reset_state(rng):
        qpos = rng.uniform(low=-0.1, high=0.1, size=nq) + q0
        while True:  # rejection sampling of the goal, one draw of 2 per try, as gymnasium
            goal = rng.uniform(low=-0.2, high=0.2, size=2)
            if np.linalg.norm(goal) < 0.2:
                break
        qpos[-2:] = goal
        qvel = v0 + rng.uniform(low=-0.005, high=0.005, size=nv)
        qvel[-2:] = 0
        return qpos, qvel
    return Task(("xpos",), _no_position, observe, reward, reset_state)


def pusher(u) -> Task:
    wn, wd, wc = u._reward_near_weight, u._reward_dist_weight, u._reward_control_weight
    arm, obj, goal = (u.model.body(b).id for b in ("tips_arm", "object", "goal"))
    q0, v0, nv = u.init_qpos.copy(), u.init_qvel.copy(), u.model.nv

    def observe(sim):
        qpos, xpos = sim["qpos"], sim["xpos"]
        return np.concatenate([qpos[:, :7], sim["qvel"][:, :7], xpos[:, arm], xpos[:, obj], xpos[:, goal]], axis=1)

    def reward(sim, vel, action):
        xpos = sim["xpos"]
        near = -np.linalg.norm(xpos[:, obj] - xpos[:, arm], axis=1) * wn
        dist = -np.linalg.norm(xpos[:, obj] - xpos[:, goal], axis=1) * wd
        ctrl = -np.square(action).sum(axis=-1) * wc
        return dist + ctrl + near, np.zeros(len(vel), bool)

    def reset_state(rng):
        goal_pos = np.zeros(2)
        while True:
            cylinder = np.concatenate([rng.uniform(low=-0.3, high=0, size=1), rng.uniform(low=-0.2, high=0.2, size=1)])
            if np.linalg.norm(cylinder - goal_pos) > 0.17:
                break
        qpos = q0.copy()
        qpos[-4:-2], qpos[-2:] = cylinder, goal_pos
        qvel = v0 + rng.uniform(low=-0.005, high=0.005, size=nv)
        qvel[-4:] = 0
        return qpos, qvel
    return Task(("xpos",), _no_position, observe, reward, reset_state)


# env id -> builder; ids not listed (other versions, non-MuJoCo tasks) use gymnasium's vector envs
TASKS: Dict[str, Callable[[object], Task]] = {
    "HalfCheetah-v5": half_cheetah,
    "Hopper-v5": hopper_walker,
    "Walker2d-v5": hopper_walker,
    "Swimmer-v5": swimmer,
    "InvertedPendulum-v5": inverted_pendulum,
    "InvertedDoublePendulum-v5": inverted_double_pendulum,
    "Ant-v5": ant,
    "Humanoid-v5": humanoid,
    "HumanoidStandup-v5": humanoid_standup,
    "Reacher-v5": reacher,
    "Pusher-v5": pusher,
}
