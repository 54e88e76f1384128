"""``report``: a suite's tables from its runs, the README/docs blocks from the tables, and --check; ``bench``
on a tiny suite (real training, slow)."""
import json
import os
from pathlib import Path

import pytest

from ppo_control.cli import main
from ppo_control.experiments.report import FOOTER, fill_blocks, first_table
from ppo_control.metrics import read_metrics
from ppo_control.rundir import RunLock
from rundirs import write_run

SUITE = """
description = "A tiny suite. For the tests."
tasks = ["Hopper-v5"]
total_steps = 300
seeds = [1, 2]

[settings.a]
[settings.b]
lr = 0.001

[[table]]
out = "results/tiny/t"
metrics = ["eval_return", "final_return", "wall_time"]
baseline = "b"
"""


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A checkout in miniature: the suite file, runs made by hand, a docs page with a block."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchmarks" / "suites").mkdir(parents=True)
    (tmp_path / "benchmarks" / "suites" / "tiny.toml").write_text(SUITE)
    runs = tmp_path / "results" / "runs" / "made_before"
    runs.mkdir(parents=True)
    # setting a: final returns 10 and 30 (eval = 2x: 20, 60); setting b: 20 and 20 (eval 40, 40)
    for seed, ret in ((1, 10.0), (2, 30.0)):
        write_run(runs, f"a{seed}", [1.0, ret], seed=seed, total_steps=300)
        write_run(runs, f"b{seed}", [1.0, 20.0], seed=seed, total_steps=300, lr=0.001)
    write_run(runs, "other", [5.0, 500.0], seed=1, total_steps=300, lr=0.5)  # no setting of the suite
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("Intro.\n\n<!-- table: results/tiny/t.md -->\nold\n<!-- /table -->\n")
    return tmp_path


def test_report_writes_the_table_fills_the_page_and_check_passes(repo, capsys):
    assert main(["report", "tiny"]) == 0
    md = (repo / "results" / "tiny" / "t.md").read_text()
    table = first_table(md)
    # mean [95% bootstrap CI]: two seeds' resampled means are the two values or their mean, so the CI
    # spans them; the ratio's CI divides a's ends by b's constant 40
    assert table.splitlines()[2] == \
        "| Hopper-v5 | a | 2 | 40.0 [20.0, 60.0] | 20.0 [10.0, 30.0] | 10 s | 100% [50, 150] |"
    assert table.splitlines()[3] == "| Hopper-v5 | b | 2 | 40.0 [40.0, 40.0] | 20.0 [20.0, 20.0] | 10 s | (baseline) |"
    assert md.index(FOOTER) > md.index("eval return = deterministic evaluation")
    assert "- command: ppo-control report tiny" in md
    csv = (repo / "results" / "tiny" / "t.csv").read_text().splitlines()
    assert csv[0].startswith("# command: ") and "task,setting,seeds,n_wanted,eval_return_n" in "\n".join(csv)
    page = (repo / "docs" / "page.md").read_text()
    assert page == "Intro.\n\n<!-- table: results/tiny/t.md -->\n" + table + "<!-- /table -->\n"
    capsys.readouterr()
    assert main(["report", "--all", "--check"]) == 0
    assert "report --check: 0 would change; 1 tables and 1 pages checked" in capsys.readouterr().out


def test_a_tasks_note_column_is_written_once_on_its_first_row(repo, capsys):
    suite = repo / "benchmarks" / "suites" / "tiny.toml"
    suite.write_text(SUITE + '[table.notes]\n"published" = { "Hopper-v5" = "3,128 (X)" }\n')
    assert main(["report", "tiny"]) == 0
    lines = first_table((repo / "results" / "tiny" / "t.md").read_text()).splitlines()
    assert lines[0].endswith("| published |")
    assert lines[2].endswith("| 100% [50, 150] | 3,128 (X) |") and lines[3].endswith("| (baseline) |  |")


