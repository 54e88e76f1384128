"""Aggregation maths on hand-computed inputs, and run directories -> tables."""
import csv
import json
import math

import numpy as np
import pytest

from ppo_control.experiments.aggregate import (bootstrap_ci, curve_auc, format_value, group_runs, iqm, load_run,
                                               load_runs, markdown_table, ratio_ci, run_rows, seed_stats, summarize,
                                               varying_fields, write_tables)
from bench_module import load_benchmark
from rundirs import write_run


def make_run(root, name, returns, finished=True, error=None, step=100, **cfg):
    return write_run(root, name, returns, finished, error, step=step, **cfg)


# --- statistics ----------------------------------------------------------------------------

def test_ratio_ci_resamples_each_side_on_its_own():
    # num [1, 3]: a resample's mean is 1, 2 or 3 (probability 1/4, 1/2, 1/4); den [2, 2] is always 2, so the
    # ratio is 0.5, 1 or 1.5 and the central 95% spans the two ends
    assert ratio_ci([1, 3], [2, 2]) == pytest.approx((0.5, 1.5))
    # the other way round: den's mean 1, 2 or 3 -> ratio 2, 1, 2/3
    assert ratio_ci([2, 2], [1, 3]) == pytest.approx((2 / 3, 2.0))
    assert ratio_ci([2, 2], [1, 1]) == (2.0, 2.0)
    # fewer than 2 seeds on a side: no interval, whatever the other side holds
    assert all(math.isnan(x) for x in ratio_ci([5.0], [1, 2, 3]) + ratio_ci([1, 2], [4.0]))
    lo, hi = ratio_ci([7794, 7102, 5966, 5673, 8385], [7753, 9881, 9025])
    assert lo < 6984 / 8886 < hi and hi < 1.0


def test_auc_is_trapezoid_area_over_step_span():
    # (0,0)-(10,10): area 50; (10,10)-(20,10): area 100; span 20 -> 7.5
    assert curve_auc([0, 10, 20], [0, 10, 10]) == pytest.approx(7.5)
    # constant curve: its value, whatever the spacing
    assert curve_auc([100, 300, 1000], [4, 4, 4]) == pytest.approx(4.0)
    # uneven spacing: (1+3)/2*1 + (3+3)/2*3 = 2 + 9 = 11 over span 4
    assert curve_auc([1, 2, 5], [1, 3, 3]) == pytest.approx(11 / 4)
    assert curve_auc([5], [7.0]) == 7.0
    assert math.isnan(curve_auc([], []))


def test_iqm_trims_a_quarter_each_side_and_needs_four_values():
    assert iqm([400, 1, 300, 2, 100, 3, 200, 4]) == pytest.approx((3 + 4 + 100 + 200) / 4)  # middle 4 of 8
    assert iqm([1, 2, 3, 4, 100]) == pytest.approx(3.0)  # trim int(1.25) = 1 each side: mean(2, 3, 4)
    assert iqm([1, 2, 3, 100]) == pytest.approx(2.5)
    assert math.isnan(iqm([1, 2, 3]))
    assert iqm([1, 2, 3, 4, float("nan")]) == pytest.approx(2.5)  # NaN dropped, 4 values left


def test_bootstrap_ci_two_values_spans_them():
    # resampled means of {0, 10} are 0, 5, 10 with probability 1/4, 1/2, 1/4: the 2.5% and 97.5%
    # percentiles are exactly the two values
    assert bootstrap_ci([0.0, 10.0]) == (0.0, 10.0)


def test_bootstrap_ci_degenerate_and_small_cases():
    assert bootstrap_ci([3.0, 3.0, 3.0]) == (3.0, 3.0)
    assert all(math.isnan(v) for v in bootstrap_ci([1.0]))
    assert all(math.isnan(v) for v in bootstrap_ci([]))


def test_bootstrap_ci_matches_normal_theory_on_a_large_sample():
    x = np.random.default_rng(1).normal(5.0, 2.0, size=400)
    lo, hi = bootstrap_ci(x)
    se = x.std(ddof=1) / np.sqrt(len(x))
    assert lo == pytest.approx(x.mean() - 1.96 * se, abs=0.25 * se)
    assert hi == pytest.approx(x.mean() + 1.96 * se, abs=0.25 * se)
    assert bootstrap_ci(x) == (lo, hi)  # seeded: tables are reproducible


