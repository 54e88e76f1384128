"""Learning-rate schedules that do not depend on the run's length: KL-adaptive (lr_adapt_kl) and a
fixed decay (lr_decay_steps). An extended run continues the schedule it started, bit for bit."""
import pytest
import torch

from ppo_control import train
from ppo_control.checkpoint import load_checkpoint
from ppo_control.config import ConfigError
from ppo_control.metrics import read_jsonl
from ppo_control.train import adapt_lr


def test_adapt_rule_by_hand():
    assert adapt_lr(1e-3, 0.021, 0.01) == pytest.approx(1e-3 / 1.5)   # above 2x target: down
    assert adapt_lr(1e-3, 0.0049, 0.01) == pytest.approx(1.5e-3)      # below half the target: up
    assert adapt_lr(1e-3, 0.015, 0.01) == 1e-3                        # inside the band: kept
    assert adapt_lr(9e-3, 0.0, 0.01) == 1e-2                          # capped above
    assert adapt_lr(1.2e-5, 1.0, 0.01) == 1e-5                        # and below
    assert adapt_lr(1e-3, float("nan"), 0.01) == 1e-3                 # no KL measured: unchanged


def test_adapt_needs_no_anneal(tiny):
    with pytest.raises(ConfigError, match="--no-anneal-lr"):
        tiny(lr_adapt_kl=0.01)


def test_logged_lr_follows_previous_kl(tiny):
    s = train(tiny(lr_adapt_kl=0.01, anneal_lr=False, total_steps=640, lr=1e-3))
    rows = read_jsonl(f"{s['run_dir']}/metrics.jsonl")
    lrs = [r["charts/learning_rate"] for r in rows]
    assert lrs[0] == 1e-3
    for prev, row in zip(rows, rows[1:]):
        assert row["charts/learning_rate"] == pytest.approx(
            adapt_lr(prev["charts/learning_rate"], prev["losses/approx_kl"], 0.01), rel=1e-12)
    assert len(set(lrs)) > 1  # the rule acted on this run


def _params(run_dir):
    return load_checkpoint(run_dir)["policy"]


@pytest.mark.parametrize("schedule", [dict(lr_adapt_kl=0.01, anneal_lr=False),
                                      dict(anneal_lr=True, lr_decay_steps=512, lr_floor=0.1)])
def test_extended_run_equals_longer_run(tiny, schedule):
    whole = train(tiny(run_name="whole", total_steps=512, lr=1e-3, **schedule))
    short = train(tiny(run_name="short", total_steps=256, lr=1e-3, **schedule))
    ext = train(resume=short["run_dir"], changes={"total_steps": 512})
    a, b = _params(whole["run_dir"]), _params(ext["run_dir"])
    assert all(torch.equal(a[k], b[k]) for k in a)
    la = [r["charts/learning_rate"] for r in read_jsonl(f"{whole['run_dir']}/metrics.jsonl")]
    lb = [r["charts/learning_rate"] for r in read_jsonl(f"{ext['run_dir']}/metrics.jsonl")]
    assert la == lb
