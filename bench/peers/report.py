"""Turns the JSON lines of lanes (build/bench/workloads --json-only), jax_workloads.py,
torch_workloads.py and mlx_workloads.py into the side-by-side table (peers.md) and chart
(peers.png), checking that every peer's output agrees with lanes' (the checksums of
bench/workloads/harness.h).

    python bench/peers/report.py --lanes L.jsonl --jax J.jsonl --torch T.jsonl --threads N
        --md OUT.md --png OUT.png [--quick] [--mlx M.jsonl] [--lanes-python P.jsonl]

--mlx is optional (mlx not installed, or result files from before MLX was a peer): without it,
or when its file is missing, the mlx cells say "not run".

--lanes-python adds the JSON lines of lanes_workloads.py (the same library through its Python
API): two informational columns of the table, "lanes (python)" (its best batched variant) and
"python/C++" (that / lanes' best), and its loop and manual cells in the second table. Its
checksums are checked like a peer's, but it is never a row's best peer: the ranking stays lanes'
C++ API against jax, torch and mlx.

Exits 1 when a peer's (or lanes-python's) output disagrees with lanes' on some row (the row is
flagged in the table).
"""

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys

# The columns of the table and the chart: (title, system, variant).
COLUMNS = [
    ("lanes vmap", "lanes", "vmap"),
    ("lanes compiled", "lanes", "vmap+compile"),
    ("jax jit(vmap)", "jax", "jit(vmap)"),
    ("torch vmap", "torch", "vmap"),
    ("torch.compile", "torch", "compile"),
    ("mlx vmap+compile", "mlx", "vmap+compile"),
]
# The automatically batched variants each system's best is taken over: lanes' vmap family
# (vmap, vmap+compile, the forced strategies vmap:NAME, rnn_scan's compiled unrolled function) and
# the peers' batching transforms; loop and manual are listed in the second table.
LANES_BEST = lambda v: v.startswith("vmap") or v == "unrolled"  # noqa: E731
PEER_BEST = {"jax": {"jit(vmap)", "vmap", "unrolled"}, "torch": {"vmap", "compile"},
             "mlx": {"vmap+compile", "vmap", "unrolled"}}
# On the ragged rows no peer transform maps examples of different lengths: the peers' best is
# their hand-padded, hand-masked batch (and torch's nested tensors), as issue 30 ranks them.
PEER_BEST_RAGGED = {"manual", "nested"}
PEERS = ("jax", "torch", "mlx")  # ranked against lanes
PYTHON = "lanes-python"  # lanes through its Python API: informational columns, never ranked
TIE = 1.05  # a ratio within 5% either way is a tie: closer than this machine's noise


def read_jsonl(path, system):
    """{workload: {variant: record}} and the header line (peers print one first)."""
    with open(path) as f:
        return parse_jsonl(f, system)


def parse_jsonl(lines, system):
    """read_jsonl of lines already in hand (a command's stdout)."""
    rows, header = {}, {}
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "workload" not in r:
            header = r
            continue
        r.setdefault("system", system)
        rows.setdefault(r["workload"], {})[r["variant"]] = r
    return rows, header


def agree(a, b, rtol=1e-3):
    """checksums_agree of bench/workloads/harness.h: same shapes, sums within rtol of the sum
    of absolute values, and the position-weighted sums within a tenth of their spread."""
    if [list(s) for s in a["out_shapes"]] != [list(s) for s in b["out_shapes"]]:
        return False
    scale = max(a["abs_checksum"], b["abs_checksum"])
    if abs(a["checksum"] - b["checksum"]) > rtol * scale:
        return False
    if abs(a["abs_checksum"] - b["abs_checksum"]) > rtol * scale:
        return False
    for k in range(len(a.get("weighted", []))):
        spread = math.sqrt(max(a["weighted_sq"][k], b["weighted_sq"][k]))
        if abs(a["weighted"][k] - b["weighted"][k]) > 0.1 * spread:
            return False
    return True


def ok(r):
    return r is not None and "median_ms" in r


def fmt_ms(ms):
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3g}"


def why(r):
    """The text of an empty cell."""
    if r is None:
        return "not run"
    if "skipped" in r and r["variant"] == "setup":
        return "— " + r["skipped"]
    if "skipped" in r:
        return "— " + r["skipped"]
    if "error" in r:
        return "failed: " + r["error"][:120].replace("|", "/")
    return ""


def lookup(rows, variant):
    """The record of `variant`, or of its qualified form ("vmap (budget)" for "vmap": the
    variants of perex_grad_norms), or None."""
    if variant in rows:
        return rows[variant]
    return next((r for v, r in rows.items() if v.startswith(variant + " (") and ok(r)), None)