def test_seed_stats():
    s = seed_stats([1.0, 2.0, 3.0, float("nan")])
    assert s["n"] == 3 and s["mean"] == pytest.approx(2.0) and math.isnan(s["iqm"])
    assert 1.0 <= s["ci_low"] < 2.0 < s["ci_high"] <= 3.0
    s = seed_stats([1.0, 2.0, 3.0, 4.0])
    assert s["iqm"] == pytest.approx(2.5)
    assert math.isnan(seed_stats([])["mean"])


def test_format_value():
    assert [format_value(v) for v in (0.0, 0.01, 3e-4, 1e-05, 2, (64, 64), None, True, "tanh")] == \
        ["0", "0.01", "0.0003", "1e-05", "2", "64x64", "none", "true", "tanh"]


# --- run directories ---------------------------------------------------------------------------

def test_load_run_skips_iterations_without_episodes(tmp_path):
    d = make_run(tmp_path, "a", [1.0, None, 3.0, 5.0])
    r = load_run(d)
    assert r.status == "finished"
    assert r.steps.tolist() == [100, 300, 400] and r.returns.tolist() == [1.0, 3.0, 5.0]
    # (1+3)/2*200 + (3+5)/2*100 = 800 over 300
    assert r.metric("auc") == pytest.approx(800 / 300)
    assert r.metric("eval_return") == 10.0
    assert load_run(make_run(tmp_path, "b", [1.0], finished=False)).status == "unfinished"
    assert load_run(make_run(tmp_path, "c", [1.0], finished=False, error="boom")).status == "failed"


def test_grouping_and_summary_table(tmp_path):
    for lam in (0.9, 0.95):
        for seed, final in zip((1, 2, 3, 4), (10.0, 20.0, 30.0, 40.0)):
            make_run(tmp_path, f"l{lam}_s{seed}", [0.0, final], gae_lambda=lam, seed=seed)
    make_run(tmp_path, "unfinished", [1.0], finished=False, gae_lambda=0.9, seed=5)
    runs = load_runs([tmp_path])
    assert len(runs) == 9
    assert varying_fields(runs) == ["gae_lambda"]  # seed differs too, but is never a grouping field
    assert list(group_runs(runs, ["gae_lambda"])) == [(0.9,), (0.95,)]
    rows = summarize(runs, ["gae_lambda"])
    row = rows[0]
    assert row["gae_lambda"] == "0.9" and row["n_finished"] == 4 and row["n_unfinished"] == 1
    assert row["final_return_mean"] == pytest.approx(25.0)
    assert row["final_return_iqm"] == pytest.approx(25.0)  # mean(20, 30)
    assert row["eval_return_mean"] == pytest.approx(50.0)
    assert row["auc_mean"] == pytest.approx(12.5)  # each run: (0 + final) / 2
    assert 10.0 <= row["final_return_ci_low"] < 25.0 < row["final_return_ci_high"] <= 40.0
    table = markdown_table(rows)
    assert "| gae_lambda=0.9 | 4 (+1 unfinished) | 25.0 [" in table
    assert len(run_rows(runs)) == 9


def test_write_tables_records_provenance(tmp_path):
    make_run(tmp_path / "runs", "a", [1.0, 2.0])
    rows = summarize(load_runs([tmp_path / "runs"]), [])
    md, cs = write_tables(rows, tmp_path / "out" / "table", {"command": "ppo-control plot x", "commit": "abc"})
    assert "- command: ppo-control plot x" in md.read_text() and "| all runs | 1 |" in md.read_text()
    lines = cs.read_text().splitlines()
    assert lines[0] == "# command: ppo-control plot x"
    data = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    assert data[0]["setting"] == "all runs" and float(data[0]["final_return_mean"]) == 2.0


def test_find_runs_errors_on_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_runs([tmp_path / "nope"])
    with pytest.raises(KeyError, match="no run has config field"):
        group_runs(load_runs([make_run(tmp_path, "a", [1.0])]), ["not_a_field"])


