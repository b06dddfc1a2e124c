"""Pools the rounds of two runs of python_vs_cpp.py: per row, each round's python/C++ ratio of
the best variants (from the "each round" columns of both tables) and the median over all of them.

    python3 bench/peers/pool_rounds.py A.md B.md

More rounds, not a different statistic: on a VM whose speed changes from one process to the
next, one round's ratio of a row swings by 20-30% either way, and three rounds leave the median
of a row whose two sides run the same primitives a few percent off either way."""
import statistics
import sys


def rounds(path):
    out = {}
    for line in open(path):
        if not line.startswith("| ") or line.startswith("| workload") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        cpp = [float(x) for x in cells[1].split(",")]
        py = [float(x) for x in cells[2].split(",")]
        out[cells[0]] = [p / c for p, c in zip(py, cpp)]
    return out


a, b = rounds(sys.argv[1]), rounds(sys.argv[2])
within = 0
for row in a:
    r = a[row] + b.get(row, [])
    med = statistics.median(r)
    within += med <= 1.05
    print(f"| {row} | {', '.join(f'{x:.3f}' for x in r)} | {med:.3f} |")
print(f"within 1.05: {within} of {len(a)}")
