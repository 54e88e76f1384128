"""Curve resampling and bands, heatmap cells, and PNG/table output on synthetic run directories."""
import json
import math

import numpy as np
import pytest
from PIL import Image

from ppo_control.cli import main
from ppo_control.experiments.aggregate import load_runs
from ppo_control.experiments.plotting import (common_grid, heatmap_values, mean_band, plot_heatmap,
                                              plot_learning_curves, resample, write_report)
from rundirs import write_run


def make_run(root, name, returns, finished=True, **cfg):
    return write_run(root, name, returns, finished, step=1000, wall_per_iter=0.7 * cfg.get("seed", 1),
                     eval_factor=1.0, summary_wall=1.0, summary_sps=1.0, **cfg)


@pytest.fixture
def sweep_dir(tmp_path):
    """2 x 2 grid (gae_lambda x ent_coef), 3 seeds, one cell unfinished; returns grow with lambda."""
    root = tmp_path / "runs"
    for lam in (0.9, 0.99):
        for ent in (0.0, 0.01):
            for seed in (1, 2, 3):
                curve = [lam * 100 * k / 20 + seed - 100 * ent if k % 5 != 3 else None for k in range(1, 21)]
                make_run(root, f"l{lam}_e{ent}_s{seed}", curve, finished=not (lam == 0.99 and ent == 0.01),
                         gae_lambda=lam, ent_coef=ent, seed=seed)
    return root


def assert_png(path, min_size=(200, 150)):
    assert path.exists()
    with Image.open(path) as im:
        im.verify()  # raises on a truncated or corrupt file
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] >= min_size[0] and im.size[1] >= min_size[1]
        assert im.mode == "P" and len(im.getpalette()) <= 3 * 256  # the palette file that keeps results/ small
        assert not list(path.parent.glob("*.tmp"))  # written through a temporary file
        return dict(im.text)


def test_grid_is_the_overlap_and_resampling_interpolates():
    a = (np.array([0.0, 10.0, 20.0]), np.array([0.0, 10.0, 20.0]))
    b = (np.array([5.0, 25.0]), np.array([1.0, 1.0]))
    grid = common_grid([a, b], points=3)
    assert grid.tolist() == [5.0, 12.5, 20.0]
    assert resample([a, b], grid).tolist() == [[5.0, 12.5, 20.0], [1.0, 1.0, 1.0]]
    # no overlap at all: fall back to the union rather than an empty grid
    assert common_grid([(np.array([0.0, 1.0]), np.zeros(2)), (np.array([2.0, 3.0]), np.zeros(2))], 4).tolist() \
        == [0.0, 1.0, 2.0, 3.0]


def test_band_is_a_ci_of_the_seed_mean():
    y = np.array([[1.0, 0.0, 5.0], [1.0, 10.0, 5.0]])  # [S=2, P=3]
    mean, lo, hi = mean_band(y)
    assert mean.tolist() == [1.0, 5.0, 5.0]
    assert lo.tolist() == [1.0, 0.0, 5.0] and hi.tolist() == [1.0, 10.0, 5.0]  # two seeds: CI spans both
    mean, lo, hi = mean_band(y[:1])
    assert lo is None and hi is None and mean.tolist() == [1.0, 0.0, 5.0]


def test_heatmap_cells_are_seed_means_of_finished_runs(sweep_dir):
    rows, cols, mean, count = heatmap_values(load_runs([sweep_dir]), "gae_lambda", "ent_coef")
    assert rows == [0.9, 0.99] and cols == [0.0, 0.01]
    # final return of seed s: lam*100 + s - 100*ent; mean over seeds 1..3 adds 2
    assert mean[0, 0] == pytest.approx(92.0) and mean[0, 1] == pytest.approx(91.0)
    assert mean[1, 0] == pytest.approx(101.0) and math.isnan(mean[1, 1])  # that cell never finished
    assert count.tolist() == [[3, 3], [3, 0]]


def test_learning_curve_and_heatmap_pngs(sweep_dir, tmp_path):
    runs = load_runs([sweep_dir])
    groups = {"lam=0.9": [r for r in runs if r.config["gae_lambda"] == 0.9],
              "lam=0.99": [r for r in runs if r.config["gae_lambda"] == 0.99]}
    text = assert_png(plot_learning_curves(groups, tmp_path / "out" / "curves.png", "steps", "Hopper",
                                           {"command": "pytest", "commit": "0123456789abcdef"}))
    assert json.loads(text["Description"])["commit"] == "0123456789abcdef"
    assert_png(plot_learning_curves(groups, tmp_path / "time.png", "time"))
    assert_png(plot_heatmap(runs, "gae_lambda", "ent_coef", tmp_path / "heat.png"), (150, 100))