def test_peak_of_the_seed_mean_eval_curve_by_hand(tmp_path):
    import json as _json

    from ppo_control.experiments.aggregate import load_run, peak_of_mean_eval
    evals = {1: [(50_000, 10.0), (100_500, 30.0), (150_000, 20.0)],   # seed 1
             2: [(51_000, 20.0), (100_000, 10.0), (150_200, 40.0)]}   # seed 2: other iteration boundaries
    runs = []
    for seed, pts in evals.items():
        d = write_run(tmp_path, f"s{seed}", [1.0, 2.0], seed=seed, eval_interval=50_000)
        with open(d / "metrics.jsonl", "a") as f:
            for step, v in pts:
                f.write(_json.dumps({"iteration": 9, "global_step": step, "eval/return": v}) + "\n")
        runs.append(load_run(d))
    # seed means at 50k, 100k, 150k: 15, 20, 30 -> peak 30 (a single seed's best, 40, is not it)
    assert peak_of_mean_eval(runs) == 30.0
    assert math.isnan(peak_of_mean_eval([load_run(write_run(tmp_path, "no_eval", [1.0]))]))


def _grpo_targets():
    return load_benchmark("grpo_targets")


def test_grpo_targets_label_names_a_field_only_where_rows_differ():
    """Two 10M GRPO settings that differ only in ent_coef get ent_coef in their label; one that does not, not."""
    mod = _grpo_targets()
    base = dict(start_state="visited", horizon="512", gamma="0.998", grpo_adv_scale="group", ent_coef="0",
                lr="0.0003")
    assert mod.label_keys([base]) == ["start_state", "horizon", "gamma", "grpo_adv_scale"]
    two = [base, dict(base, ent_coef="0.01")]
    assert mod.label_keys(two) == ["start_state", "horizon", "gamma", "grpo_adv_scale", "ent_coef"]
    # a difference in a labelled field adds nothing more
    assert mod.label_keys([base, dict(base, horizon="256")]) == ["start_state", "horizon", "gamma", "grpo_adv_scale"]


def test_grpo_targets_side_baselines_are_the_suites_other_ppo_settings_and_leave_the_verdicts_runs_out(
        tmp_path, monkeypatch):
    """The 10M side table: the 10M suite's default-preset runs and tuned runs with a changed schedule, found by
    their configs wherever they lie and labelled by setting (an unfinished one too: the side table counts the
    finished); the plain tuned runs (the verdict's baseline) and runs of another task are not."""
    from pathlib import Path
    from ppo_control.config import make_config
    from ppo_control.experiments.suites import RunIndex
    mod = _grpo_targets()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchmarks" / "suites").mkdir(parents=True)
    (tmp_path / "benchmarks" / "suites" / "t10.toml").write_text(
        'tasks = ["Ant-v5", "Hopper-v5"]\ntotal_steps = 2048\nseeds = [1, 2]\n'
        '[settings.ppo_tuned]\npreset = "tuned"\n[settings.ppo_default]\npreset = "default"\n'
        '[settings.ppo_tuned_anneal_lr]\npreset = "tuned"\ntasks = ["Ant-v5"]\nanneal_lr = true\n'
        'lr_adapt_kl = "none"\n')

    def run(rel, preset, env, seed, finished=True, **kw):
        d = tmp_path / "results" / "runs" / rel
        d.mkdir(parents=True)
        cfg = make_config(preset, env_id=env, seed=seed, total_steps=2048, **kw).to_dict()
        (d / "config.json").write_text(json.dumps({"config": cfg}))
        if finished:
            (d / "summary.json").write_text("{}")
    for seed in (1, 2):
        run(f"a/tuned{seed}", "tuned", "Ant-v5", seed)
        run(f"b/annealed{seed}", "tuned", "Ant-v5", seed, anneal_lr=True, lr_adapt_kl=None)
        run(f"c/hopper_default{seed}", "default", "Hopper-v5", seed)
    run("c/default1", "default", "Ant-v5", 1)
    run("c/default2", "default", "Ant-v5", 2, finished=False)
    monkeypatch.setattr(mod, "TEN_M", "t10")
    monkeypatch.setattr(mod, "_index", lambda: RunIndex(Path("results/runs")))
    got = {k: [str(d.relative_to(Path("results/runs"))) for d in v] for k, v in mod.baseline_groups("Ant-v5").items()}
    assert got == {"default preset": ["c/default1", "c/default2"],
                   "tuned preset, lr annealed over the run": ["b/annealed1", "b/annealed2"]}
    assert [d.name for d in mod.ten_m_dirs("Ant-v5", "ppo_tuned".__eq__)] == ["tuned1", "tuned2"]
    assert mod.baseline_groups("Walker2d-v5") == {}