def test_check_names_every_stale_table_and_page_and_ignores_footers(repo, capsys):
    assert main(["report", "tiny"]) == 0
    md = repo / "results" / "tiny" / "t.md"
    md.write_text(md.read_text().replace("- created: ", "- created: 1999 "))  # a footer: not compared
    assert main(["report", "--all", "--check"]) == 0
    md.write_text(md.read_text().replace("| 40.0 [20.0, 60.0] |", "| 41.0 [20.0, 60.0] |"))
    page = repo / "docs" / "page.md"
    page.write_text(page.read_text().replace("| b |", "| B |"))
    before = md.read_text(), page.read_text()
    capsys.readouterr()
    assert main(["report", "--all", "--check"]) == 1
    out = capsys.readouterr().out
    assert "would change: results/tiny/t.md (from suite tiny)" in out
    assert "would change: docs/page.md (a table block)" in out
    assert "t.csv" not in out  # the csv still holds what the runs give
    assert (md.read_text(), page.read_text()) == before  # --check writes nothing
    # a new seed (a run made later, anywhere under results/runs) makes the table stale too
    assert main(["report", "tiny"]) == 0
    (repo / "benchmarks" / "suites" / "tiny.toml").write_text(SUITE.replace("seeds = [1, 2]", "seeds = [1, 2, 3]"))
    write_run(repo / "results" / "runs", "late", [1.0, 50.0], seed=3, total_steps=300)
    assert main(["report", "--all", "--check"]) == 1


def test_a_block_naming_a_missing_results_file_is_an_error(repo, capsys):
    (repo / "docs" / "page.md").write_text("<!-- table: results/nope.md -->\n<!-- /table -->\n")
    assert main(["report", "tiny"]) == 2
    assert "results/nope.md" in capsys.readouterr().err


def test_first_table_and_block_filling():
    text = "# t\n\nwords\n| a | b |\n|---|---|\n| 1 | 2 |\n\n| second | table |\n"
    assert first_table(text) == "| a | b |\n|---|---|\n| 1 | 2 |\n"
    page = "x\n<!-- table: r/1.md -->\nstale\nlines\n<!-- /table -->\ny <!-- table: r/2.md -->\n<!-- /table -->\n"
    got = fill_blocks(page, {"r/1.md": "| 1 |\n", "r/2.md": "no table\n"}.get)
    assert got == "x\n<!-- table: r/1.md -->\n| 1 |\n<!-- /table -->\ny <!-- table: r/2.md -->\n<!-- /table -->\n"


