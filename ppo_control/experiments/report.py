"""A suite's tables and figures from its runs, and the tables in README.md and docs/ from those files.

A ``[[table]]`` of a suite file::

    out = "results/mujoco_1m/tuned"       # writes tuned.md and tuned.csv
    settings = ["tuned"]                  # which settings (default: all), one row per task x setting
    tasks = ["Hopper-v5"]                 # which tasks (default: all)
    metrics = ["eval_return", "final_return", "peak_mean_eval", "wall_time"]   # default: eval, final
    baseline = "ppo_tuned"                # optional: a column mean(metric) / the baseline setting's, 95% CI
    ratio_of = "eval_return"              # the metric of that ratio (default: the first metric)
    [table.notes]                         # optional extra columns: name -> {task: text}
    "published PPO at 1M" = { "Ant-v5" = "3,260 (Tianshou)" }

A ``[[figure]]``: ``out`` (a .png), ``settings``, ``tasks``, ``curve`` (``eval/return`` or
``charts/episodic_return``), ``x`` (``steps`` or ``time``), one panel per task and a line per
setting, ``[figure.marks]`` name -> {task: y} as dashed lines; or ``heatmap = ["gae_lambda",
"ent_coef"]`` with one ``task`` and a ``metric``.

Each Markdown file is the table, what each number means, then a provenance footer (command,
commit, machine, versions, seeds, run wall time, the folders the runs came from). Pages
(README.md, docs/*.md) hold ``<!-- table: results/PATH.md -->`` ... ``<!-- /table -->``
blocks, filled with the first Markdown table of that results file.
"""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .aggregate import (EVAL_KEY, RETURN_KEY, Run, load_run, peak_of_mean_eval, provenance, provenance_text,
                        ratio_ci, seed_stats)
from .suites import RunIndex, Suite, suite_runs

FOOTER = "<!-- provenance: how this file was made (not compared by report --check) -->"
BLOCK = re.compile(r"(<!-- table: (\S+?) -->\n)(.*?)(<!-- /table -->)", re.S)
# what each number means, as the table says it
METRICS = {
    "eval_return": ("eval return", "deterministic evaluation of the final policy (summary.json's eval_return)"),
    "final_return": ("final return", "mean return of the last 10 training episodes"),
    "late_eval": ("late eval", "mean of the periodic deterministic evaluations over the last 20% of the steps"),
    "peak_mean_eval": ("peak mean eval", "highest point of the seed-mean periodic evaluation curve (Tianshou's "
                       "way of reporting; >= the final value by construction)"),
    "auc": ("AUC/step", "mean height of the training-return curve"),
    "eval_return_iqm": ("eval IQM", "interquartile mean of the seeds' eval return (>= 4 seeds)"),
    "final_return_iqm": ("final IQM", "interquartile mean of the seeds' final return (>= 4 seeds)"),
    "hold_1m": ("worst seed, eval / its 1M eval", "lowest over the seeds of the final evaluation divided by the same "
                "run's periodic evaluation at 1M steps (below 100%: the seed lost return after 1M)"),
    "wall_time": ("wall time / run", "mean training wall time of one run (machines and load differ between runs: "
                  "not a speed measurement)"),
    "SPS": ("SPS", "mean env steps per second of training"),
}
SEED_METRICS = ("eval_return", "final_return", "late_eval", "auc")


