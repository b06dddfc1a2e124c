"""The table of `scripts/bench_peers.sh --beside-twin`: how much each system slows down when a
second copy of itself (its twin: the same command, the same cores and threads) runs beside it.

    python bench/peers/contention_report.py --results DIR --threads N [--md OUT.md] [--quick]
        [--load "1.00 0.50 0.20"]

Reads DIR/S.jsonl (S run quiet) and DIR/S-twin.jsonl (S run again beside its twin) for S in
lanes, jax and torch, the JSON lines of `workloads --json-only` and of the peers' scripts, and
prints (and writes to OUT.md) one row per workload: for each system the median ms of its best
batched variant quiet, beside its twin, and the ratio twin / quiet.

The best batched variant, the same rule for the three systems: the fastest variant of the quiet
run that ran (has a median), is ranked (not `ranked: false`), is not `loop` and does not start
with `manual` -- lanes: vmap, vmap+compile, vmap:STRATEGY, "vmap (budget)", unrolled, ...; jax:
jit(vmap), vmap, unrolled; torch: vmap (torch.func) and compile (torch.compile of it). The twin
column is that same variant's median in the twin run, so a ratio compares one piece of code with
itself.
"""

import argparse
import datetime
import math
import os
import sys
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt_ms, machine, read_jsonl  # noqa: E402

SYSTEMS = ("lanes", "lanes-python", "jax", "torch")
Rows = dict[str, dict[str, dict[str, Any]]]  # {workload: {variant: JSON line}}


def batched(variant: str, record: dict[str, Any]) -> bool:
    """Whether a variant competes for a system's best batched variant (the rule above)."""
    return (variant != "loop" and not variant.startswith("manual")
            and "median_ms" in record and record.get("ranked", True))


def best_variant(rows: Rows, workload: str) -> Optional[str]:
    """The fastest batched variant of a workload, or None when none ran."""
    cands = [(r["median_ms"], v) for v, r in rows.get(workload, {}).items() if batched(v, r)]
    return min(cands)[1] if cands else None


def read(path: str, system: str) -> Optional[Rows]:
    """The rows of one JSON-lines file, or None when it is missing."""
    if not os.path.exists(path):
        return None
    return read_jsonl(path, system)[0]


def why_not(rows: Optional[Rows], workload: str) -> str:
    """Why a system has no batched time on a workload, in a few words."""
    if rows is None:
        return "not run"
    records = rows.get(workload)
    if not records:
        return "no such row"
    for r in records.values():
        if "error" in r:
            return "failed"
    return "no batched variant"


def ratio_text(ratio: float) -> str:
    return f"{ratio:.2f}×"


def table(results: str) -> tuple[list[str], dict[str, list[float]], list[str]]:
    """The Markdown table's lines, the ratios per system and the footnotes."""
    quiet = {s: read(os.path.join(results, f"{s}.jsonl"), s) for s in SYSTEMS}
    twin = {s: read(os.path.join(results, f"{s}-twin.jsonl"), s) for s in SYSTEMS}
    workloads: list[str] = []
    for s in SYSTEMS:  # lanes' order first, that of WORKLOADS.md
        workloads += [w for w in (quiet[s] or {}) if w not in workloads]

    head = " | ".join(f"{s} quiet | {s} twin | {s} ×" for s in SYSTEMS)
    lines = [f"| workload | {head} |", "|---" * (1 + 3 * len(SYSTEMS)) + "|"]
    ratios: dict[str, list[float]] = {s: [] for s in SYSTEMS}
    notes: list[str] = []
    for wl in workloads:
        cells = []
        for s in SYSTEMS:
            v = best_variant(quiet[s] or {}, wl)
            if v is None:
                cells += [f"— ({why_not(quiet[s], wl)})", "", ""]
                continue
            q = quiet[s][wl][v]["median_ms"]
            t_rec = ((twin[s] or {}).get(wl) or {}).get(v, {})
            quiet_cell = f"{fmt_ms(q)} ({v})"
            if "median_ms" not in t_rec:
                reason = "not run" if twin[s] is None else "failed" if "error" in t_rec else "—"
                cells += [quiet_cell, reason, ""]
                continue
            t = t_rec["median_ms"]
            ratios[s].append(t / q)
            t_best = best_variant(twin[s] or {}, wl)
            if t_best != v:
                notes.append(f"{wl}, {s}: beside the twin, {t_best} was faster than {v} "
                             f"({fmt_ms(twin[s][wl][t_best]['median_ms'])} ms)")
            cells += [quiet_cell, fmt_ms(t), ratio_text(t / q)]
        lines.append(f"| {wl} | {' | '.join(cells)} |")
    return lines, ratios, notes


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", required=True, help="the directory of S.jsonl and S-twin.jsonl")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--md", help="where to write the table (Markdown) besides printing it")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--load", default="", help="load average when the run started")
    args = p.parse_args()

    lines, ratios, notes = table(args.results)
    model, cores = machine()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = ["# Each system beside a twin of itself\n",
           f"- date: {date}" + (" — **--quick run: 2 timed runs per cell, not for quoting**"
                                if args.quick else ""),
           f"- machine: {model}, {cores} cores; load average (1, 5, 15 min) at the start: "
           f"{args.load or '?'}",
           f"- threads: {args.threads} per copy, both copies pinned to the same "
           f"{args.threads} cores",
           "- made by `scripts/bench_peers.sh --beside-twin"
           f"{' --quick' if args.quick else ''} --threads {args.threads}`\n",
           "Median ms of one call of each system's best batched variant (the fastest quiet "
           "variant that is not `loop` or `manual*`; named in the quiet cell): **quiet**, alone "
           "on its cores; **twin**, the same variant while a second copy of the same command "
           "(same taskset, same threads) runs on the same cores, restarted whenever it exits; "
           "**×** = twin / quiet. Two copies sharing the cores fairly give about 2× when one "
           "copy alone keeps them busy; above that, the copies get in each other's way "
           "(spinning or oversubscribed thread pools, cache). The twin spends part of its time "
           "starting, warming up or compiling rather than in the same phase as the measured "
           "run, so a ratio is what a neighbour doing the same job costs, not a steady-state "
           "2-job figure.\n",
           *lines]
    summary = [f"{s} {geomean(r):.2f}× over {len(r)} rows" for s, r in ratios.items() if r]
    if summary:
        out.append("\nGeometric mean of twin / quiet: " + "; ".join(summary) + ".")
    if notes:
        out.append("\nBeside its twin another variant was the faster:\n")
        out += [f"- {n}" for n in notes]
    text = "\n".join(out) + "\n"
    print(text, end="")
    if args.md:
        os.makedirs(os.path.dirname(os.path.abspath(args.md)), exist_ok=True)
        with open(args.md, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