def test_bench_dry_run_lists_found_and_new_runs(repo, capsys):
    assert main(["bench", "benchmarks/suites/tiny.toml", "--seeds", "2", "3", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["finished Hopper-v5 a seed 2: results/runs/made_before/a2",
                   "finished Hopper-v5 b seed 2: results/runs/made_before/b2", "2 jobs, 0 not started; 0 commands"]
    assert main(["bench", "tiny", "--tasks", "Ant-v5", "--dry-run"]) == 2  # no job: a usage error


TINY = """
tasks = ["InvertedPendulum-v5"]
preset = "default"
total_steps = 256
seeds = [1, 2]
overrides = { num_envs = 2, num_steps = 64, num_minibatches = 2, update_epochs = 1, eval_episodes = 1, \
              tensorboard = false }

[[table]]
out = "results/tiny/bench"
metrics = ["eval_return", "final_return"]
"""


@pytest.mark.slow
def test_pack_into_a_suite_moves_its_runs_to_suite_task_setting_seed_and_the_table_is_unchanged(repo, capsys):
    assert main(["report", "tiny"]) == 0
    table = first_table((repo / "results" / "tiny" / "t.md").read_text())
    capsys.readouterr()
    assert main(["pack", "results/runs/made_before", "--into", "tiny", "--dry-run"]) == 0
    assert capsys.readouterr().out.count("would move ") == 4 and (repo / "results/runs/made_before/a1").is_dir()
    lock = RunLock(repo / "results/runs/made_before/b2", ["train"]).acquire()  # being extended: stays
    try:
        assert main(["pack", "results/runs/made_before", "--into", "tiny"]) == 0
    finally:
        lock.release()
    out = capsys.readouterr().out
    placed = repo / "results" / "runs" / "tiny" / "Hopper-v5"
    assert sorted(str(p.relative_to(placed)) for p in placed.glob("*/seed_*")) == ["a/seed_1", "a/seed_2", "b/seed_1"]
    assert (placed / "a" / "seed_2" / "metrics.jsonl.xz").exists() and not (repo / "results/runs/made_before/a2").exists()
    assert "stays" in out and (repo / "results/runs/made_before/b2").is_dir()  # locked
    assert (repo / "results/runs/made_before/other").is_dir()  # no job of the suite finds it
    # the same runs found in their new places, in seed order as before: no table changes but its footer
    assert main(["report", "tiny", "--check"]) == 0
    assert main(["report", "tiny"]) == 0 and first_table((repo / "results" / "tiny" / "t.md").read_text()) == table
    assert "results/runs/tiny/Hopper-v5/a" in (repo / "results" / "tiny" / "t.md").read_text()  # the footer's folders
    assert main(["pack", "results/runs/made_before", "--into", "tiny"]) == 0  # b2 now; a placed run stays put
    assert (placed / "b" / "seed_2").is_dir() and (placed / "a" / "seed_1").is_dir()
    assert main(["pack", "results/runs", "--into", "nope"]) == 2  # a bad suite name: one line, nothing moved
    assert "no suite file" in capsys.readouterr().err and (placed / "a" / "seed_1").is_dir()


def test_bench_runs_a_tiny_suite_resumably_and_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchmarks" / "suites").mkdir(parents=True)
    (tmp_path / "benchmarks" / "suites" / "tiny.toml").write_text(TINY)
    assert main(["bench", "tiny", "--workers", "2"]) == 0
    runs = tmp_path / "results" / "runs" / "tiny" / "InvertedPendulum-v5" / "default"
    assert sorted(p.name for p in runs.iterdir()) == ["seed_1", "seed_2"]
    for seed in (1, 2):
        summary = json.loads((runs / f"seed_{seed}" / "summary.json").read_text())
        assert summary["global_step"] == 256
        run = runs / f"seed_{seed}"
        # bench packs the runs it finishes: one metrics file, compressed
        assert sorted(p.name for p in run.glob("metrics*")) == ["metrics.jsonl.xz"]
        assert [r["global_step"] for r in read_metrics(run)] == [128, 256]
    assert "| InvertedPendulum-v5 | 2 |" in Path("results/tiny/bench.md").read_text()
    capsys.readouterr()
    assert main(["bench", "tiny", "--dry-run"]) == 0  # the same command again: nothing left to run
    assert capsys.readouterr().out.count("finished ") == 2
    assert main(["report", "--all", "--check"]) == 0
    # a run stopped before its end (checkpoint, no summary) is resumed where it lies, with --seeds
    summary = json.loads((runs / "seed_2" / "summary.json").read_text())
    (runs / "seed_2" / "summary.json").unlink()
    assert main(["bench", "tiny", "--seeds", "2", "--dry-run"]) == 0
    assert f"resume   InvertedPendulum-v5 default seed 2: {Path('results/runs/tiny/InvertedPendulum-v5/default/seed_2')}" \
        in capsys.readouterr().out
    assert main(["bench", "tiny", "--seeds", "2", "--no-report"]) == 0
    assert "(resume," in capsys.readouterr().out
    assert json.loads((runs / "seed_2" / "summary.json").read_text())["global_step"] == summary["global_step"]
    # the resumed run unpacked its rows, appended none twice, and was packed again
    assert sorted(p.name for p in (runs / "seed_2").glob("metrics*")) == ["metrics.jsonl.xz"]
    assert [r["global_step"] for r in read_metrics(runs / "seed_2")] == [128, 256]


@pytest.mark.slow
def test_the_committed_tables_and_pages_are_what_the_committed_runs_give(monkeypatch, capsys):
    """report --all --check on the checkout itself: every suite's tables recomputed from results/runs, every
    README/docs block against its results file (the rest of the check is cheap; this reads ~300 runs)."""
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    rc = main(["report", "--all", "--check"])
    assert rc == 0, capsys.readouterr().out


def test_a_command_suite_is_stale_until_its_outputs_exist(repo, capsys):
    (repo / "benchmarks" / "suites" / "m.toml").write_text('[[command]]\nrun = "echo x > results/m.md"\n'
                                                          'out = ["results/m.md"]\n')
    assert main(["report", "--all", "--check"]) == 1
    assert "results/m.md (made by suite m's commands: run bench m)" in capsys.readouterr().out
    assert main(["bench", "m", "--no-report"]) == 0
    assert (repo / "results" / "m.md").read_text() == "x\n"
    assert main(["report", "--all"]) == 0 and main(["report", "--all", "--check"]) == 0


def test_two_settings_that_are_one_config_run_once(tmp_path, monkeypatch, capsys):
    """mujoco_10m's Ant: the tuned row and the setting that chose it are one config, so one run serves both
    (two jobs of one run used to stop bench with "run names must be unique")."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchmarks" / "suites").mkdir(parents=True)
    suite = TINY.replace("seeds = [1, 2]", "seeds = [1]").replace('preset = "default"\n', "") + \
        '\n[settings.a]\npreset = "default"\n[settings.b]\npreset = "default"\ngamma = 0.99\n' \
        '[settings.c]\npreset = "default"\ngamma = 0.98\n'
    (tmp_path / "benchmarks" / "suites" / "two.toml").write_text(suite)
    assert main(["bench", "two", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[:3] == [
        f"new      InvertedPendulum-v5 a seed 1: {Path('results/runs/two/InvertedPendulum-v5/a/seed_1')}",
        f"= a      InvertedPendulum-v5 b seed 1: {Path('results/runs/two/InvertedPendulum-v5/b/seed_1')}",
        f"new      InvertedPendulum-v5 c seed 1: {Path('results/runs/two/InvertedPendulum-v5/c/seed_1')}"]
    assert main(["bench", "two", "--workers", "2"]) == 0
    made = tmp_path / "results" / "runs" / "two" / "InvertedPendulum-v5"
    assert sorted(p.name for p in made.iterdir()) == ["a", "c"]
    # --fresh: a run of c found outside c's own folder is run again there, and the table reads the new one
    os.rename(made / "c", tmp_path / "results" / "runs" / "elsewhere")
    capsys.readouterr()
    assert main(["bench", "two", "--dry-run"]) == 0
    assert f"finished InvertedPendulum-v5 c seed 1: {Path('results/runs/elsewhere')}" in capsys.readouterr().out
    assert main(["bench", "two", "--settings", "c", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("finished InvertedPendulum-v5 c seed 1")
    assert main(["bench", "two", "--settings", "x"]) == 2
    assert "suite two has no setting x; its settings: a, b, c" in capsys.readouterr().err
    assert main(["bench", "two", "--fresh", "--dry-run"]) == 0
    assert f"new      InvertedPendulum-v5 c seed 1: {Path('results/runs/two/InvertedPendulum-v5/c/seed_1')}" \
        in capsys.readouterr().out
    assert main(["bench", "two", "--fresh", "--settings", "c", "--workers", "1"]) == 0
    assert (made / "c" / "seed_1" / "summary.json").exists() and sorted(p.name for p in made.iterdir()) == ["a", "c"]
    assert "results/runs/two/InvertedPendulum-v5/c" in Path("results/tiny/bench.md").read_text()  # footer's folders
    rows = [r for r in Path("results/tiny/bench.md").read_text().splitlines() if r.startswith("| InvertedPendulum")]
    assert len(rows) == 3 and rows[0].split("|")[3:] == rows[1].split("|")[3:]  # b's row is a's run
