"""lanes' Python API (lanes.vmap / grad / jit / lax, nanobind over the C++ core) on the workloads
of bench/workloads.cpp, reading the inputs that `build/bench/workloads --dump-inputs DIR` wrote,
and printing the same JSON lines as the jax and torch peers.

    PYTHONPATH=build/python build/peers-venv/bin/python bench/peers/lanes_workloads.py \\
        --inputs DIR [--workload NAME]... [--variant NAME]... [--threads N] [--quick]

The same library as the C++ column, driven from Python: the question this column answers is what
the Python layer (tracing Python functions, pytree flattening, the per-call dispatch through
nanobind) costs against the C++ API on the same graphs. So every per-example function here
follows its C++ twin in bench/workloads/*.h op for op (where the jax port would pick a different
but equal formula, this one picks the C++ one: l2_loss as sum(x * x) / 2, softmax_cross_entropy
with integer labels, fori_loop as a scan over the step index), and the variants carry the C++
names, so report.py compares each with its C++ cell:

- "vmap": lanes.vmap(f, in_axes) called eagerly (lanes::vmap);
- "vmap+compile": lanes.jit(lanes.vmap(f, in_axes)) (lanes::compile(lanes::vmap(...)));
- "vmap:NAME" / "vmap+compile:NAME": the same with a forced strategy (vmap's cond="select" /
  "partition", loop="mask" / "compact"), on the control-flow rows, as the C++ bench times them;
- "vmap (budget)", "vmap+compile (budget)", "vmap+compile chunk C": perex_grad_norms' memory-
  bounded variants (max_memory_bytes, chunk_size);
- "unrolled": rnn_scan's jit(vmap(grad)) of the per-example function with a Python for loop of
  steps instead of lax.scan;
- "loop": the per-example function called eagerly from Python once per example, the results
  stacked (the C++ loop, with Python's per-call cost on top);
- "manual": hand-batched lanes code, eager, as in C++.

The dropout rows draw their masks with lanes.random (a Generator(2026) under vmap's
randomness="different", rewound before each call, as the C++ variants do), so unlike the jax and
torch cells they do all of the row's work.

Threads: --threads N sets OMP/OPENBLAS/MKL_NUM_THREADS to N before lanes is imported, then
lanes.set_num_threads(N); scripts/bench_peers.sh also runs this under `taskset` on N cores.
"""

import functools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import Skip, Variant, run_all, workload  # noqa: E402


def _threads_from_argv():
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
    return 2


THREADS = _threads_from_argv()
QUICK = "--quick" in sys.argv  # perex_grad_norms' memory budget follows it, as in C++
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(THREADS)

import numpy as np  # noqa: E402

try:
    import lanes  # noqa: E402
except ImportError:  # not on PYTHONPATH: the package the build tree holds (build/python)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "python"))
    import lanes  # noqa: E402
import lanes.numpy as lnp  # noqa: E402
from lanes import lax, nn, random  # noqa: E402
from lanes.tree_util import tree_leaves, tree_map  # noqa: E402

lanes.set_num_threads(THREADS)
F32 = lnp.float32
I32 = lnp.int32

COND_STRATEGIES = {"select": {"cond": "select"}, "partition": {"cond": "partition"}}
LOOP_STRATEGIES = {"mask": {"loop": "mask"}, "compact": {"loop": "compact"}}


def aligned(a, alignment=64):
    """A copy of numpy array a whose data starts on a 64-byte boundary, as lanes' own
    allocations (and so the C++ bench's inputs) do: np.load's arrays are only 16-byte aligned,
    and lanes reads external memory where it lies. (No difference was measurable on the rows
    tried, but this keeps alignment out of the comparison.)"""
    buf = np.empty(a.nbytes + alignment, dtype=np.uint8)
    start = -buf.ctypes.data % alignment
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def put(inputs, *names):
    """The named inputs as lanes Arrays: zero-copy views of 64-byte-aligned copies of the loaded
    numpy arrays (lanes.asarray keeps each copy alive)."""
    return tuple(lanes.asarray(aligned(inputs[n])) for n in names)


def stack_leaves(outs):
    """A list of per-example output trees -> one tree of leaves stacked along a new axis 0 (the
    C++ loop_stack)."""
    return tree_map(lambda *xs: lnp.stack(xs), *outs)


def example(x, i, ax):
    """Example i of an argument mapped along axis 0 (a view per leaf), or the shared argument."""
    return tree_map(lambda t: t[i], x) if ax == 0 else x


