"""Per-iteration metrics: TensorBoard scalars, one JSON line per iteration, a live progress bar.

``metrics.jsonl`` is what every report reads, so TensorBoard is never needed to look at a run.
One format per run: runs made before this wrote a ``metrics.csv`` copy too, which
``read_metrics`` still reads where a run has no JSONL file.  Metric names follow the community's
(``charts/episodic_return``, ``losses/approx_kl`` ...).
"""
from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path
from typing import Optional

from .checkpoint import _atomic_write

CSV_NAME, JSONL_NAME = "metrics.csv", "metrics.jsonl"


def read_metrics(run_dir) -> list:
    """A run's per-iteration rows (dicts; None = no data): metrics.jsonl, else metrics.jsonl.gz (a finished
    run's file compressed where it is stored), else an old run's metrics.csv."""
    run_dir = Path(run_dir)
    if (run_dir / JSONL_NAME).exists():
        return read_jsonl(run_dir / JSONL_NAME)
    if (run_dir / (JSONL_NAME + ".gz")).exists():
        return read_jsonl(run_dir / (JSONL_NAME + ".gz"))
    if not (run_dir / CSV_NAME).exists():
        return []
    with open(run_dir / CSV_NAME, newline="") as f:
        return [{k: _csv_value(v) for k, v in r.items()} for r in csv.DictReader(f)]


def _csv_value(text: str):
    if text == "":
        return None
    try:
        x = float(text)
    except ValueError:
        return text
    return int(x) if x.is_integer() and "." not in text and "e" not in text.lower() else x


def read_jsonl(path) -> list:
    """One dict per line; a ``.gz`` path is read through gzip; stops at a line cut by a kill mid-write."""
    rows = []
    with (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:  # a row cut by a kill mid-write
                    break
    return rows


class MetricsLogger:
    def __init__(self, run_dir, tensorboard: bool = True, resume_iteration: Optional[int] = None,
                 resume_step: Optional[int] = None):
        self.run_dir = Path(run_dir)
        self.jsonl_path = self.run_dir / JSONL_NAME
        if resume_iteration is not None:
            self._truncate(resume_iteration)
        elif self.jsonl_path.exists():
            self.jsonl_path.unlink()
        # Events past the checkpoint (a kill -9 after it) are removed from the files themselves:
        # SummaryWriter's purge_step drops the checkpoint's own step too and relies on each reader
        # honouring its restart marker.
        keep_events_up_to(self.run_dir / "tb", resume_step if resume_iteration is not None else None)
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter
            self.writer = SummaryWriter(str(self.run_dir / "tb"))
        self._jsonl = open(self.jsonl_path, "a")

    def _truncate(self, iteration: int) -> None:
        """Keep only rows up to the checkpoint's iteration (a resumed run rewrites the rest)."""
        rows = read_jsonl(self.jsonl_path) if self.jsonl_path.exists() else []
        rows = [r for r in rows if r.get("iteration", 0) <= iteration]
        _atomic_write(self.jsonl_path, lambda f: f.write("".join(json.dumps(r) + "\n" for r in rows).encode()))

    def log(self, row: dict) -> None:
        """``row`` must hold ``iteration`` and ``global_step``; values are floats (NaN = no data)."""
        step = int(row["global_step"])
        if self.writer is not None:
            for k, v in row.items():
                if "/" in k and isinstance(v, (int, float)) and math.isfinite(v):
                    self.writer.add_scalar(k, v, step)
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
        self._jsonl.write(json.dumps(clean) + "\n")
        self._jsonl.flush()

    def close(self) -> None:
        self._jsonl.close()
        if self.writer is not None:
            self.writer.close()


def keep_events_up_to(tb_dir: Path, max_step: Optional[int]) -> None:
    """Rewrite the TensorBoard event files in ``tb_dir`` as one file holding only the scalar events
    with step <= ``max_step`` (None: remove them all, a fresh start in a reused folder)."""
    files = sorted(Path(tb_dir).glob("events.out.tfevents.*")) if Path(tb_dir).is_dir() else []
    if not files:
        return
    header, keep = None, []
    if max_step is not None:
        from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
        from tensorboard.compat.proto.event_pb2 import Event
        for f in files:
            for raw in RawEventFileLoader(str(f)).Load():  # stops quietly at a record cut by a kill
                ev = Event.FromString(raw)
                if ev.HasField("summary") and ev.step <= max_step:
                    keep.append(raw)
                elif ev.file_version and header is None:
                    header = raw
    if keep:
        from tensorboard.summary.writer.record_writer import RecordWriter

        def write(f):
            w = RecordWriter(f)
            for raw in [header] * (header is not None) + keep:
                w.write(raw)
        _atomic_write(files[0], write)  # the first name sorts before every file written later
        files = files[1:]
    for f in files:
        f.unlink()


class Progress:
    """tqdm bar over env steps showing the latest return and SPS (a no-op when disabled)."""

    def __init__(self, total: int, initial: int = 0, enabled: bool = True, desc: str = ""):
        self.bar = None
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=initial, unit="step", unit_scale=True, desc=desc,
                            dynamic_ncols=True, smoothing=0.1)

    def update(self, n: int, ret: float, sps: float) -> None:
        if self.bar is not None:
            self.bar.update(n)
            self.bar.set_postfix_str(f"return={ret:9.1f} SPS={sps:6.0f}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
