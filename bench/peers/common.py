"""What the peer scripts share: reading the dumped inputs, timing a variant the way
bench/workloads.cpp does, the output checksums of bench/workloads/harness.h, and the JSON lines.

A peer script registers one function per workload with @workload; the function gets the
workload's inputs (a dict of numpy arrays, named as in the manifest) and params (a dict of
numbers) and returns its variants: a dict from variant name to either a no-argument callable that
returns the output leaves (a tuple, in lanes' tree order), a Variant (the callable plus `once` for
a variant too slow to repeat), or a Skip("why") for a variant this peer cannot run. run_all()
runs them and prints one JSON line per (workload, variant).
"""

import argparse
import json
import os
import sys
import time
import traceback

import numpy as np

WORKLOADS = {}  # name -> function(inputs, params) -> {variant: callable | Variant | Skip}


def workload(fn):
    """Registers fn as the workload of its name (the name of bench/workloads.cpp's row)."""
    WORKLOADS[fn.__name__] = fn
    return fn


class Variant:
    """A variant's function; `once`: one cold timed run (a loop that would take minutes);
    `ranked=False`: a cell that does not do all of the row's work (dropout_draws' peers apply
    lanes' masks instead of drawing), timed and checked but never the row's best peer."""

    def __init__(self, run, once=False, note=None, ranked=True):
        self.run, self.once, self.note, self.ranked = run, once, note, ranked


class Skip:
    """A variant this peer does not run, and why (the table prints the reason)."""

    def __init__(self, why):
        self.why = why


def load_inputs(directory, name):
    """The inputs (name -> numpy array) and params of one workload of the dump's manifest."""
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    entry = manifest["workloads"][name]
    inputs = {}
    for spec in entry["inputs"]:
        a = np.load(os.path.join(directory, spec["file"]))
        assert list(a.shape) == spec["shape"] and a.dtype == np.dtype(spec["dtype"]), spec
        inputs[spec["name"]] = a
    return inputs, entry["params"]


# ---- ragged batches: the packed inputs of bench/workloads/ragged.h -------------------------------