def _fmt(x: float, ref: Optional[float] = None) -> str:
    """Thousands separated; 0 decimals from 100 up, else 1 (judged on ``ref``, the row's mean)."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:,.{0 if abs(ref if ref is not None else x) >= 100 else 1}f}"


def _duration(s: float) -> str:
    return "—" if not math.isfinite(s) else f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 \
        else f"{s / 3600:.1f} h"


def _mean_ci(values: Sequence[float]) -> Tuple[str, dict]:
    st = seed_stats(values)
    text = _fmt(st["mean"])
    if math.isfinite(st["ci_low"]):
        text += f" [{_fmt(st['ci_low'], st['mean'])}, {_fmt(st['ci_high'], st['mean'])}]"
    return text, st


def load_suite_runs(suite: Suite, index: RunIndex):
    """{(task, setting): (wanted seeds, [Run])} over the suite's jobs, in job order (training-return curves).
    Each run is read once per index: suites share runs (the 10M PPO runs serve two)."""
    out: Dict[Tuple[str, str], Tuple[List[int], List[Run]]] = {}
    for job, d in suite_runs(suite, index):
        wanted, runs = out.setdefault((job.task, job.setting), ([], []))
        wanted.append(job.seed)
        if d is not None:
            if d not in index.loaded:
                index.loaded[d] = load_run(d, RETURN_KEY)
            runs.append(index.loaded[d])
    for _, runs in out.values():  # by seed: the bootstrap's draws follow the order, which a run's folder
        runs.sort(key=lambda r: (r.config.get("seed", 0), str(r.path)))  # then must not change
    return out


def with_curve(run: Run, key: str) -> Run:
    """The same run with its curve following metrics column ``key`` (e.g. ``eval/return``)."""
    if key == run.curve_key:
        return run
    rows = [r for r in run.rows if isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]
    return dataclasses.replace(run, steps=np.array([r["global_step"] for r in rows], dtype=float),
                               wall=np.array([r["wall_time"] for r in rows], dtype=float),
                               returns=np.array([r[key] for r in rows], dtype=float), curve_key=key)


def table_rows(spec: dict, groups) -> Tuple[List[str], List[List[str]], List[dict]]:
    """(header, Markdown cells per row, CSV dicts per row) of one ``[[table]]``."""
    settings = spec.get("settings") or list(dict.fromkeys(s for _, s in groups))
    metrics = spec.get("metrics", ["eval_return", "final_return"])
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"table {spec.get('out')}: unknown metrics {unknown}; choose from {sorted(METRICS)}")
    base, ratio_of = spec.get("baseline"), spec.get("ratio_of", metrics[0])
    notes = spec.get("notes", {})
    one = len(settings) == 1
    head = ["task"] + ([] if one else ["setting"]) + ["seeds"] + [METRICS[m][0] for m in metrics]
    if base:
        head.append(f"{METRICS[ratio_of][0]} / {base} [95% CI]")
    head += list(notes)
    cells, rows = [], []
    tasks = spec.get("tasks")
    for (task, setting), (wanted, runs) in groups.items():
        if setting not in settings or (tasks and task not in tasks):
            continue
        done = [r for r in runs if r.status == "finished"]
        seeds = f"{len(done)}" + (f" of {len(wanted)}" if len(done) < len(wanted) else "")
        row = {"task": task, "setting": setting, "seeds": " ".join(str(r.config["seed"]) for r in done),
               "n_wanted": len(wanted)}
        line = [task] + ([] if one else [setting]) + [seeds]
        for m in metrics:
            text, st = _metric_cell(m, done)
            line.append(text)
            row.update({f"{m}_{k}": v for k, v in st.items()})
        if base:
            line.append("(baseline)" if setting == base else
                        _ratio_cell(done, groups.get((task, base), ([], []))[1], ratio_of, row))
        # a task's note once, on its first row (the rows of one task are adjacent)
        first = not cells or cells[-1][0] != task
        line += [str(notes[c].get(task, "—")) if first else "" for c in notes]
        cells.append(line)
        rows.append(row)
    return head, cells, rows


def _metric_cell(m: str, done: List[Run]) -> Tuple[str, dict]:
    if m in SEED_METRICS or m.endswith("_iqm"):
        text, st = _mean_ci([r.metric(m.replace("_iqm", "")) for r in done])
        return (_fmt(st["iqm"]) if m.endswith("_iqm") else text), st
    if m == "hold_1m":
        vals = [v for v in (r.metric(m) for r in done) if math.isfinite(v)]
        v = min(vals) if vals else float("nan")
        return ("—" if not vals else f"{v:.0%}"), {"min": v}
    if m == "peak_mean_eval":
        v = peak_of_mean_eval(done) if done else float("nan")
        return _fmt(v), {"value": v}
    v = float(np.mean([r.metric(m) for r in done])) if done else float("nan")
    return (_duration(v) if m == "wall_time" else _fmt(v)), {"mean": v}


def _ratio_cell(done: List[Run], base_runs: List[Run], m: str, row: dict) -> str:
    a = [r.metric(m) for r in done]
    b = [r.metric(m) for r in base_runs if r.status == "finished"]
    if not a or not b or np.mean(a) <= 0 or np.mean(b) <= 0:  # a share of a negative return reads backwards
        return "—"
    ratio = float(np.mean(a) / np.mean(b))
    lo, hi = ratio_ci(a, b)
    row.update(ratio=ratio, ratio_ci_low=lo, ratio_ci_high=hi)
    return f"{ratio:.0%}" + (f" [{lo * 100:.0f}, {hi * 100:.0f}]" if math.isfinite(lo) else "")


def definitions(spec: dict, metrics: Sequence[str]) -> str:
    parts = [f"{METRICS[m][0]} = {METRICS[m][1]}" for m in metrics]
    text = ("Mean over seeds [95% percentile-bootstrap CI of the mean, 10,000 resamples, seeded]; seeds = "
            "finished runs (\"3 of 5\": 2 not run or not finished). " + "; ".join(parts) + ".")
    if spec.get("baseline"):
        text += (f" The ratio column divides this row's mean by the {spec['baseline']} setting's on the same "
                 "task (positive returns only); its CI resamples each side's seeds on its own.")
    return text


def markdown(head: List[str], cells: List[List[str]], left: Sequence[str] = ()) -> str:
    """A Markdown table; text columns (``left``, task, setting, the headline's) left-aligned, numbers right."""
    text = {"task", "setting", "measurement", "ours", "compared with", "full table", *left}
    align = ["---" if h in text else "---:" for h in head]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    return "\n".join(lines + ["| " + " | ".join(c) + " |" for c in cells]) + "\n"


def table_text(suite: Suite, spec: dict, groups) -> Tuple[str, List[dict]]:
    """The Markdown body (everything above the footer) and the CSV rows of one table."""
    head, cells, rows = table_rows(spec, groups)
    title = spec.get("title", suite.description.split(".")[0] if suite.description else suite.name)
    metrics = spec.get("metrics", ["eval_return", "final_return"])
    body = f"# {title}\n\n{markdown(head, cells, spec.get('notes', {}))}\n{definitions(spec, metrics)}\n"
    if spec.get("caption"):
        body += f"\n{spec['caption'].strip()}\n"
    return body, rows


def body_of(text: str) -> str:
    """A results Markdown file without its provenance footer."""
    return text.split(FOOTER)[0].rstrip() + "\n"


def csv_body(text: str) -> str:
    return "".join(line for line in text.splitlines(True) if not line.startswith("#"))


def first_table(text: str) -> str:
    """The first Markdown table (contiguous lines starting with '|') of a file's text."""
    lines, out = text.splitlines(), []
    for line in lines:
        if line.startswith("|"):
            out.append(line)
        elif out:
            break
    return "\n".join(out) + "\n" if out else ""


def fill_blocks(page_text: str, read) -> str:
    """``page_text`` with every table block filled from ``read(results_path)``'s first table."""
    def sub(m):
        return m.group(1) + first_table(read(m.group(2))) + m.group(4)
    return BLOCK.sub(sub, page_text)


def pages(root: Path) -> List[Path]:
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.exists()]