def best(rows, system, wl):
    """(ms, variant) of a system's fastest batched variant on a workload, or None."""
    if system in ("lanes", PYTHON):
        pick = LANES_BEST
    elif wl.startswith("ragged_"):
        pick = (lambda v: v in PEER_BEST[system] | PEER_BEST_RAGGED)  # noqa: E731
    else:
        pick = (lambda v: v in PEER_BEST[system])  # noqa: E731
    cands = [(r["median_ms"], v) for v, r in rows.get(wl, {}).items()
             if pick(v) and ok(r) and r.get("ranked", True)]
    return min(cands) if cands else None


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except Exception:
        return ""


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        flags = []
    simd = next((x for x in ("avx512f", "avx2", "neon") if x in flags), "")
    model = model or platform.processor() or platform.machine()
    return model + (f" ({simd})" if simd else ""), os.cpu_count()


def lanes_version(root):
    commit = sh(f"git -C {root} rev-parse --short HEAD")
    dirty = sh(f"git -C {root} status --porcelain -uno -- . ':!bench/results'")
    dirty = " (uncommitted changes)" if dirty else ""
    cxx = ""
    try:
        with open(os.path.join(root, "build", "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_CXX_COMPILER:"):
                    cxx = sh(f"{line.split('=', 1)[1].strip()} --version").splitlines()[0]
    except (OSError, IndexError):
        pass
    return f"lanes {commit}{dirty}, Release, {cxx}".strip(", ")


def main():
    p = argparse.ArgumentParser()
    for s in ("lanes", "jax", "torch"):
        p.add_argument(f"--{s}", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--png", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--load", default="", help="load average when the run started")
    p.add_argument("--elapsed", default="", help="how long the script had run, installs included")
    p.add_argument("--mlx", default=None,
                   help="mlx_workloads.py's JSON lines (optional: without them, or when the "
                   "file is missing, the mlx cells say \"not run\")")
    p.add_argument("--lanes-python", default=None,
                   help="lanes_workloads.py's JSON lines (lanes' Python API): informational "
                   "columns")
    args = p.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    data, headers = {}, {}
    for s in ("lanes", "jax", "torch"):
        data[s], headers[s] = read_jsonl(getattr(args, s), s)
    if args.mlx and os.path.exists(args.mlx):
        data["mlx"], headers["mlx"] = read_jsonl(args.mlx, "mlx")
    else:  # mlx not installed, or older result files: its cells say "not run"
        data["mlx"], headers["mlx"] = {}, {}
    with_python = bool(args.lanes_python)
    if with_python:
        if os.path.exists(args.lanes_python):
            data[PYTHON], headers[PYTHON] = read_jsonl(args.lanes_python, PYTHON)
        else:  # the package was not built: its cells say "not run"
            data[PYTHON], headers[PYTHON] = {}, {}
    checked = PEERS + ((PYTHON,) if with_python else ())
    workloads = list(data["lanes"])  # lanes' order, that of WORKLOADS.md
    for s in checked:
        workloads += [w for w in data[s] if w not in workloads]

    # Checksums: every peer variant that ran against lanes' vmap (else lanes' first variant).
    disagreements = []
    for wl in workloads:
        lanes_rows = data["lanes"].get(wl, {})
        ref = lookup(lanes_rows, "vmap")
        ref = ref if ok(ref) else next((r for r in lanes_rows.values() if ok(r)), None)
        for s in checked:
            for v, r in data[s].get(wl, {}).items():
                if ok(r) and ref is not None:
                    r["agrees"] = agree(ref, r)
                    if not r["agrees"]:
                        disagreements.append(
                            f"{wl}: {s} {v} (sum {r['checksum']:.6g}, |sum| "
                            f"{r['abs_checksum']:.6g}) vs lanes {ref['variant']} (sum "
                            f"{ref['checksum']:.6g}, |sum| {ref['abs_checksum']:.6g})")

    model, cores = machine()
    versions = [lanes_version(root)]
    for s in PEERS:
        versions += [f"{k} {v}" for k, v in headers[s].get("versions", {}).items()
                     if not (s != "jax" and k == "numpy")]
    versions.append(f"Python {platform.python_version()}")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    out = []
    out.append("# lanes, jax, PyTorch and MLX on the same workloads\n")
    out.append(f"- date: {date}{' — **--quick run: 2 timed runs per cell, not for quoting**' if args.quick else ''}")
    out.append(f"- machine: {model}, {cores} cores; load average (1, 5, 15 min) at the start: "
               f"{args.load or '?'}" + (f"; the whole script took {args.elapsed}" if args.elapsed
                                        else ""))
    out.append(f"- threads: {args.threads} for every system (see bench/peers/README.md for how "
               "each is pinned)")
    out.append(f"- versions: {'; '.join(versions)}")
    out.append("- made by `scripts/bench_peers.sh"
               f"{' --quick' if args.quick else ''} --threads {args.threads}`: every system "
               "reads the inputs `build/bench/workloads --dump-inputs` wrote, so all compute the "
               "same thing; each checksum is compared with lanes'.\n")
    out.append("Median wall time in ms of one call on the whole batch (lower is better). "
               "**ratio** = lanes' best batched variant / the best peer's batched variant "
               "(below 1: lanes is faster); a bold ratio is a row a peer wins by more than 5%, ≈ a tie within 5%. A ✗ marks a "
               "result that disagrees with lanes'. Empty cells say why.\n")
    if with_python:
        out.append("**lanes (python)**: the same library through its Python API "
                   "(`bench/peers/lanes_workloads.py`: lanes.vmap / grad / jit / lax, the same "
                   "per-example functions and variants as the C++ bench), its best batched "
                   "variant; **python/C++** = that / lanes' best (the cost of the Python layer: "
                   "tracing Python functions, pytrees, per-call dispatch). Informational: not a "
                   "peer, not in the ratio.\n")
    title = " | ".join(c[0] for c in COLUMNS)
    py_title = " lanes (python) | python/C++ |" if with_python else ""
    out.append(f"| workload | {title} | lanes best | best peer | ratio |{py_title}")
    out.append("|---" * (len(COLUMNS) + 4 + (2 if with_python else 0)) + "|")
    py_ratios = {}
    notes = {}
    ratios = {}
    for wl in workloads:
        cells = []
        for _, s, v in COLUMNS:
            r = lookup(data[s].get(wl, {}), v) or data[s].get(wl, {}).get("setup")
            if ok(r):
                cell = fmt_ms(r["median_ms"]) + ("" if r.get("agrees", True) else " ✗")
                if r.get("note"):
                    notes.setdefault(wl, set()).add(f"{s} {v}: {r['note']}")
                    cell += " ¹"
                cells.append(cell)
            else:
                cells.append(why(r))
        lb = best(data["lanes"], "lanes", wl)
        peers = [(b[0], f"{s} {b[1]}") for s in PEERS if (b := best(data[s], s, wl))]
        bp = min(peers) if peers else None
        lanes_cell = f"{fmt_ms(lb[0])} ({lb[1]})" if lb else "—"
        peer_cell = f"{fmt_ms(bp[0])} ({bp[1]})" if bp else "—"
        if lb and bp:
            ratio = lb[0] / bp[0]
            ratios[wl] = (ratio, bp[1])
            text = f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"
            ratio_cell = f"**{text}**" if ratio > TIE else f"{text} ≈" if ratio >= 1 / TIE else text
        else:
            ratio_cell = "—"
        py_cells = ""
        if with_python:
            pb = best(data[PYTHON], PYTHON, wl)
            if pb:
                rec = data[PYTHON][wl][pb[1]]
                py_cell = f"{fmt_ms(pb[0])} ({pb[1]})" + ("" if rec.get("agrees", True)
                                                           else " ✗")
            else:
                py_cell = why(data[PYTHON].get(wl, {}).get("setup"))
            if pb and lb:
                py_ratios[wl] = pb[0] / lb[0]
                r = py_ratios[wl]
                py_ratio = (f"**{r:.2f}**" if r > TIE else f"{r:.2f} ≈" if r >= 1 / TIE
                            else f"{r:.2f}")
            else:
                py_ratio = "—"
            py_cells = f" {py_cell} | {py_ratio} |"
        out.append(f"| {wl} | {' | '.join(cells)} | {lanes_cell} | {peer_cell} | {ratio_cell} |"
                   + py_cells)
    if notes:
        out.append("\n¹ How the peer ran this cell:\n")
        for wl, ns in notes.items():
            out.append(f"- {wl}: " + "; ".join(sorted(ns)))
    wins = [wl for wl, (r, _) in ratios.items() if r > TIE]
    ties = [wl for wl, (r, _) in ratios.items() if 1 / TIE <= r <= TIE]
    out.append(f"\nlanes is faster than every peer on {len(ratios) - len(wins) - len(ties)} of "
               f"{len(ratios)} rows" + (f", within 5% (≈) on {', '.join(ties)}" if ties else "")
               + (f"; a peer wins {', '.join(wins)} (bench/README.md says what it does that "
                  "lanes doesn't)." if wins else "."))
    if py_ratios:
        within = [wl for wl, r in py_ratios.items() if r <= TIE]
        gm = math.exp(sum(math.log(r) for r in py_ratios.values()) / len(py_ratios))
        slower = [wl for wl in py_ratios if wl not in within]
        out.append(f"\nlanes (python) / lanes (C++), best batched variant of each: geometric "
                   f"mean {gm:.2f} over {len(py_ratios)} rows; within 5% (or faster) on "
                   f"{len(within)}" + (f"; slower by more than 5% on {', '.join(slower)}."
                                       if slower else "."))
    if disagreements:
        out.append("\n**Results that disagree with lanes':**\n")
        out += [f"- {d}" for d in disagreements]
    else:
        out.append("\nEvery peer result agrees with lanes' (checksums of "
                   "bench/workloads/harness.h).")

    # The loop and hand-written variants, for reference.
    out.append("\n## Loop and hand-batched variants\n")
    out.append("`loop`: the per-example function called once per example (jax: jitted, from "
               "Python; torch: eager; mlx: mx.compile'd, from Python"
               + ("; lanes (python): eager, from Python" if with_python else "")
               + "); `manual`: hand-batched code in each system (torch eager, "
               "jax jitted, mlx mx.compile'd, lanes eager). Median ms.\n")
    loop_systems = ("lanes",) + ((PYTHON,) if with_python else ()) + PEERS
    titles = {"lanes": "lanes", PYTHON: "lanes (python)", "jax": "jax", "torch": "torch",
              "mlx": "mlx"}
    out.append("| workload | " + " | ".join(f"{titles[s]} {v}" for s in loop_systems
                                            for v in ("loop", "manual")) + " |")
    out.append("|---" * (1 + 2 * len(loop_systems)) + "|")
    for wl in workloads:
        cells = []
        for s in loop_systems:
            for v in ("loop", "manual"):
                r = lookup(data[s].get(wl, {}), v) or data[s].get(wl, {}).get("setup")
                cells.append(fmt_ms(r["median_ms"]) + ("" if r.get("agrees", True) else " ✗")
                             if ok(r) else why(r))
        out.append(f"| {wl} | {' | '.join(cells)} |")

    os.makedirs(os.path.dirname(os.path.abspath(args.md)), exist_ok=True)
    with open(args.md, "w") as f:
        f.write("\n".join(out) + "\n")
    chart(data, workloads, args.png, f"{model}, {args.threads} threads, {date}"
          + (" (--quick)" if args.quick else ""))
    for wl, (r, peer) in ratios.items():
        print(f"{wl:20s} lanes/best peer = {r:6.2f}  ({peer})")
    if disagreements:
        print("DISAGREE:\n  " + "\n  ".join(disagreements), file=sys.stderr)
        return 1
    return 0


def chart(data, workloads, path, subtitle):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = ["#1f77b4", "#6baed6", "#2ca02c", "#d62728", "#ff9896", "#9467bd"]
    fig, ax = plt.subplots(figsize=(max(12, 0.9 * len(workloads)), 6))
    width = 0.8 / len(COLUMNS)
    for k, (title, s, v) in enumerate(COLUMNS):
        xs, ys = [], []
        for i, wl in enumerate(workloads):
            r = data[s].get(wl, {}).get(v)
            if ok(r):
                xs.append(i + (k - (len(COLUMNS) - 1) / 2) * width)
                ys.append(r["median_ms"])
        ax.bar(xs, ys, width, label=title, color=colors[k])
        for i, wl in enumerate(workloads):  # an empty cell: a mark at the bottom, not a gap
            if not ok(data[s].get(wl, {}).get(v)):
                ax.text(i + (k - (len(COLUMNS) - 1) / 2) * width, 0.02, "×", color=colors[k],
                        ha="center", va="bottom", fontsize=9, transform=ax.get_xaxis_transform())
    ax.set_yscale("log")
    bottom, top = ax.get_ylim()
    ax.set_ylim(bottom, top * 30)  # room for the legend above the tallest bars
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels(workloads, rotation=40, ha="right")
    ax.set_ylabel("median ms per call (log scale, lower is better)")
    ax.set_title("lanes vs jax vs PyTorch vs MLX on the lanes workloads (× = the system has no such "
                 f"variant for the row; see peers.md)\n{subtitle}", fontsize=10)
    ax.legend(ncol=len(COLUMNS), fontsize=8, loc="upper left")
    ax.grid(axis="y", which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
