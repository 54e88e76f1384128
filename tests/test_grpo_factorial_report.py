"""benchmarks/studies/grpo_factorial_report.py: the ablation's paired contrasts, on hand-made runs."""
import numpy as np
import pytest

from bench_module import load_benchmark


@pytest.fixture(scope="module")
def rep():
    return load_benchmark("grpo_factorial_report")


class FakeRun:
    def __init__(self, start, crn, adv, seed, value, horizon=32, gamma=0.95):
        self.config = dict(start_state=start, crn=crn, grpo_advantage=adv, horizon=horizon, gamma=gamma, seed=seed)
        self.status = "finished"
        self.value = value

    def metric(self, key):
        assert key == "eval_return"
        return self.value


def _by(out):
    return {(c["factor"], c["a"], c["b"]): sorted(c["diffs"].tolist()) for c in out}


def test_contrasts_pair_cells_that_differ_in_one_factor_only(rep):
    runs = [FakeRun("reset", False, "outcome", 1, 10.0), FakeRun("reset", False, "outcome", 2, 20.0),  # cell mean 15
            FakeRun("reset", True, "outcome", 1, 5.0),
            FakeRun("reset", False, "per_step", 1, 40.0),
            FakeRun("reset", True, "per_step", 1, 60.0),
            FakeRun("visited", False, "outcome", 1, 30.0),                 # no CRN-on or per-step partner
            FakeRun("branch", False, "outcome", 1, 99.0, horizon=256, gamma=0.995)]  # other horizon: no partner
    got = _by(rep.contrasts(runs))
    assert got[("crn", True, False)] == [-10.0, 20.0]           # 5 - 15, 60 - 40
    assert got[("grpo_advantage", "per_step", "outcome")] == [25.0, 55.0]  # 40 - 15, 60 - 5
    assert got[("start_state", "visited", "reset")] == [15.0]   # 30 - 15
    assert got[("start_state", "branch", "reset")] == []        # branch only at H 256, reset only at H 32
    assert got[("start_state", "branch", "visited")] == []


def test_main_effects_reports_each_contrast_with_its_sign_count(rep):
    shift = {"reset": 0.0, "visited": 300.0, "branch": 500.0}
    runs = [FakeRun(s, c, a, seed, 1000.0 - 400.0 * c + 200.0 * (a == "per_step") + shift[s] + seed)
            for s in shift for c in (False, True) for a in ("outcome", "per_step") for seed in (1, 2)]
    lines = rep.main_effects(runs, [(32, 0.95)])
    assert "| crn | on - off | -400 [-400, -400] (0/6) | -400 [-400, -400] (0/6) |" in lines
    assert "| grpo_advantage | per_step - outcome | 200 [200, 200] (6/6) | 200 [200, 200] (6/6) |" in lines
    assert "| start_state | branch - visited | 200 [200, 200] (4/4) | 200 [200, 200] (4/4) |" in lines
    # the level means beside them: CRN off = mean over the 12 off runs
    off = np.mean([r.value for r in runs if not r.config["crn"]])
    assert f"| crn | off | {off:,.0f} | {off:,.0f} |" in lines
