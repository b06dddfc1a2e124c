"""Pools the rounds of runs of python_vs_cpp.py: per row, each round's python/C++ ratio of the
best variants (from the "each round" columns of every table), the median over all of them, and
the ratio of each side's best time over all rounds.

    python3 bench/peers/pool_rounds.py A.md B.md [C.md ...]

More rounds, not a different statistic: on a VM whose speed changes from one process to the
next, one round's ratio of a row swings by 20-30% either way, and three rounds leave the median
of a row whose two sides run the same primitives a few percent off either way. The best over
all rounds is the other view of the same data: the VM's slow stretches only ever add time, so
each side's fastest process is the closest to what its code costs."""
import statistics
import sys


def rounds(path: str) -> dict[str, tuple[list[float], list[float]]]:
    """{row: (C++ best of each round, Python best of each round)} of one table, in ms."""
    out = {}
    for line in open(path):
        if not line.startswith("| ") or line.startswith("| workload") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        out[cells[0]] = ([float(x) for x in cells[1].split(",")],
                         [float(x) for x in cells[2].split(",")])
    return out


def main() -> None:
    tables = [rounds(path) for path in sys.argv[1:]]
    print("| row | python/C++ per round | median | best over rounds: C++, Python, ratio |")
    print("|---|---|---|---|")
    by_median = by_best = 0
    for row in tables[0]:
        cpp = [t for table in tables for t in table.get(row, ([], []))[0]]
        py = [t for table in tables for t in table.get(row, ([], []))[1]]
        ratios = [p / c for p, c in zip(py, cpp)]
        med, best = statistics.median(ratios), min(py) / min(cpp)
        by_median += med <= 1.05
        by_best += best <= 1.05
        print(f"| {row} | {', '.join(f'{x:.3f}' for x in ratios)} | {med:.3f} | "
              f"{min(cpp):.4g}, {min(py):.4g}, {best:.3f} |")
    print(f"\nwithin 1.05: {by_median} of {len(tables[0])} by the median of the rounds' ratios, "
          f"{by_best} by the ratio of the best times")


if __name__ == "__main__":
    main()
