"""Do two run directories hold the same training, iteration by iteration? (reproducibility check)

    python -m benchmarks.studies.same_run [--out results/grpo_10m/reproducibility.md] A1 B1 [A2 B2 ...]

No training: reads each pair's metrics.jsonl and compares every logged metric except the timing ones
(wall_time, charts/SPS, time/*), row by row, for exact equality. Prints per pair the rows of each, the first
row (iteration and env step) where any metric differs and which ones, and both runs' final deterministic
evaluations. Uses: a rerun of a finished run (same flags, same seed: does it reproduce bit for bit?), a changed
run against its unchanged seed (where does the change first act? for ``--log-std-max 0`` the first iteration
after a std component reaches the cap), and a short run against the first part of a longer one (``--ignore
eval/`` where they evaluate at different intervals: is the schedule independent of the run's length?).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ppo_control.checkpoint import atomic_write_text
from ppo_control.experiments.aggregate import provenance, provenance_text
from ppo_control.metrics import metrics_file, read_metrics

TIMING = ("wall_time", "charts/SPS", "time/")


def compare(a_dir: Path, b_dir: Path, ignore=()) -> dict:
    a, b = read_metrics(a_dir), read_metrics(b_dir)
    first, keys, skip = None, [], TIMING + tuple(ignore)
    for i, (x, y) in enumerate(zip(a, b)):
        keys = sorted(k for k in set(x) | set(y) if not k.startswith(skip) and x.get(k) != y.get(k))
        if keys:
            first = i
            break

    def final(d: Path):
        p = d / "summary.json"
        return json.loads(p.read_text()).get("eval_return") if p.exists() else None

    return {"rows": (len(a), len(b)), "first": first, "keys": keys,
            "step": a[first]["global_step"] if first is not None else None, "final": (final(a_dir), final(b_dir))}


def _f(v) -> str:
    return "unfinished" if v is None else f"{v:,.2f}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="run directories in pairs: A1 B1 A2 B2 ...")
    p.add_argument("--out", default=None, help="also write the table here (markdown); default: print only")
    p.add_argument("--ignore", action="append", default=[], metavar="PREFIX",
                   help="also leave out metrics starting with these (eval/: runs evaluated at other intervals)")
    args = p.parse_args(argv)
    if len(args.runs) % 2:
        p.error(f"give run directories in pairs (A B), got {len(args.runs)}")
    dirs = [Path(r) for r in args.runs]
    missing = [str(d) for d in dirs if metrics_file(d) is None]
    if missing:
        p.error(f"no metrics file in: {', '.join(missing)}; pass run directories")
    lines = ["| run A | run B | rows A / B | first differing row (env step) | metrics that differ there | "
             "final eval A / B | CPU A / B |", "|---|---|---:|---|---|---:|---|"]
    seeds = set()
    for a_dir, b_dir in zip(dirs[::2], dirs[1::2]):
        r = compare(a_dir, b_dir, args.ignore)
        cpus = []
        for d in (a_dir, b_dir):
            cfg = json.loads((d / "config.json").read_text()) if (d / "config.json").exists() else {}
            seeds.add(cfg.get("config", {}).get("seed"))
            cpus.append(cfg.get("environment", {}).get("cpu") or "?")
        where = ("none: identical over the shared rows" if r["first"] is None
                 else f"{r['first'] + 1} ({r['step']:,})")
        keys = ", ".join(r["keys"][:4]) + (f" and {len(r['keys']) - 4} more" if len(r["keys"]) > 4 else "")
        lines.append(f"| {a_dir} | {b_dir} | {r['rows'][0]} / {r['rows'][1]} | {where} | {keys or '-'} | "
                     f"{_f(r['final'][0])} / {_f(r['final'][1])} | {cpus[0]} / {cpus[1]} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        prov = provenance(["python"] + sys.argv, sorted(s for s in seeds if s is not None))
        left_out = "timing metrics" + "".join(f", {x}*" for x in args.ignore)
        atomic_write_text(args.out, f"# Same training? Pairs of runs compared row by row ({left_out} left out)\n\n" + text
                          + "\n\n" + "\n".join(f"- {x}" for x in provenance_text(prov)) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