def mapped_variants(f, in_axes, args, manual=None, strategies=None):
    """vmap, vmap+compile (and vmap:NAME, vmap+compile:NAME per forced strategy) and loop of f
    over the arguments whose in_axes entry is 0 (None: shared), plus manual() when given: the
    variants of the C++ per_example_variants / strategy_variants."""
    n = next(tree_leaves(a)[0].shape[0] for a, ax in zip(args, in_axes) if ax == 0)
    variants = {}
    for suffix, options in [("", {})] + [(":" + k, o) for k, o in (strategies or {}).items()]:
        batched = lanes.vmap(f, in_axes=in_axes, **options)
        compiled = lanes.jit(batched)
        # (partial: the call itself, without a Python frame around it, as C++'s lambda)
        variants["vmap" + suffix] = functools.partial(batched, *args)
        variants["vmap+compile" + suffix] = functools.partial(compiled, *args)

    def loop():
        return stack_leaves([f(*[example(x, i, ax) for x, ax in zip(args, in_axes)])
                             for i in range(n)])

    variants["loop"] = loop
    if manual is not None:
        variants["manual"] = manual
    return variants


def l2_loss(x):
    """lanes::l2_loss: sum(x * x) / 2."""
    return lnp.sum(x * x) / 2.0


def outer_rows(a, c):
    """a[b] outer c[b] for every b: (B, m) and (B, n) -> (B, m, n) (the C++ batched_outer)."""
    return lnp.expand_dims(a, 2) * lnp.expand_dims(c, 1)


def host_indices(pred):
    """The positions where a bool vector is true, and where it is false, as int32 Arrays (the
    C++ split_indices: a trip to the host)."""
    flags = np.asarray(pred)
    return (lanes.asarray(np.flatnonzero(flags).astype(np.int32)),
            lanes.asarray(np.flatnonzero(~flags).astype(np.int32)))


def any_true(active):
    """Whether any element of a bool Array is true (the host-side test of a hand-written loop)."""
    return bool(np.asarray(active).any())


# ---- mapped functions ----------------------------------------------------------------------------

@workload
def outer(inputs, params):
    (a,) = put(inputs, "a")
    b = a.shape[0]
    return mapped_variants(
        lambda m: lnp.tensordot(m, m, 0), (0,), (a,),
        manual=lambda: a.reshape(b, 32, 32, 1, 1) * a.reshape(b, 1, 1, 32, 32))


@workload
def sqrt_images(inputs, params):
    (images,) = put(inputs, "images")

    def f(x):
        return lnp.sqrt(x.astype(F32)).astype(lnp.uint8)

    return mapped_variants(f, (0,), (images,), manual=lambda: f(images))


@workload
def batched_dot(inputs, params):
    x, y = put(inputs, "x", "y")
    return mapped_variants(lnp.dot, (0, 0), (x, y), manual=lambda: lnp.sum(x * y, 1))