def ragged_examples(packed: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """The examples of a packed ragged batch: example i is the next lengths[i] rows of packed
    (views, not copies)."""
    return np.split(packed, np.cumsum(lengths)[:-1])


def ragged_padded(packed: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The examples of a packed ragged batch padded with zeros to the longest: (B, max L, ...),
    what lanes::Ragged::padded(0) gives the manual variants."""
    out = np.zeros((len(lengths), int(lengths.max())) + packed.shape[1:], packed.dtype)
    for i, x in enumerate(ragged_examples(packed, lengths)):
        out[i, :len(x)] = x
    return out


# ---- checksums: the same sums as workloads::checksum (harness.h) ---------------------------------

K_WEIGHTS = 4


def _mix(z):
    """splitmix64 of each position (uint64 arithmetic wraps, as in C++)."""
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def checksum(leaves, chunk=1 << 22):
    """sum, sum of |x|, and the position-weighted sums of every element of the leaves, in
    order, as float64; a chunk at a time so a 170M-element output needs no 1 GB temporary."""
    total = absolute = 0.0
    weighted = np.zeros(K_WEIGHTS)
    weighted_sq = np.zeros(K_WEIGHTS)
    shapes, dtypes = [], []
    position = 0
    for leaf in leaves:
        a = np.ascontiguousarray(np.asarray(leaf))
        shapes.append(list(a.shape))
        dtypes.append(str(a.dtype))
        flat = a.reshape(-1)
        for start in range(0, flat.size, chunk):
            v = flat[start:start + chunk].astype(np.float64)
            total += float(v.sum())
            absolute += float(np.abs(v).sum())
            # The 64 bits of each position's hash are its four 16-bit weights (k-th: bits 16k up,
            # the k-th uint16 of the little-endian word): w = 1 + bits / 65536 in [1, 2).
            h = _mix(np.arange(position, position + v.size, dtype=np.uint64))
            w = np.ascontiguousarray(h.view(np.uint16).reshape(-1, K_WEIGHTS).T).astype(np.float64)
            w *= 1 / 65536.0
            w += 1.0
            weighted += w @ v  # (K, n) @ (n,): one gemv, where (n,) @ (n, K) was 6x slower
            w *= w
            weighted_sq += w @ (v * v)
            position += v.size
    return {"checksum": total, "abs_checksum": absolute, "out_shapes": shapes,
            "out_dtypes": dtypes, "weighted": weighted.tolist(),
            "weighted_sq": weighted_sq.tolist()}


# ---- timing: the rules of measure() in bench/workloads.cpp ----------------------------------------

def measure(run, once, quick, block, loop=False):
    """Three warm-ups, then timed runs until about a second has passed (at least 3, at most 200;
    exactly 2 with quick); `once` (and with quick every loop): one cold run -- the rules of
    measure() in bench/workloads.cpp. Two changes keep a whole peer run within its time budget
    without touching the fast cells: warming up stops once it has taken 2 s (a variant that slow
    has nothing left to warm after its first, compiling call), and timing stops after 3 s even
    before the third run. A `loop` (thousands of calls from Python, each compiled at the first)
    has one warm-up. Returns the times in ms, the last output, made ready (block; None when
    run's output is ready as it returns) inside each timed run, and the first call's time
    (tracing and compiling included). The timed region holds only the clock reads and the call
    (and block): on a microsecond row each extra Python call in it is a few percent."""
    clock = time.perf_counter
    if block is None:
        def timed():
            t0 = clock()
            out = run()
            return (clock() - t0) * 1000, out
    else:
        def timed():
            t0 = clock()
            out = block(run())
            return (clock() - t0) * 1000, out
    out, first_ms, warm_ms = None, None, 0.0
    for _ in range(0 if once else 1 if loop else 3):
        ms, out = timed()
        first_ms = ms if first_ms is None else first_ms
        warm_ms += ms
        if warm_ms >= 2000:
            break
    # A running total, as C++'s: summing the list before every run added ~0.1 us to the timed
    # call after it (measured on perex_linear's 3 us call).
    times, total_ms = [], 0.0
    min_runs, max_runs = (1, 1) if once else (2, 2) if quick else (3, 200)
    budget_ms = 0 if quick else 1000
    while len(times) < max_runs and (len(times) < min_runs or total_ms < budget_ms):
        if not quick and total_ms >= 3000:
            break
        out = None
        ms, out = timed()
        times.append(ms)
        total_ms += ms
    return times, out, first_ms


def _percentile(times, q):
    return float(np.percentile(np.asarray(times), q))


def run_all(system, versions, block, to_numpy, argv=None):
    """The command line of a peer script: --inputs DIR (the dump), --workload NAME (repeatable),
    --variant NAME (repeatable), --threads N (only reported: the script pins its threads before
    importing its framework), --quick, --no-loop (skip the loop variants, as in C++). Prints one JSON line per (workload, variant) on stdout."""
    p = argparse.ArgumentParser(description=f"{system} on the lanes workloads")
    p.add_argument("--inputs", required=True, help="directory written by workloads --dump-inputs")
    p.add_argument("--workload", action="append", default=[])
    p.add_argument("--variant", action="append", default=[])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-loop", action="store_true")
    args = p.parse_args(argv)
    names = args.workload or list(WORKLOADS)
    print(json.dumps({"system": system, "versions": versions, "threads": args.threads}),
          flush=True)
    for name in names:
        def emit(variant, **fields):
            print(json.dumps({"workload": name, "variant": variant, "system": system, **fields}),
                  flush=True)

        if name not in WORKLOADS:  # a row lanes has and this script does not (yet)
            emit("setup", skipped=f"no {system} function for this workload yet")
            continue
        try:
            inputs, params = load_inputs(args.inputs, name)
            variants = WORKLOADS[name](inputs, params)
        except Exception as e:  # the workload's setup failed: say so, go on with the next
            emit("setup", error=f"{type(e).__name__}: {e}")
            continue
        for vname, v in variants.items():
            if args.variant and vname not in args.variant or args.no_loop and vname == "loop":
                continue
            if isinstance(v, Skip):
                emit(vname, skipped=v.why)
                continue
            if not isinstance(v, Variant):
                v = Variant(v)
            once = v.once or (args.quick and vname == "loop")
            try:
                times, out, first_ms = measure(v.run, once, args.quick, block,
                                               loop=vname == "loop")
                sums = checksum(to_numpy(out))
            except Exception as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                emit(vname, error=f"{type(e).__name__}: {first}"[:300])
                traceback.print_exc(file=sys.stderr)
                continue
            fields = {"median_ms": float(np.median(times)), "min_ms": min(times),
                      "p10_ms": _percentile(times, 10), "runs": len(times),
                      "threads": args.threads, **sums}
            if first_ms is not None:
                fields["first_call_ms"] = first_ms
            if v.note:
                fields["note"] = v.note
            if not v.ranked:
                fields["ranked"] = False
            emit(vname, **fields)
