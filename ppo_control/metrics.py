"""Per-iteration metrics: TensorBoard scalars, CSV + JSONL rows, a live progress bar.

The CSV/JSONL files are what plotting reads, so TensorBoard is never needed to
look at a run.  Metric names follow the community's (``charts/episodic_return``,
``losses/approx_kl`` ...).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Optional

from .checkpoint import _atomic_write

CSV_NAME, JSONL_NAME = "metrics.csv", "metrics.jsonl"


def read_jsonl(path) -> list:
    rows = []
    with open(path) as f:
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
        self.jsonl_path, self.csv_path = self.run_dir / JSONL_NAME, self.run_dir / CSV_NAME
        self.columns = None
        if resume_iteration is not None:
            self._truncate(resume_iteration)
        elif self.jsonl_path.exists():
            self.jsonl_path.unlink()
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter
            # purge_step drops events past the checkpoint, so a resumed run has no duplicates
            self.writer = SummaryWriter(str(self.run_dir / "tb"), purge_step=resume_step)
        self._jsonl = open(self.jsonl_path, "a")

    def _truncate(self, iteration: int) -> None:
        """Keep only rows up to the checkpoint's iteration (a resumed run rewrites the rest)."""
        rows = read_jsonl(self.jsonl_path) if self.jsonl_path.exists() else []
        rows = [r for r in rows if r.get("iteration", 0) <= iteration]
        _atomic_write(self.jsonl_path, lambda f: f.write("".join(json.dumps(r) + "\n" for r in rows).encode()))
        if rows:
            self.columns = list(rows[0].keys())
        self._rewrite_csv(rows)

    def _rewrite_csv(self, rows) -> None:
        def write(f):
            import io
            buf = io.StringIO()
            if self.columns:
                w = csv.DictWriter(buf, fieldnames=self.columns, extrasaction="ignore")
                w.writeheader()
                w.writerows(rows)
            f.write(buf.getvalue().encode())
        _atomic_write(self.csv_path, write)

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
        new_file = self.columns is None
        if new_file:
            self.columns = list(row.keys())
        with open(self.csv_path, "a" if not new_file else "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.columns, extrasaction="ignore")
            if new_file:
                w.writeheader()
            w.writerow({k: ("" if v is None else v) for k, v in clean.items()})

    def close(self) -> None:
        self._jsonl.close()
        if self.writer is not None:
            self.writer.close()


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