def suite_provenance(command: List[str], groups, wall_time: float) -> dict:
    runs = [r for _, rs in groups.values() for r in rs]
    prov = provenance(command, sorted({r.config["seed"] for r in runs}), wall_time)
    prov["total_run_wall_time_s"] = round(sum(r.metric("wall_time") for r in runs if r.status == "finished"), 1)
    prov["runs_from"] = sorted({str(r.path.parent) for r in runs})
    return prov


def write_figures(suite: Suite, groups, prov: dict) -> List[Path]:
    from .plotting import plot_heatmap, plot_panels
    out = []
    for spec in suite.figures:
        curve = spec.get("curve", EVAL_KEY)
        curves = {k: (w, [with_curve(r, curve) for r in rs]) for k, (w, rs) in groups.items()}
        settings = spec.get("settings") or list(dict.fromkeys(s for _, s in curves))
        if spec.get("heatmap"):
            runs = [r for (t, s), (_, rs) in curves.items() if t == spec["task"] and s in settings for r in rs]
            out.append(plot_heatmap(runs, *spec["heatmap"], spec["out"], spec.get("metric", "final_return"),
                                    f"{spec['task']}: {spec.get('metric', 'final_return')}", prov))
            continue
        panels: Dict[str, Dict[str, List[Run]]] = {}
        for (task, s), (_, runs) in curves.items():
            if s in settings and runs and task in spec.get("tasks", [task]):
                panels.setdefault(task, {})[s] = runs
        marks = {t: {name: values[t] for name, values in spec.get("marks", {}).items() if t in values} for t in panels}
        out.append(plot_panels(panels, spec["out"], spec.get("x", "steps"), prov, marks=marks))
    return out


