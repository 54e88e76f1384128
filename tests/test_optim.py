import copy

import torch

from ppo_control.networks import GaussianPolicy, ValueNet
from ppo_control.optim import FlatAdam


def _fill_grads(flat: FlatAdam) -> None:
    """Autograd's .grad of every parameter into the optimizer's flat gradient buffer."""
    for p in flat.params:
        flat.grad_of[id(p)].copy_(p.grad)
        p.grad = None


def test_flat_adam_matches_torch_adam_with_per_network_clipping():
    torch.manual_seed(0)
    pi, vf = GaussianPolicy(5, 2, (16, 16)), ValueNet(5, (16, 16))
    pi2, vf2 = copy.deepcopy(pi), copy.deepcopy(vf)
    flat = FlatAdam([pi, vf], lr=1e-2, eps=1e-5)
    ref = torch.optim.Adam(list(pi2.parameters()) + list(vf2.parameters()), lr=1e-2, eps=1e-5)
    for step in range(5):
        obs, act = torch.randn(32, 5), torch.randn(32, 2)
        for p_, v_, opt, is_flat in ((pi, vf, flat, True), (pi2, vf2, ref, False)):
            if not is_flat:
                opt.zero_grad()
            lp, _ = p_.log_prob_entropy(obs, act)
            loss = -(lp * torch.randn(32, generator=torch.Generator().manual_seed(step))).mean() \
                + (v_(obs) ** 2).mean() * 10
            loss.backward()
            if is_flat:
                _fill_grads(flat)
                flat.clip_grad_norm_(0.5)
            else:
                torch.nn.utils.clip_grad_norm_(pi2.parameters(), 0.5)
                torch.nn.utils.clip_grad_norm_(vf2.parameters(), 0.5)
            opt.step()
        for a, b in zip(list(pi.parameters()) + list(vf.parameters()), list(pi2.parameters()) + list(vf2.parameters())):
            assert torch.allclose(a, b, atol=1e-6), (step, (a - b).abs().max())
    # the parameters really are views of the one buffer
    assert all(p.data_ptr() >= flat.flat.data_ptr() for p in pi.parameters())
    assert flat.flat.numel() == sum(p.numel() for p in list(pi.parameters()) + list(vf.parameters()))


def test_state_dict_round_trip_and_lr():
    pi = GaussianPolicy(3, 1, (8,))
    opt = FlatAdam([pi], lr=1e-3)
    pi.log_prob_entropy(torch.randn(4, 3), torch.randn(4, 1))[0].sum().backward()
    _fill_grads(opt)
    opt.step()
    st = opt.state_dict()
    opt2 = FlatAdam([GaussianPolicy(3, 1, (8,))], lr=5.0)
    opt2.load_state_dict(st)
    assert opt2.step_count == 1 and opt2.param_groups[0]["lr"] == 1e-3
    assert torch.equal(opt2.exp_avg, opt.exp_avg)