@workload
def ensemble(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2")
    (x,) = put(inputs, "x")

    def model(q, v):
        return lnp.matmul(nn.relu(lnp.matmul(v, q[0]) + q[1]), q[2]) + q[3]

    def manual():  # batched matmuls over the model axis: (512, 64) @ (8, 64, 128) broadcasts x
        h = nn.relu(lnp.matmul(x, p[0]) + lnp.expand_dims(p[1], 1))
        return lnp.matmul(h, p[2]) + lnp.expand_dims(p[3], 1)

    return mapped_variants(model, (0, None), (p, x), manual=manual)


# ---- per-example gradients -----------------------------------------------------------------------

@workload
def perex_linear(inputs, params):
    p = put(inputs, "w", "b")
    x, y = put(inputs, "x", "y")

    def loss(q, xi, yi):
        return l2_loss(yi - (lnp.matmul(xi, q[0]) + q[1]))

    def manual():
        r = lnp.matmul(x, p[0]) + p[1] - y
        return outer_rows(x, r), r

    return mapped_variants(lanes.grad(loss), (None, 0, 0), (p, x, y), manual=manual)


def mlp_loss(q, xi, yi):
    """perex_mlp's loss of one example (also perex_grad_norms'): two tanh layers, then softmax
    cross-entropy against the integer label."""
    h1 = lnp.tanh(lnp.matmul(xi, q[0]) + q[1])
    h2 = lnp.tanh(lnp.matmul(h1, q[2]) + q[3])
    return nn.softmax_cross_entropy(lnp.matmul(h2, q[4]) + q[5], yi)


def mlp_manual(p, x, y):
    """perex_mlp by hand: batched forward, deltas by the chain rule, weight gradients as outer
    products of activations and deltas (the C++ mlp_manual)."""
    h1 = lnp.tanh(lnp.matmul(x, p[0]) + p[1])
    h2 = lnp.tanh(lnp.matmul(h1, p[2]) + p[3])
    d3 = nn.softmax(lnp.matmul(h2, p[4]) + p[5]) - nn.one_hot(y, 10)
    d2 = lnp.matmul(d3, lnp.transpose(p[4])) * (1.0 - h2 * h2)
    d1 = lnp.matmul(d2, lnp.transpose(p[2])) * (1.0 - h1 * h1)
    return outer_rows(x, d1), d1, outer_rows(h1, d2), d2, outer_rows(h2, d3), d3


@workload
def perex_mlp(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")
    return mapped_variants(lanes.grad(mlp_loss), (None, 0, 0), (p, x, y),
                           manual=lambda: mlp_manual(p, x, y))


@workload
def perex_grad_norms(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")
    budget = (64 << 20) if QUICK else (1 << 30)  # the C++ budgets: 64 MiB under --quick, 1 GiB

    def norm(q, xi, yi):
        total = lnp.zeros(())
        for g in tree_leaves(lanes.grad(mlp_loss)(q, xi, yi)):
            total = total + lnp.sum(lnp.square(g))
        return lnp.sqrt(total)

    def with_options(**options):
        return lanes.jit(lanes.vmap(norm, in_axes=(None, 0, 0), **options))

    batched = lanes.vmap(norm, in_axes=(None, 0, 0), max_memory_bytes=budget)
    compiled = with_options(max_memory_bytes=budget)
    variants = {
        "loop": Variant(lambda: lnp.stack([norm(p, x[i], y[i]) for i in range(x.shape[0])]),
                        once=True),
        "vmap (budget)": lambda: batched(p, x, y),
        "vmap+compile (budget)": lambda: compiled(p, x, y),
    }
    for c in (32, 64, 128, 256):
        chunked = with_options(chunk_size=c)
        variants[f"vmap+compile chunk {c}"] = lambda f=chunked: f(p, x, y)
    return variants


DROPOUT_SEED = 2026  # kDropoutSeed of bench/workloads/dropout.h


def dropout_lane_keys(n):
    """Lane i's key for the rewound generator: fold_in(K, i), K the generator's first key (the
    C++ dropout_lane_keys), as a list of n 0-d key Arrays."""
    k = random.Generator(DROPOUT_SEED).next_key()
    return [random.fold_in(k, i) for i in range(n)]


def dropout_masks(n, width, rate):
    """The keep masks (n, width) of layers 0 and 1 that every lane draws: lane i, layer j from
    fold_in(fold_in(K, i), j) (the C++ dropout_masks). The draws are batched by lanes.vmap over
    the lane index: the Python API has no fold_in_each / uniform_each to batch them by hand."""
    k = random.Generator(DROPOUT_SEED).next_key()

    def lane(i):
        lane_key = random.fold_in(k, i)
        return tuple(random.uniform(random.fold_in(lane_key, j), (width,)) < 1.0 - rate
                     for j in (0, 1))

    return lanes.vmap(lane)(lnp.arange(n, dtype=lnp.int64))


@workload
def perex_mlp_dropout(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")
    rate = params["rate"]
    scale = 1.0 / (1.0 - rate)
    gen = random.Generator(DROPOUT_SEED)

    def loss_with(source):
        """perex_mlp's loss with dropout after each tanh, drawing from `source` (a Generator)."""
        def loss(q, xi, yi):
            h1 = nn.dropout(lnp.tanh(lnp.matmul(xi, q[0]) + q[1]), rate, source)
            h2 = nn.dropout(lnp.tanh(lnp.matmul(h1, q[2]) + q[3]), rate, source)
            return nn.softmax_cross_entropy(lnp.matmul(h2, q[4]) + q[5], yi)
        return loss

    batched = lanes.vmap(lanes.grad(loss_with(gen)), in_axes=(None, 0, 0),
                         randomness="different")
    compiled = lanes.jit(batched)

    def rewound(fn):
        def run():
            gen.counter = 0  # every timed call computes the same step (the C++ set_counter(0))
            return fn(p, x, y)
        return run

    def loop():
        # Lane i's j-th draw uses fold_in(lane key, j), what Generator::from_key(lane key) gives
        # the C++ loop: the Python API has no Generator.from_key, so each layer gets its key.
        keys = dropout_lane_keys(x.shape[0])

        def one(i):
            k1, k2 = random.fold_in(keys[i], 0), random.fold_in(keys[i], 1)

            def loss(q, xi, yi):
                h1 = nn.dropout(lnp.tanh(lnp.matmul(xi, q[0]) + q[1]), rate, k1)
                h2 = nn.dropout(lnp.tanh(lnp.matmul(h1, q[2]) + q[3]), rate, k2)
                return nn.softmax_cross_entropy(lnp.matmul(h2, q[4]) + q[5], yi)

            return lanes.grad(loss)(p, x[i], y[i])

        return stack_leaves([one(i) for i in range(x.shape[0])])

    def manual():  # mlp_manual with the masks applied forward and to the deltas on the way back
        m1, m2 = dropout_masks(x.shape[0], p[0].shape[1], rate)
        h1 = lnp.tanh(lnp.matmul(x, p[0]) + p[1])
        a1 = lnp.where(m1, h1 * scale, 0.0)
        h2 = lnp.tanh(lnp.matmul(a1, p[2]) + p[3])
        a2 = lnp.where(m2, h2 * scale, 0.0)
        d3 = nn.softmax(lnp.matmul(a2, p[4]) + p[5]) - nn.one_hot(y, 10)
        g2 = lnp.where(m2, lnp.matmul(d3, lnp.transpose(p[4])) * scale, 0.0)
        d2 = g2 * (1.0 - h2 * h2)
        g1 = lnp.where(m1, lnp.matmul(d2, lnp.transpose(p[2])) * scale, 0.0)
        d1 = g1 * (1.0 - h1 * h1)
        return outer_rows(x, d1), d1, outer_rows(a1, d2), d2, outer_rows(a2, d3), d3

    return {"loop": loop, "vmap": rewound(batched), "vmap+compile": rewound(compiled),
            "manual": Variant(manual, note="masks drawn by lanes.vmap of the per-lane draws")}


@workload
def dropout_draws(inputs, params):
    (x,) = put(inputs, "x")
    rate = params["rate"]
    width = inputs["keep1"].shape[1]
    gen = random.Generator(DROPOUT_SEED)

    def masks(xi):
        ones = lnp.ones((width,))
        first = nn.dropout(ones, rate, gen) + xi  # draw 0, then 1
        second = nn.dropout(ones, rate, gen) + xi
        return first, second

    compiled = lanes.jit(lanes.vmap(masks, randomness="different"))

    def run():
        gen.counter = 0
        return compiled(x)

    def manual():
        kept = lnp.ones((width,)) * (1.0 / (1.0 - rate))
        m1, m2 = dropout_masks(x.shape[0], width, rate)
        return lnp.where(m1, kept, 0.0), lnp.where(m2, kept, 0.0)

    # The C++ row has no loop and no eager vmap: the same two variants here.
    return {"vmap+compile": run,
            "manual": Variant(manual, note="masks drawn by lanes.vmap of the per-lane draws")}


@workload
def perex_cnn(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")
    s, pad = int(params["stride"]), int(params["padding"])

    def loss(q, xi, yi):  # one example: x (1, 28, 28), y a 0-d class index
        h1 = nn.relu(nn.conv2d(xi, q[0], (s, s), (pad, pad)) + q[1].reshape(-1, 1, 1))
        h2 = nn.relu(nn.conv2d(h1, q[2], (s, s), (pad, pad)) + q[3].reshape(-1, 1, 1))
        return nn.softmax_cross_entropy(lnp.matmul(lnp.ravel(h2), q[4]) + q[5], yi)

    variants = mapped_variants(lanes.grad(loss), (None, 0, 0), (p, x, y))
    variants["manual"] = Skip("the C++ manual backprop needs conv_transpose2d and dot_general, "
                              "which the Python API does not have")
    return variants


def lstm_step(q, h, c, xt):
    """One LSTM step; gates i, f, g, o side by side in the 4n columns."""
    n = q[1].shape[0]
    a = lnp.matmul(xt, q[0]) + lnp.matmul(h, q[1]) + q[2]
    i, f = nn.sigmoid(a[:n]), nn.sigmoid(a[n:2 * n])
    g, o = lnp.tanh(a[2 * n:3 * n]), nn.sigmoid(a[3 * n:])
    c = f * c + i * g
    return o * lnp.tanh(c), c


def lstm_manual(p, x, loss_on_h=False):
    """lstm_perex / rnn_scan by hand: batched forward, then backprop through time on the whole
    batch (the C++ lstm_manual; its dot_generals over time as einsums)."""
    batch, steps, n = x.shape[0], x.shape[1], p[1].shape[0]
    tape = []
    h = lnp.zeros((batch, n))
    c = lnp.zeros((batch, n))
    for t in range(steps):
        xt = x[:, t]
        a = lnp.matmul(xt, p[0]) + lnp.matmul(h, p[1]) + p[2]
        gi, gf = nn.sigmoid(a[:, :n]), nn.sigmoid(a[:, n:2 * n])
        gg, go = lnp.tanh(a[:, 2 * n:3 * n]), nn.sigmoid(a[:, 3 * n:])
        c_prev, h_prev = c, h
        c = gf * c + gi * gg
        tanh_c = lnp.tanh(c)
        h = go * tanh_c
        tape.append((xt, h_prev, c_prev, gi, gf, gg, go, tanh_c))
    dh = h if loss_on_h else lnp.zeros((batch, n))
    dc = lnp.zeros((batch, n)) if loss_on_h else c
    deltas = [None] * steps
    wh_t = lnp.transpose(p[1])
    for t in range(steps - 1, -1, -1):
        _, _, c_prev, gi, gf, gg, go, tanh_c = tape[t]
        dct = dc + dh * go * (1.0 - tanh_c * tanh_c)
        da_i = dct * gg * gi * (1.0 - gi)
        da_f = dct * c_prev * gf * (1.0 - gf)
        da_g = dct * gi * (1.0 - gg * gg)
        da_o = dh * tanh_c * go * (1.0 - go)
        deltas[t] = lnp.concatenate([da_i, da_f, da_g, da_o], 1)
        dh = lnp.matmul(deltas[t], wh_t)
        dc = dct * gf
    da = lnp.stack(deltas, 1)  # (B, T, 4n)
    xs = lnp.stack([s[0] for s in tape], 1)
    hs = lnp.stack([s[1] for s in tape], 1)
    return (lnp.einsum("btm,btk->bmk", xs, da), lnp.einsum("btm,btk->bmk", hs, da),
            lnp.sum(da, 1))


@workload
def lstm_perex(inputs, params):
    p = put(inputs, "wx", "wh", "b")
    (x,) = put(inputs, "x")

    def loss(q, xs):
        n = q[1].shape[0]
        h = lnp.zeros((n,))
        c = lnp.zeros((n,))
        for t in range(xs.shape[0]):  # 8 steps, unrolled as the C++ per-example function is
            h, c = lstm_step(q, h, c, xs[t])
        return l2_loss(c)

    return mapped_variants(lanes.grad(loss), (None, 0), (p, x), manual=lambda: lstm_manual(p, x))


# ---- Jacobians and Hessians ----------------------------------------------------------------------

def rows_variants(f, x, manual=None):
    """A Jacobian by rows of the identity: vmap of f's vjp over the cotangents (the C++
    jacobian_by_rows), and the loop that linearizes once and pulls back one row at a time."""
    eye = lnp.eye(x.shape[0])

    def row(v, e):
        return lanes.vjp(f, v)[1](e)[0]

    batched = lanes.vmap(row, in_axes=(None, 0))
    compiled = lanes.jit(batched)

    def loop():
        _, pullback = lanes.vjp(f, x)
        return lnp.stack([pullback(eye[i])[0] for i in range(eye.shape[0])])

    variants = {"loop": loop, "vmap": lambda: batched(x, eye),
                "vmap+compile": lambda: compiled(x, eye)}
    if manual is not None:
        variants["manual"] = manual
    return variants


@workload
def jacobian_square(inputs, params):
    (x,) = put(inputs, "x")
    eye = lnp.eye(x.shape[0])
    return rows_variants(lnp.square, x, manual=lambda: eye * lnp.expand_dims(x * 2.0, 1))


@workload
def jacobian_mlp(inputs, params):
    w1, b1, w2, b2, x = put(inputs, "w1", "b1", "w2", "b2", "x")

    def f(v):
        return lnp.matmul(w2, lnp.tanh(lnp.matmul(w1, v) + b1)) + b2

    def manual():  # J = W2 diag(1 - h^2) W1
        h = lnp.tanh(lnp.matmul(w1, x) + b1)
        return lnp.matmul(w2 * lnp.expand_dims(1.0 - h * h, 0), w1)

    return rows_variants(f, x, manual=manual)


@workload
def fc_batch_jacobian(inputs, params):
    depth = int(params["depth"])
    ws = put(inputs, *[f"w{k:02d}" for k in range(depth)])
    bs = put(inputs, *[f"b{k:02d}" for k in range(depth)])
    (xs,) = put(inputs, "x")

    def mlp(v):
        for w, b in zip(ws, bs):
            v = nn.relu(lnp.matmul(v, w) + b)
        return v

    def manual():  # forward-mode chain rule on the whole batch, as bench/workloads/jacobians.h
        h, a = xs, None
        for k, (w, b) in enumerate(zip(ws, bs)):
            z = lnp.matmul(h, w) + b
            mask = lnp.expand_dims((z > 0.0).astype(F32), 1)
            a = (w if k == 0 else lnp.matmul(a, w)) * mask
            h = nn.relu(z)
        return lnp.swapaxes(a, 1, 2)

    jac = lanes.jacrev(mlp)
    variants = mapped_variants(jac, (0,), (xs,), manual=manual)
    return variants


@workload
def hessian(inputs, params):
    w, x = put(inputs, "w", "x")
    eye = lnp.eye(x.shape[0])

    def f(v):
        return lnp.sum(lnp.tanh(lnp.matmul(w, v)))

    hess = lanes.hessian(f)  # jacfwd(jacrev(f)): the batching is inside the transform
    compiled = lanes.jit(hess)

    def loop():  # row i of H is the pullback of e_i through grad(f)
        _, pullback = lanes.vjp(lanes.grad(f), x)
        return lnp.stack([pullback(eye[i])[0] for i in range(eye.shape[0])])

    def manual():  # H = W^T diag(-2 t (1 - t^2)) W
        t = lnp.tanh(lnp.matmul(w, x))
        s = -2.0 * t * (1.0 - t * t)
        return lnp.matmul(lnp.transpose(w) * lnp.expand_dims(s, 0), w)

    return {"loop": loop, "vmap": lambda: hess(x), "vmap+compile": lambda: compiled(x),
            "manual": manual}


# ---- control flow --------------------------------------------------------------------------------

def _piecewise(inputs, params):
    w = put(inputs, "w1", "w2", "w3", "w4")
    (x,) = put(inputs, "x")
    threshold = params["threshold"]

    def mlp4(ws, v):
        for wk in ws:
            v = lnp.tanh(lnp.matmul(wk, v))
        return v

    def f(ws, v):  # the weights passed (not captured), as in C++
        return lax.cond(v[0] > threshold, mlp4, lambda ws, v: v * 0.5, ws, v)

    # The transposed weights, contiguous, made once (the C++ manual's wt).
    wt = tuple(lanes.asarray(aligned(inputs[n].T)) for n in ("w1", "w2", "w3", "w4"))

    def manual():  # gather the rows that take mlp4, run them as one batch, scatter back
        pred = x[:, 0] > threshold
        taken = host_indices(pred)[0]
        keep = 1.0 - lnp.expand_dims(pred.astype(F32), 1)
        out = x * 0.5 * keep
        if taken.shape[0] == 0:
            return out
        h = lnp.take(x, taken, 0)
        for wk in wt:
            h = lnp.tanh(lnp.matmul(h, wk))
        return out.at[taken].add(h)

    return mapped_variants(f, (None, 0), (w, x), manual=manual, strategies=COND_STRATEGIES)


@workload
def piecewise10(inputs, params):
    return _piecewise(inputs, params)


@workload
def piecewise50(inputs, params):
    return _piecewise(inputs, params)


@workload
def newton_sqrt(inputs, params):
    (a,) = put(inputs, "a")
    rtol = params["rtol"]

    def f(a):
        return lax.while_loop(lambda x: lnp.abs(x * x - a) > a * rtol,
                              lambda x: (x + a / x) * 0.5, a + 1.0)

    def manual():  # a masked loop over the whole batch until every lane has converged
        x = a + 1.0
        active = lnp.abs(x * x - a) > a * rtol
        while any_true(active):
            x = lnp.where(active, (x + a / x) * 0.5, x)
            active = lnp.abs(x * x - a) > a * rtol
        return x

    variants = mapped_variants(f, (0,), (a,), manual=manual, strategies=LOOP_STRATEGIES)
    variants["loop"] = Variant(variants["loop"], once=True)
    return variants


@workload
def mandelbrot(inputs, params):
    cr, ci = put(inputs, "cr", "ci")
    max_iter = int(params["max_iter"])

    def f(cr, ci):
        def cond(c):
            zr, zi, n = c
            return lnp.logical_and(zr * zr + zi * zi <= 4.0, n < max_iter)

        def body(c):
            zr, zi, n = c
            return zr * zr - zi * zi + cr, zr * zi * 2.0 + ci, n + 1

        zero = lnp.zeros((), F32)
        return lax.while_loop(cond, body, (zero, zero, lnp.zeros((), I32)))[2]

    def manual():  # the same arithmetic on every lane, kept only where the lane still runs
        batch = cr.shape[0]
        zr, zi, n = lnp.zeros((batch,)), lnp.zeros((batch,)), lnp.zeros((batch,), I32)

        def running():
            return lnp.logical_and(zr * zr + zi * zi <= 4.0, n < max_iter)

        active = running()
        while any_true(active):
            zr_next = zr * zr - zi * zi + cr
            zi = lnp.where(active, zr * zi * 2.0 + ci, zi)
            zr = lnp.where(active, zr_next, zr)
            n = lnp.where(active, n + 1, n)
            active = running()
        return n

    variants = mapped_variants(f, (0, 0), (cr, ci), manual=manual, strategies=LOOP_STRATEGIES)
    variants["loop"] = Variant(variants["loop"], once=True)
    return variants


def batched_matvec(m, v):
    """m[b] @ v[b] for every b: (B, n, n) and (B, n) -> (B, n) (the C++ dot_general)."""
    return lnp.einsum("bij,bj->bi", m, v)


@workload
def power_iter(inputs, params):
    a, v0 = put(inputs, "a", "v0")
    tol, max_steps = params["tol"], int(params["max_steps"])

    def f(m, v0):
        def cond(c):
            v, av, k = c
            r = av - lnp.dot(v, av) * v
            return lnp.logical_and(lnp.sqrt(lnp.sum(r * r)) > tol, k < max_steps)

        def body(c):
            v, av, k = c
            nxt = av / lnp.sqrt(lnp.sum(av * av))
            return nxt, lnp.matmul(m, nxt), k + 1

        v, av, _ = lax.while_loop(cond, body, (v0, lnp.matmul(m, v0), lnp.zeros((), I32)))
        return lnp.dot(v, av), v

    def test(m, v):  # a v, the Rayleigh quotient, whether the residual is above the tolerance
        av = batched_matvec(m, v)
        lam = lnp.sum(v * av, 1)
        r = av - lnp.expand_dims(lam, 1) * v
        return av, lam, lnp.sqrt(lnp.sum(r * r, 1)) > tol

    def normalized(av):
        return av / lnp.expand_dims(lnp.sqrt(lnp.sum(av * av, 1)), 1)

    def manual():  # compacting: converged examples leave the batch, put back in order at the end
        m, v = a, v0
        alive = np.arange(a.shape[0], dtype=np.int32)
        lambdas, vs, order = [], [], []
        k = 0
        while True:
            av, lam, running = test(m, v)
            flags = np.asarray(running) & (k < max_steps)
            go, done = np.flatnonzero(flags).astype(np.int32), np.flatnonzero(~flags).astype(
                np.int32)
            if done.size:
                idx = lanes.asarray(done)
                lambdas.append(lnp.take(lam, idx, 0))
                vs.append(lnp.take(v, idx, 0))
                order.extend(alive[done].tolist())
            if go.size == 0:
                break
            if done.size:
                alive = alive[go]
                idx = lanes.asarray(go)
                m, v, av = lnp.take(m, idx, 0), lnp.take(v, idx, 0), lnp.take(av, idx, 0)
            v = normalized(av)
            k += 1
        inverse = np.empty(len(order), dtype=np.int32)
        inverse[np.asarray(order)] = np.arange(len(order), dtype=np.int32)
        back = lanes.asarray(inverse)
        return (lnp.take(lnp.concatenate(lambdas, 0), back, 0),
                lnp.take(lnp.concatenate(vs, 0), back, 0))

    def manual_mask():  # every example steps until all have converged, a converged one keeps v
        v = v0
        av, lam, running = test(a, v)
        k = 0
        while k < max_steps and any_true(running):
            v = lnp.where(lnp.expand_dims(running, 1), normalized(av), v)
            av, lam, running = test(a, v)
            k += 1
        return lam, v

    variants = mapped_variants(f, (0, 0), (a, v0), manual=manual, strategies=LOOP_STRATEGIES)
    variants["manual:mask"] = manual_mask
    return variants


@workload
def rnn_scan(inputs, params):
    p = put(inputs, "wx", "wh", "b")
    (x,) = put(inputs, "x")
    n = p[1].shape[0]
    zero = (lnp.zeros((n,)), lnp.zeros((n,)))

    def loss(q, xs):
        def step(hc, xt):
            return lstm_step(q, *hc, xt), ()

        (h, _), _ = lax.scan(step, zero, xs)
        return l2_loss(h)

    def unrolled_loss(q, xs):
        h, c = zero
        for t in range(xs.shape[0]):
            h, c = lstm_step(q, h, c, xs[t])
        return l2_loss(h)

    variants = mapped_variants(lanes.grad(loss), (None, 0), (p, x),
                               manual=lambda: lstm_manual(p, x, loss_on_h=True))
    unrolled = lanes.jit(lanes.vmap(lanes.grad(unrolled_loss), in_axes=(None, 0)))
    variants["unrolled"] = lambda: unrolled(p, x)
    return variants


def fori_loop(lower, upper, body, init):
    """The C++ lanes::fori_loop with static bounds: a scan over the step index (an int32 arange
    that stays unmapped under vmap). lanes.lax.fori_loop is a while_loop whatever its bounds, a
    different graph from the C++ one (see bench/peers/README.md)."""
    steps = lnp.arange(lower, max(lower, upper), dtype=I32)
    return lax.scan(lambda carry, i: (body(i, carry), ()), init, steps)[0]


@workload
def ode_rk4(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2")
    y0, target = put(inputs, "y0", "target")
    dt, steps = params["dt"], int(params["steps"])

    def rk4(field, y):
        def body(_, y):
            k1 = field(y)
            k2 = field(y + k1 * (dt / 2))
            k3 = field(y + k2 * (dt / 2))
            k4 = field(y + k3 * dt)
            return y + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (dt / 6)

        return fori_loop(0, steps, body, y)

    def loss(q, y, t):
        def field(v):
            return lnp.tanh(lnp.matmul(q[2], lnp.tanh(lnp.matmul(q[0], v) + q[1])) + q[3])

        return l2_loss(rk4(field, y) - t)

    # By hand: the weights tiled once per example, the whole batch's ODE run with batched
    # matrix-vector products, the summed loss differentiated once w.r.t. the tiled copies (whose
    # gradients are the per-example ones); compiled, as in C++.
    def tiled_loss(q, y, t):
        def field(v):
            h = lnp.tanh(batched_matvec(q[0], v) + q[1])
            return lnp.tanh(batched_matvec(q[2], h) + q[3])

        return l2_loss(rk4(field, y) - t)

    tiled_grad = lanes.jit(lanes.grad(tiled_loss))
    batch = y0.shape[0]

    def manual():
        tiled = tuple(lanes.asarray(aligned(np.broadcast_to(np.asarray(w)[None],
                                                            (batch,) + w.shape))) for w in p)
        return tiled_grad(tiled, y0, target)

    return mapped_variants(lanes.grad(loss), (None, 0, 0), (p, y0, target), manual=manual)


def print_evaluations(argv):
    """--evaluations: per workload, the primitives one warm vmap+compile call evaluates
    (lanes.FlopCounter), as JSON lines {"workload", "variant", "evaluations": {name: count}}; for
    bench/peers/python_vs_cpp.py, which checks them against the C++ bench's (--profile)."""
    import argparse
    import json
    from common import WORKLOADS, load_inputs
    p = argparse.ArgumentParser()
    p.add_argument("--inputs", required=True)
    p.add_argument("--workload", action="append", default=[])
    p.add_argument("--variant", default="vmap+compile")
    args, _ = p.parse_known_args(argv)
    for name in args.workload or list(WORKLOADS):
        inputs, params = load_inputs(args.inputs, name)
        run = WORKLOADS[name](inputs, params).get(args.variant)
        if run is None or isinstance(run, Skip):
            continue
        run = run.run if isinstance(run, Variant) else run
        for _ in range(2):  # traced and compiled: the count is of a warm call
            run()
        with lanes.FlopCounter() as c:
            run()
        print(json.dumps({"workload": name, "variant": args.variant, "evaluations":
                          {k: v["evaluations"] for k, v in c.by_primitive.items()}}),
              flush=True)


def main():
    if "--evaluations" in sys.argv:
        print_evaluations([a for a in sys.argv[1:] if a != "--evaluations"])
        return
    import platform
    import subprocess
    root = os.path.dirname(os.path.dirname(HERE))
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        commit = ""
    versions = {"lanes (python)": commit or "?", "numpy": np.__version__,
                "python": platform.python_version()}
    run_all("lanes-python", versions, None,
            lambda out: [np.asarray(leaf) for leaf in tree_leaves(out)])


if __name__ == "__main__":
    main()
