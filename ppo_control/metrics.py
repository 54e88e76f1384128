"""Per-iteration metrics: TensorBoard scalars, one JSON line per iteration, a live progress bar.

``metrics.jsonl`` is what every report reads, so TensorBoard is never needed to look at a run.
A finished run's file can be packed (:func:`pack_metrics`, ``ppo-control pack``) into
``metrics.jsonl.xz``: the same rows, the float32 metrics written with the digits float32 needs,
xz-compressed, about 9x smaller, read back bit for bit.  One format per run: old runs hold a
``metrics.csv`` (read where a run has nothing else).  Metric names follow the community's
(``charts/episodic_return``, ``losses/approx_kl`` ...).
"""
from __future__ import annotations

import csv
import gzip
import json
import lzma
import math
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from .checkpoint import _atomic_write

CSV_NAME, JSONL_NAME = "metrics.csv", "metrics.jsonl"
PACKED_NAME = JSONL_NAME + ".xz"
# every name a run's rows may be stored under, in the order readers prefer them
METRICS_NAMES = (JSONL_NAME, PACKED_NAME, JSONL_NAME + ".gz", CSV_NAME)
# the first line of a packed file: which columns hold float32 values written short
PACK_FORMAT = "ppo_control.metrics/1"


def metrics_file(run_dir) -> Optional[Path]:
    """The file holding a run's rows: metrics.jsonl (a run being written), metrics.jsonl.xz (packed),
    metrics.jsonl.gz, or an old run's metrics.csv; None if there is none."""
    for name in METRICS_NAMES:
        if (Path(run_dir) / name).exists():
            return Path(run_dir) / name
    return None


def read_metrics(run_dir) -> list:
    """A run's per-iteration rows (dicts; None = no data), from whichever :func:`metrics_file` it has."""
    path = metrics_file(run_dir)
    return [] if path is None else read_metrics_file(path)


def read_metrics_file(path) -> list:
    """The rows of one metrics file, whatever its format."""
    path = Path(path)
    if path.name == CSV_NAME:
        with open(path, newline="") as f:
            return [{k: _csv_value(v) for k, v in r.items()} for r in csv.DictReader(f)]
    return read_jsonl(path)


def _csv_value(text: str):
    if text == "":
        return None
    try:
        x = float(text)
    except ValueError:
        return text
    return int(x) if x.is_integer() and "." not in text and "e" not in text.lower() else x


def read_jsonl(path) -> list:
    """One dict per line; a ``.gz`` / ``.xz`` path is read through gzip / lzma, and a packed file's
    float32 columns are restored to the exact values logged; stops at a line cut by a kill mid-write."""
    rows, short = [], ()
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(Path(path).suffix, open)
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:  # a row cut by a kill mid-write
                    break
                if not rows and not short and row.get("format") == PACK_FORMAT:
                    short = row["float32"]
                    continue
                for k in short:
                    if isinstance(row.get(k), float):
                        row[k] = float(np.float32(row[k]))
                rows.append(row)
    return rows


def _float32_columns(rows: list) -> List[str]:
    """The columns whose every float is exactly a float32 (losses, std: torch scalars)."""
    floats: dict = {}
    for r in rows:
        for k, v in r.items():
            if isinstance(v, float):
                floats[k] = floats.get(k, True) and float(np.float32(v)) == v
    return sorted(k for k, ok in floats.items() if ok)


def _packed_text(rows: list) -> str:
    """The header line, then each row with its float32 columns in the shortest decimal that reads back
    as the same float32 (a Python float prints 17 digits of a float32's double: ~25% more after xz)."""
    short = set(_float32_columns(rows))

    def value(k, v):
        if k in short and isinstance(v, float) and math.isfinite(v):
            text = str(np.float32(v))
            if float(np.float32(float(text))) == v:
                return text
        return json.dumps(v)
    lines = [json.dumps({"format": PACK_FORMAT, "float32": sorted(short)})]
    lines += ["{" + ", ".join(f"{json.dumps(k)}: {value(k, v)}" for k, v in r.items()) + "}" for r in rows]
    return "\n".join(lines) + "\n"


class PackError(RuntimeError):
    """A run's metrics could not be packed without losing or changing a value."""


def pack_metrics(run_dir) -> Tuple[int, int]:
    """Replace a run's metrics.jsonl (and an old duplicate metrics.csv) by metrics.jsonl.xz, after reading
    the packed file back and finding every row equal, value and type. Returns (bytes before, after).
    The caller holds the run's lock; a resumed run unpacks it again (:class:`MetricsLogger`)."""
    run_dir = Path(run_dir)
    src, dst = run_dir / JSONL_NAME, run_dir / PACKED_NAME
    rows = read_jsonl(src)
    lines = sum(1 for line in open(src) if line.strip())
    if lines != len(rows):  # read_jsonl stops at a line that does not parse: the rest would be lost
        raise PackError(f"{src}: line {len(rows) + 1} of {lines} does not parse: not packed")
    before = src.stat().st_size
    dupes = [run_dir / n for n in METRICS_NAMES if n not in (JSONL_NAME, PACKED_NAME) and (run_dir / n).exists()]
    for d in dupes:
        if not _same_rows(read_metrics_file(d), rows):
            raise PackError(f"{d} differs from {src}: not packed; compare them and keep the right one")
        before += d.stat().st_size
    data = lzma.compress(_packed_text(rows).encode(), preset=9 | lzma.PRESET_EXTREME)
    _atomic_write(dst, lambda f: f.write(data))
    if json.dumps(read_jsonl(dst)) != json.dumps(rows):
        dst.unlink()
        raise PackError(f"{dst} does not read back as {src}: not packed")
    for d in [src, *dupes]:
        d.unlink()
    return before, len(data)


def _same_rows(copy: list, rows: list) -> bool:
    """``copy`` holds ``rows``' values, type for type (a CSV copy may add empty columns)."""
    return len(copy) == len(rows) and all(
        json.dumps({k: c.get(k) for k in r}) == json.dumps(r) and all(c[k] is None for k in c.keys() - r.keys())
        for c, r in zip(copy, rows))


def unpack_metrics(run_dir) -> None:
    """Write a packed run's rows back to metrics.jsonl (to append to them), then drop the packed file."""
    run_dir = Path(run_dir)
    src = run_dir / PACKED_NAME
    if src.exists() and not (run_dir / JSONL_NAME).exists():
        rows = read_jsonl(src)
        _atomic_write(run_dir / JSONL_NAME, lambda f: f.write("".join(json.dumps(r) + "\n" for r in rows).encode()))
    src.unlink(missing_ok=True)


class MetricsLogger:
    def __init__(self, run_dir, tensorboard: bool = True, resume_iteration: Optional[int] = None,
                 resume_step: Optional[int] = None):
        self.run_dir = Path(run_dir)
        self.jsonl_path = self.run_dir / JSONL_NAME
        if resume_iteration is not None:
            unpack_metrics(self.run_dir)
            self._truncate(resume_iteration)
        else:  # a fresh start in a reused folder
            for name in METRICS_NAMES:
                (self.run_dir / name).unlink(missing_ok=True)
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