def test_long_labels_put_the_legend_below_the_axes_inside_the_figure(sweep_dir, tmp_path, monkeypatch):
    from ppo_control.experiments import plotting
    runs = load_runs([sweep_dir])
    long = "algo=grpo, preset=default, start_state=visited, crn=false, grpo_advantage=per_step, horizon=512"
    groups = {long + ", gamma=0.9": [r for r in runs if r.config["gae_lambda"] == 0.9],
              long + ", gamma=0.99": [r for r in runs if r.config["gae_lambda"] == 0.99]}
    seen = {}
    real_save = plotting.save_figure

    def spy(fig, out, provenance=None):
        seen["fig"] = fig
        return real_save(fig, out, provenance)
    monkeypatch.setattr(plotting, "save_figure", spy)
    plot_learning_curves(groups, tmp_path / "long.png")
    fig = seen["fig"]
    ax = fig.axes[0]
    assert ax.get_legend() is None and len(fig.legends) == 1  # not over the curves
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    leg, axbox, figbox = fig.legends[0].get_window_extent(renderer), ax.get_window_extent(renderer), fig.bbox
    assert leg.y1 <= axbox.y0 + 1  # below the axes
    assert leg.x0 >= figbox.x0 - 1 and leg.x1 <= figbox.x1 + 1 and leg.y0 >= figbox.y0 - 1  # all of it in the figure
    plot_learning_curves({"lam=0.9": groups[long + ", gamma=0.9"]}, tmp_path / "short.png")
    assert seen["fig"].axes[0].get_legend() is not None and not seen["fig"].legends  # short: inside as before


def test_curve_labels_name_only_the_fields_that_differ_between_curves(sweep_dir, tmp_path, monkeypatch):
    from ppo_control.experiments import plotting
    seen = {}
    monkeypatch.setattr(plotting, "plot_learning_curves", lambda groups, *a, **k: seen.update(groups) or tmp_path)
    runs = [r for r in load_runs([sweep_dir]) if r.config["ent_coef"] == 0.0]  # ent_coef the same on every curve
    paths = write_report(runs, ["ent_coef", "gae_lambda"], tmp_path / "r.png")
    assert sorted(seen) == ["gae_lambda=0.9", "gae_lambda=0.99"]
    assert "| ent_coef=0, gae_lambda=0.9 | 3 |" in paths[0].read_text()  # the table keeps every field
    seen.clear()
    write_report([r for r in runs if r.config["gae_lambda"] == 0.9], ["ent_coef", "gae_lambda"], tmp_path / "o.png")
    assert list(seen) == ["ent_coef=0, gae_lambda=0.9"]  # one curve: nothing to tell apart, all fields named
    assert plotting.label_fields(["a", "b"], [(1, 2), (1, 3)]) == (["b"], [(2,), (3,)])


def test_plot_command_writes_curves_tables_and_heatmap(sweep_dir, tmp_path, capsys):
    out = tmp_path / "results" / "sweep.png"
    rc = main(["plot", str(sweep_dir), "--out", str(out), "--heatmap", "gae_lambda", "ent_coef"])
    assert rc == 0
    assert_png(out)
    assert_png(tmp_path / "results" / "sweep_heatmap.png", (150, 100))
    md = (tmp_path / "results" / "sweep.md").read_text()
    assert "| ent_coef=0, gae_lambda=0.9 | 3 |" in md and "- command: ppo-control plot" in md
    assert (tmp_path / "results" / "sweep.csv").read_text().startswith("# command: ppo-control plot")
    assert "ent_coef=0.01, gae_lambda=0.99 | 0 (+3 unfinished)" in capsys.readouterr().out


def test_several_envs_get_one_panel_each(tmp_path):
    for env in ("Hopper-v5", "Walker2d-v5"):
        for seed in (1, 2):
            make_run(tmp_path / "runs", f"{env}_s{seed}", [1.0, 2.0 * seed, 3.0], env_id=env, seed=seed)
    paths = write_report(load_runs([tmp_path / "runs"]), [], tmp_path / "bench.png", "time")
    assert [p.name for p in paths] == ["bench.md", "bench.csv", "bench.png"]
    assert_png(paths[-1], (600, 200))
    assert "| Hopper-v5 | 2 |" in paths[0].read_text() and "| Walker2d-v5 | 2 |" in paths[0].read_text()


def test_plot_also_draws_diagnostics_panels_and_refuses_unlogged_ones(tmp_path, capsys):
    root = tmp_path / "runs"
    for seed in (1, 2):
        d = make_run(root, f"s{seed}", [10.0 * k for k in range(1, 6)], seed=seed)
        rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
        with open(d / "metrics.jsonl", "w") as f:
            for i, r in enumerate(rows):
                f.write(json.dumps({**r, "policy/std_mean": 1.0 - 0.1 * i, "charts/learning_rate": 1e-3}) + "\n")
    out = tmp_path / "ant.png"
    assert main(["plot", str(root), "--also", "policy/std_mean", "charts/learning_rate", "--out", str(out)]) == 0
    assert_png(out) and assert_png(tmp_path / "ant_diagnostics.png", (400, 400))
    from ppo_control.experiments.plotting import with_curve
    run = load_runs([root / "s1"])[0]
    std = with_curve(run, "policy/std_mean")
    assert std.curve_key == "policy/std_mean" and list(std.returns) == pytest.approx([1.0, 0.9, 0.8, 0.7, 0.6])
    assert list(std.steps) == [1000, 2000, 3000, 4000, 5000]
    capsys.readouterr()
    assert main(["plot", str(root), "--also", "losses/approx_kl", "--out", str(tmp_path / "x.png")]) == 2
    assert "none of the 2 runs logged losses/approx_kl" in capsys.readouterr().err
    assert not (tmp_path / "x_diagnostics.png").exists()
