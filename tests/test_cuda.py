"""Every tensor path with the networks on a GPU. Skipped without CUDA; run by benchmarks/gpu_smoke.sh
on a machine with one (README, "GPU")."""
import numpy as np
import pytest
import torch

from ppo_control import algorithms, evaluate, load_policy, train
from ppo_control.update import make_optimizer, update

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("case", ["ppo_ent_clipv_dual", "grpo_kl"])
def test_update_on_cuda_equals_the_cpu_reference(case):
    from test_update import golden_start
    g, cfg, pi, vf = golden_start(case)
    dev = torch.device("cuda")
    pi = pi.to(dev)
    vf = vf.to(dev) if vf is not None else None
    data = {k: v.to(dev) for k, v in g["data"].items()}
    opt = make_optimizer([pi] + ([vf] if vf is not None else []), cfg)
    update(pi, vf, opt, data, cfg, torch.Generator().manual_seed(7), cfg.norm_adv and vf is not None,
           terms=algorithms.get(cfg.algo).loss_terms)
    for name, p in pi.state_dict().items():
        assert torch.allclose(p.cpu(), g["policy"][name], atol=1e-4, rtol=1e-3), name


@pytest.mark.parametrize("algo", ["ppo", "grpo"])
def test_training_with_cuda_networks_eval_checkpoint_and_resume(tiny, tmp_path, algo):
    kw = dict(device="cuda", eval_interval=128, eval_interval_episodes=2, eval_episodes=2, total_steps=512)
    if algo == "grpo":
        kw.update(algo="grpo", group_size=2, num_envs=2, horizon=64, kl_coef=0.05)
    s = train(tiny(**kw))  # collection, update, periodic + final evaluation, GRPO's reference policy
    assert np.isfinite(s["eval_return"])
    pol = load_policy(tmp_path / "run")  # a checkpoint written from GPU networks, loaded on the CPU
    assert pol.net.log_std.device.type == "cpu"
    assert np.isfinite(evaluate(pol, "InvertedPendulum-v5", 1)["mean_return"])
    s2 = train(resume=str(tmp_path / "run"))  # resume onto the GPU again (finished run: no new steps)
    assert s2["global_step"] == s["global_step"]
