"""Writes tests/data/update_golden.pt: whole updates of the hand-written update loop that ppo_control
had until commit b2811f8 (backprop.py + FlatAdam), so that the autograd update that replaced it is
checked against what it replaced (tests/test_update.py), not only against itself.

It runs only with the package of that commit (``ppo_control.optim`` and the update loop that used it
are gone since); from a checkout of today's tree:
    git worktree add --detach /tmp/old b2811f8
    cd /tmp/old && PYTHONPATH=$PWD python /path/to/tests/data/make_update_golden.py OUT
Run so (torch 2.x) it reproduces update_golden.pt to within 1e-5 in every parameter, not bit for bit:
float rounding differs between torch builds; tests/test_update.py compares with atol 2e-5.
"""
import importlib.util
import sys

if importlib.util.find_spec("ppo_control.optim") is None:
    sys.exit("make_update_golden.py needs the package of commit b2811f8 on PYTHONPATH (see its docstring)")

import torch  # noqa: E402

from ppo_control.config import make_config
from ppo_control.networks import GaussianPolicy, ValueNet  # noqa: E402
from ppo_control.optim import FlatAdam  # noqa: E402
from ppo_control.update import update  # noqa: E402

CASES = {
    "ppo": dict(),
    "ppo_ent_clipv_dual": dict(ent_coef=0.01, clip_vloss=True, dual_clip=3.0),
    "ppo_relu": dict(activation="relu", hidden_sizes=(32, 16, 8)),
    "ppo_elu": dict(activation="elu", hidden_sizes=(16,)),
    "ppo_silu_no_normadv": dict(activation="silu", norm_adv=False),
    "ppo_log_std_at_clamp": dict(init_log_std=-5.0, ent_coef=0.05),
    "grpo_kl": dict(algo="grpo", kl_coef=0.1, ent_coef=0.01, group_size=4, num_envs=4),
}
BASE = dict(env_id="HalfCheetah-v5", lr=3e-3, update_epochs=3, num_minibatches=4, max_grad_norm=0.5)


def batch(policy, B, obs_dim, act_dim, grpo, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(B, obs_dim, generator=g)
    with torch.no_grad():  # actions wider than the policy's std, old log-probs both sides of the clip
        act = policy(obs) + 1.5 * policy.std() * torch.randn(B, act_dim, generator=g)
        lp = policy.log_prob_entropy(obs, act)[0] + 0.3 * torch.randn(B, generator=g)
    data = dict(obs=obs, actions=act, logprobs=lp, advantages=torch.randn(B, generator=g) * 2)
    if grpo:
        data["weights"] = torch.rand(B, generator=g) + 0.1
        data["ref_logprobs"] = lp + 0.2 * torch.randn(B, generator=g)
    else:
        data["returns"] = torch.randn(B, generator=g) * 3
        data["values"] = data["returns"] + torch.randn(B, generator=g)
    return data


def main(out):
    golden = {}
    for case, kw in CASES.items():
        cfg = make_config("classic", **dict(BASE, **kw))
        grpo = cfg.algo == "grpo"
        torch.manual_seed(1)
        pi = GaussianPolicy(5, 3, cfg.hidden_sizes, cfg.activation, cfg.init_log_std, cfg.log_std_min,
                            cfg.log_std_max)
        vf = None if grpo else ValueNet(5, cfg.hidden_sizes, cfg.activation)
        data = batch(pi, 128, 5, 3, grpo)
        before = {"policy": {k: v.clone() for k, v in pi.state_dict().items()},
                  "critic": None if vf is None else {k: v.clone() for k, v in vf.state_dict().items()}}
        opt = FlatAdam([pi] + ([] if grpo else [vf]), lr=cfg.lr, eps=cfg.adam_eps)
        stats = update(pi, vf, opt, data, cfg, torch.Generator().manual_seed(7), cfg.norm_adv and not grpo)
        golden[case] = {"config": dict(BASE, **kw), "data": data, "before": before,
                        "policy": {k: v.clone() for k, v in pi.state_dict().items()},
                        "critic": None if vf is None else {k: v.clone() for k, v in vf.state_dict().items()},
                        "stats": {k: float(v) for k, v in stats.items()}}
    torch.save(golden, out)


if __name__ == "__main__":
    main(sys.argv[1])
