"""metrics.jsonl.xz: a finished run's rows packed, read back bit for bit, unpacked when the run resumes."""
import json
import lzma

import numpy as np
import pytest
import torch

from ppo_control.cli import main
from ppo_control.metrics import (JSONL_NAME, PACKED_NAME, MetricsLogger, PackError, metrics_file, pack_metrics,
                                 read_metrics)
from ppo_control.rundir import RunLock


def _rows(n=50, seed=0):
    g = np.random.default_rng(seed)
    rows = []
    for i in range(1, n + 1):
        rows.append({"iteration": i, "global_step": 2048 * i, "wall_time": round(0.37 * i, 3),
                     "charts/episodic_return": float(g.normal(1000, 300)),   # a float64 mean of returns
                     "losses/approx_kl": torch.tensor(g.random() / 50, dtype=torch.float32).item(),  # a float32
                     "policy/std_mean": torch.tensor(1.0 - i / 100).item(),
                     "losses/epochs": 10, "eval/return": None if i % 10 else float(g.normal(2000, 10))})
    return rows


def _write(run, rows):
    run.mkdir(parents=True, exist_ok=True)
    (run / JSONL_NAME).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "summary.json").write_text("{}")


def test_pack_reads_back_every_value_and_type_and_writes_float32_short(tmp_path):
    rows = _rows()
    _write(tmp_path / "r", rows)
    before, after = pack_metrics(tmp_path / "r")
    assert not (tmp_path / "r" / JSONL_NAME).exists() and metrics_file(tmp_path / "r").name == PACKED_NAME
    assert json.dumps(read_metrics(tmp_path / "r")) == json.dumps(rows)
    assert after < before / 3
    text = lzma.decompress((tmp_path / "r" / PACKED_NAME).read_bytes()).decode().splitlines()
    assert json.loads(text[0]) == {"format": "ppo_control.metrics/1", "float32": ["losses/approx_kl", "policy/std_mean"]}
    # float32(0.99) is 0.9900000095367432 as a double: packed as the 4 characters float32 needs, read back exactly
    assert '"policy/std_mean": 0.99,' in text[1]
    assert read_metrics(tmp_path / "r")[0]["policy/std_mean"] == 0.9900000095367432
    # a float64 column keeps its 17 digits
    assert json.dumps(rows[0]["charts/episodic_return"]) in text[1]


def test_a_differing_csv_copy_stops_the_pack_and_nothing_is_removed(tmp_path):
    rows = _rows(3)
    _write(tmp_path / "r", rows)
    keys = list(rows[0])
    lines = [",".join(keys)] + [",".join("" if r[k] is None else repr(r[k]) for k in keys) for r in rows]
    (tmp_path / "r" / "metrics.csv").write_text("\n".join(lines) + "\n")
    pack_metrics(tmp_path / "r")  # an equal copy goes with the jsonl
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [PACKED_NAME, "summary.json"]
    _write(tmp_path / "s", rows)
    lines[2] = lines[2].replace("2,4096", "2,4097")
    (tmp_path / "s" / "metrics.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(PackError, match="metrics.csv differs"):
        pack_metrics(tmp_path / "s")
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["metrics.csv", JSONL_NAME, "summary.json"]


def test_a_line_that_does_not_parse_stops_the_pack_instead_of_losing_the_rows_after_it(tmp_path):
    rows = _rows(4)
    _write(tmp_path / "r", rows)
    text = (tmp_path / "r" / JSONL_NAME).read_text().splitlines()
    text[1] = text[1][:20]
    (tmp_path / "r" / JSONL_NAME).write_text("\n".join(text) + "\n")
    with pytest.raises(PackError, match="line 2 of 4 does not parse"):
        pack_metrics(tmp_path / "r")
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [JSONL_NAME, "summary.json"]


def test_a_resumed_run_unpacks_keeps_rows_up_to_its_checkpoint_and_appends(tmp_path):
    rows = _rows(5)
    _write(tmp_path / "r", rows)
    pack_metrics(tmp_path / "r")
    log = MetricsLogger(tmp_path / "r", tensorboard=False, resume_iteration=3, resume_step=3 * 2048)
    log.log({"iteration": 4, "global_step": 4 * 2048, "x": 1.5})
    log.close()
    assert not (tmp_path / "r" / PACKED_NAME).exists()
    got = read_metrics(tmp_path / "r")
    assert json.dumps(got[:3]) == json.dumps(rows[:3]) and got[3] == {"iteration": 4, "global_step": 8192, "x": 1.5}
    # a fresh start in the same folder leaves no old metrics file of any format behind
    pack_metrics(tmp_path / "r")
    MetricsLogger(tmp_path / "r", tensorboard=False).close()
    assert [p.name for p in tmp_path.joinpath("r").glob("metrics*")] == [JSONL_NAME]
    assert read_metrics(tmp_path / "r") == []


def test_pack_command_packs_finished_runs_and_skips_unfinished_and_locked_ones(tmp_path, capsys):
    _write(tmp_path / "a" / "done", _rows(4))
    _write(tmp_path / "a" / "busy", _rows(4))
    _write(tmp_path / "a" / "running", _rows(4))
    (tmp_path / "a" / "running" / "summary.json").unlink()
    assert main(["pack", "--dry-run", str(tmp_path / "a")]) == 0  # lists, changes nothing
    assert capsys.readouterr().out.count("would pack ") == 2
    assert not list(tmp_path.rglob(PACKED_NAME))
    lock = RunLock(tmp_path / "a" / "busy", ["train"]).acquire()
    try:
        assert main(["pack", str(tmp_path / "a")]) == 0
    finally:
        lock.release()
    out = capsys.readouterr().out
    assert f"packed {tmp_path / 'a' / 'done'}" in out and f"skipped {tmp_path / 'a' / 'busy'}" in out
    assert (tmp_path / "a" / "done" / PACKED_NAME).exists()
    assert (tmp_path / "a" / "busy" / JSONL_NAME).exists() and (tmp_path / "a" / "running" / JSONL_NAME).exists()
    assert main(["pack", str(tmp_path / "nope")]) == 2
    assert "not a folder" in capsys.readouterr().err