def suite_tables(suite: Suite, index: RunIndex, read) -> Tuple[Dict[Path, str], Dict[Path, List[dict]], dict]:
    """{md path: body}, {csv path: rows} of every table, and the groups they were made from. A table
    with ``[[table.row]]`` entries picks its cells from other results files, read by ``read(path)``."""
    groups = load_suite_runs(suite, index)
    md, csv = {}, {}
    for spec in suite.tables:
        body, rows = picked_table(spec, read) if "row" in spec else table_text(suite, spec, groups)
        md[Path(spec["out"] + ".md")], csv[Path(spec["out"] + ".csv")] = body, rows
    return md, csv, groups


def nth_table(text: str, n: int = 0) -> List[Dict[str, str]]:
    """The ``n``-th Markdown table of ``text`` as rows {header: cell}."""
    tables, cur = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cur.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif cur:
            tables.append(cur)
            cur = []
    if n >= len(tables):
        raise ValueError(f"no table {n} (the file has {len(tables)})")
    head, *body = tables[n]
    return [dict(zip(head, r)) for r in body[1:]]  # body[0] is the alignment row


def _pick(src: dict, read) -> Dict[str, str]:
    rows = [r for r in nth_table(read(src["source"]), src.get("table", 0))
            if all(r.get(k) == v for k, v in src.get("where", {}).items())]
    if len(rows) != 1:
        raise ValueError(f"{src['source']}: {len(rows)} rows where {src.get('where')} (want exactly 1)")
    return rows[0]


def _fill(template: str, values: Dict[str, str], source: str) -> str:
    """``template`` with each ``{column}`` replaced by that cell (column names may hold brackets and '%')."""
    def cell(m):
        if m.group(1) not in values:
            raise ValueError(f"{source}: no column {m.group(1)!r}; columns: {sorted(values)}")
        return values[m.group(1)]
    return re.sub(r"\{([^{}]+)\}", cell, template)


def picked_table(spec: dict, read) -> Tuple[str, List[dict]]:
    """A table whose rows quote cells of other results files: each ``[[table.row]]`` names a ``source``
    file, a ``where`` that selects one row of its ``table`` (index, default 0), more rows under ``with``
    (prefix -> source/where, their cells as ``{prefix column}``), and templates ``measurement``, ``ours``
    and ``compared`` filled with ``{column}`` from those rows."""
    head = ["measurement", "ours", "compared with", "full table"]
    cells, rows = [], []
    for r in spec["row"]:
        values = dict(_pick(r, read))
        for prefix, src in r.get("with", {}).items():
            values.update({f"{prefix} {k}": v for k, v in _pick(src, read).items()})
        line = [_fill(r[k], values, r["source"]) if k in r else "—" for k in ("measurement", "ours", "compared")]
        link = r.get("link", Path(r["source"]).stem)
        cells.append(line + [f"[{link}]({r.get('href', r['source'])})"])
        rows.append(dict(zip(head, cells[-1])))
    title = spec.get("title", "Headline results")
    body = f"# {title}\n\n{markdown(head, cells)}"
    if spec.get("caption"):
        body += f"\n{spec['caption'].strip()}\n"
    return body, rows


def csv_text(rows: List[dict], prov: Optional[dict]) -> str:
    """Rows as CSV (every key any row has; blank where a row has none), provenance as leading '#' lines."""
    import csv
    import io
    buf = io.StringIO()
    buf.writelines(f"# {p}\n" for p in provenance_text(prov))
    keys = list(dict.fromkeys(k for r in rows for k in r))
    if keys:
        w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return buf.getvalue()


def footer_text(prov: dict) -> str:
    return "\n" + FOOTER + "\n" + "\n".join(f"- {p}" for p in provenance_text(prov)) + "\n"
