"""What lanes' Python layer costs, row by row: each workload run through the C++ API
(build/bench/workloads) and through the Python API (bench/peers/lanes_workloads.py) one right
after the other, for several rounds, so both sides of each ratio see the same machine.

    build/peers-venv/bin/python bench/peers/python_vs_cpp.py [--rounds 3] [--threads 2]
        [--workload NAME]... [--md bench/results/python_vs_cpp.md]

Why not peers.md's python/C++ column: scripts/bench_peers.sh runs every C++ row, then every
Python row, minutes apart, so a row's two times can see different loads; on a VM whose load
comes and goes that swings the ratio by more than the 5% it is asked to show. Here the two runs
of a row are seconds apart, alternated (C++ first in even rounds, Python first in odd ones), and
the ratio taken per round (then the median over rounds). Both sides run their batched variants
(loop skipped), pinned to the same cores.
First, per row, it checks that a vmap+compile call evaluates the same primitives, as many times
each, through both APIs (lanes.FlopCounter against the C++ bench's --profile): where it does,
what differs in time is the Python call itself.

Per row: the best batched variant of each side (report.py's rule, the ratio peers.md shows) and
vmap+compile against vmap+compile (the same graph: the cleanest measure of the Python call), by
the ratio of medians and by the ratio of minima (the least noisy: the machine's interruptions
only ever add time).
The inputs are those of `build/bench/workloads --dump-inputs build/peers-inputs` (written for
the rows asked when missing)."""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from report import best, parse_jsonl  # noqa: E402

WORKLOADS = os.path.join(ROOT, "build", "bench", "workloads")


def run_json(cmd, system):
    """{workload: {variant: record}} of the JSON lines cmd prints."""
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return parse_jsonl(out.splitlines(), system)[0]


def same_graph(name, inputs):
    """Whether one warm vmap+compile call evaluates the same primitives, as many times each,
    through both APIs ("yes", or what differs as C++/Python counts): the C++ bench's --profile
    against lanes_workloads.py --evaluations (lanes.FlopCounter)."""
    def counts(cmd, variant):
        return run_json(cmd, "").get(name, {}).get(variant, {}).get("evaluations")
    for variant in ("vmap+compile", "vmap+compile (budget)"):
        cpp = counts([WORKLOADS, "--workload", name, "--variant", variant, "--json-only",
                      "--profile", "--quick"], variant)
        py = counts([sys.executable, os.path.join(HERE, "lanes_workloads.py"), "--evaluations",
                     "--inputs", inputs, "--workload", name, "--variant", variant], variant)
        if cpp is not None and py is not None:
            break
    else:
        return "no vmap+compile"
    if cpp == py:
        return "yes"
    diff = sorted(k for k in set(cpp) | set(py) if cpp.get(k) != py.get(k))
    return "no: " + ", ".join(f"{k} {cpp.get(k, 0)}/{py.get(k, 0)}" for k in diff)


def all_workloads():
    """Every row of build/bench/workloads, in its order (--list)."""
    out = subprocess.run([WORKLOADS, "--list"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    return out.split()


def dump_inputs(directory, names):
    manifest = os.path.join(directory, "manifest.json")
    have = set()
    if os.path.exists(manifest):
        with open(manifest) as f:
            have = set(json.load(f)["workloads"])
    if not set(names) <= have:
        sel = [a for n in names for a in ("--workload", n)]
        subprocess.run([WORKLOADS, "--dump-inputs", directory, *sel], cwd=ROOT, check=True,
                       capture_output=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workload", action="append", default=[])
    p.add_argument("--inputs", default=os.path.join(ROOT, "build", "peers-inputs"))
    p.add_argument("--md", default=None, help="write the table here too")
    args = p.parse_args()
    names = args.workload or [n for n in all_workloads() if not n.startswith("ragged_")]
    dump_inputs(args.inputs, names)
    pin = (["taskset", "-c", f"0-{args.threads - 1}"]
           if (os.cpu_count() or 1) >= args.threads else [])
    env_threads = {k: str(args.threads) for k in
                   ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    os.environ.update(env_threads)
    os.environ["PYTHONPATH"] = os.path.join(ROOT, "build", "python")

    graphs = {n: same_graph(n, args.inputs) for n in names}
    best_ratios = {n: [] for n in names}
    same_ratios = {n: [] for n in names}
    min_ratios = {n: [] for n in names}
    times = {n: [] for n in names}
    for r in range(args.rounds):
        for n in names:
            def run_cpp():
                return run_json(pin + [WORKLOADS, "--workload", n, "--no-loop", "--json-only",
                                       "--threads", str(args.threads)], "lanes")

            def run_py():
                return run_json(pin + [sys.executable, os.path.join(HERE, "lanes_workloads.py"),
                                       "--inputs", args.inputs, "--workload", n, "--no-loop",
                                       "--threads", str(args.threads)], "lanes-python")
            # Odd rounds run Python first: a load that comes or goes during a row's pair of
            # runs then weighs on each side in turn.
            if r % 2 == 0:
                cpp, py = run_cpp(), run_py()
            else:
                py, cpp = run_py(), run_cpp()
            bc, bp = best(cpp, "lanes", n), best(py, "lanes-python", n)
            if not (bc and bp):
                print(f"{n}: no batched result on one side", file=sys.stderr)
                continue
            best_ratios[n].append(bp[0] / bc[0])
            times[n].append((bc, bp))
            sc, sp = cpp.get(n, {}).get("vmap+compile", {}), py.get(n, {}).get("vmap+compile", {})
            if "median_ms" in sc and "median_ms" in sp:
                same_ratios[n].append(sp["median_ms"] / sc["median_ms"])
                min_ratios[n].append(sp["min_ms"] / sc["min_ms"])
            print(f"round {r + 1} {n}: C++ {bc[0]:.4g} ms ({bc[1]}), Python {bp[0]:.4g} ms "
                  f"({bp[1]}): {bp[0] / bc[0]:.3f}", flush=True)

    lines = ["| workload | C++ best, ms (each round) | Python best, ms (each round) | "
             "python/C++ best, median of rounds | vmap+compile python/C++: median of rounds, "
             "of medians | of minima | same primitives evaluated (C++/Python) |",
             "|---|---|---|---|---|---|---|"]
    for n in names:
        if not best_ratios[n]:
            lines.append(f"| {n} | — | — | — | — | — | {graphs[n]} |")
            continue
        c = ", ".join(f"{bc[0]:.3g}" for bc, _ in times[n])
        q = ", ".join(f"{bp[0]:.3g}" for _, bp in times[n])
        same = (f"{statistics.median(same_ratios[n]):.3f} | "
                f"{statistics.median(min_ratios[n]):.3f}" if same_ratios[n] else "— | —")
        lines.append(f"| {n} | {c} | {q} | {statistics.median(best_ratios[n]):.3f} | {same} | "
                     f"{graphs[n]} |")
    table = "\n".join(lines)
    print(table)
    if args.md:
        with open(args.md, "w") as f:
            f.write(f"# lanes' Python API against its C++ API, row by row\n\nMade by "
                    f"`bench/peers/python_vs_cpp.py --rounds {args.rounds} --threads "
                    f"{args.threads}` (see its docstring): {args.rounds} rounds, each row's C++ "
                    f"and Python runs back to back (Python first in odd rounds).\n\n{table}\n")


if __name__ == "__main__":
    main()