def test_late_eval_averages_the_evaluations_in_the_last_fifth_of_the_run(tmp_path):
    from ppo_control.experiments.aggregate import late_eval
    d = make_run(tmp_path, "a", [1.0, 2.0, 3.0, 4.0, 5.0], total_steps=500)
    with open(d / "metrics.jsonl", "a") as f:  # periodic evaluations at steps 300, 400 and 500
        for step, v in ((300, 10.0), (400, 20.0), (500, 40.0)):
            f.write(json.dumps({"iteration": 9, "global_step": step, "wall_time": 1.0, "eval/return": v}) + "\n")
    r = load_run(d)
    assert late_eval(r) == pytest.approx((20.0 + 40.0) / 2)  # steps >= 0.8 * 500 = 400
    assert r.metric("late_eval") == pytest.approx(30.0)
    assert late_eval(r, fraction=0.5) == pytest.approx(70.0 / 3)  # 300, 400, 500
    assert math.isnan(late_eval(load_run(make_run(tmp_path, "b", [1.0]))))


def test_old_runs_with_only_metrics_csv_are_read(tmp_path):
    d = make_run(tmp_path, "a", [1.0, None, 3.0])
    (d / "metrics.jsonl").unlink()
    (d / "metrics.csv").write_text("iteration,global_step,wall_time,charts/episodic_return\n"
                                   "1,100,0.5,1.0\n2,200,1.0,\n3,300,1.5,3.0\n")
    r = load_run(d)
    assert r.steps.tolist() == [100, 300] and r.returns.tolist() == [1.0, 3.0]
    assert r.rows[1] == {"iteration": 2, "global_step": 200, "wall_time": 1.0, "charts/episodic_return": None}


def test_a_compressed_metrics_file_reads_the_same(tmp_path):
    import gzip
    d = make_run(tmp_path, "a", [1.0, None, 3.0])
    rows = load_run(d).rows
    with gzip.open(d / "metrics.jsonl.gz", "wt") as f:
        f.write((d / "metrics.jsonl").read_text())
    (d / "metrics.jsonl").unlink()
    r = load_run(d)
    assert r.rows == rows and r.returns.tolist() == [1.0, 3.0]


def test_hold_ratio_is_the_final_eval_over_the_runs_own_eval_at_1m(tmp_path):
    from ppo_control.experiments.aggregate import hold_ratio
    from ppo_control.experiments.report import _metric_cell
    runs = []
    for name, final, at_1m in (("a", 900.0, 1000.0), ("b", 2400.0, 1200.0)):
        d = make_run(tmp_path, name, [1.0, 2.0], total_steps=3_000_000)
        with open(d / "metrics.jsonl", "a") as f:  # evaluations at 0.5M, 1M (the one used), 2M
            for step, v in ((500_000, 50.0), (1_000_000, at_1m), (2_000_000, 5.0)):
                f.write(json.dumps({"iteration": 9, "global_step": step, "wall_time": 1.0, "eval/return": v}) + "\n")
        summary = json.loads((d / "summary.json").read_text()) if (d / "summary.json").exists() else {}
        (d / "summary.json").write_text(json.dumps(dict(summary, eval_return=final)))
        runs.append(load_run(d))
    assert hold_ratio(runs[0]) == pytest.approx(0.9) and hold_ratio(runs[1]) == pytest.approx(2.0)
    assert _metric_cell("hold_1m", runs)[0] == "90%"  # the worst seed
    assert math.isnan(hold_ratio(runs[0], at=5_000_000))  # no evaluation that late
