"""jax (CPU) on the workloads of bench/workloads.cpp, reading the inputs that
`build/bench/workloads --dump-inputs DIR` wrote, and printing the same JSON lines.

    build/peers-venv/bin/python bench/peers/jax_workloads.py --inputs DIR [--workload NAME]...
        [--variant NAME]... [--threads N] [--quick]

Variants: "jit(vmap)" (jax.jit of jax.vmap, the way jax is meant to be used), "vmap" (jax.vmap
dispatched op by op), "loop" (a jitted per-example function called once per example from Python,
results stacked) and "manual" (hand-batched jnp, jitted) where it is short. The ragged rows
(ragged_lstm, ragged_attention: examples of different lengths) have no jit(vmap) or vmap cells,
jax.vmap mapping arrays of one shape: their "manual" is jax.jit(jax.vmap) of the per-example
function over the batch padded by hand, the padding masked by hand, and their "loop" compiles
the per-example function once per distinct length.

Adding a workload: write one function named as its row of bench/workloads.cpp, decorated with
@workload, that takes (inputs, params) -- the arrays and numbers of the dump's manifest -- and
returns {variant: callable}; each callable returns the output leaves as a tuple in lanes' tree
order (the fields of the LANES_TREE struct, in order), so the checksums compare. For the usual
shapes use mapped_variants() (a function mapped over batch axes) below.

Threads: scripts/bench_peers.sh runs this under `taskset` on N cores; XLA sizes its CPU thread
pools from that affinity mask, and --threads 1 also turns off Eigen's multi-threading
(XLA_FLAGS=--xla_cpu_multi_thread_eigen=false), both set before jax is imported.
"""

import math
import os
import sys
from typing import Callable, Optional, Union

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Skip, Variant, ragged_examples, ragged_padded, run_all,  # noqa: E402
                    workload)


def _threads_from_argv():
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
    return 2


if _threads_from_argv() == 1:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_cpu_multi_thread_eigen=false").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # newton_sqrt is float64; every other input is float32
F32 = jnp.float32


def put(inputs, *names):
    """The named inputs as jax arrays (their dtypes as dumped)."""
    return tuple(jnp.asarray(inputs[n]) for n in names)


def stack(xs):
    """Stacks per-example arrays on the host: jnp.stack of thousands of arrays compiles one
    concatenate of thousands of operands, seconds for newton_sqrt's 65536 examples."""
    return jnp.asarray(np.stack([np.asarray(x) for x in xs]))


def stack_leaves(outs):
    """A list of per-example output trees -> one tree of stacked leaves (the loop variants)."""
    return jax.tree_util.tree_map(lambda *xs: stack(xs), *outs)


def mapped_variants(f, in_axes, args, manual=None):
    """jit(vmap), vmap and loop of f over the arguments whose in_axes entry is 0 (None: shared),
    plus a jitted manual(*args) when given."""
    batched = jax.vmap(f, in_axes=in_axes)
    jitted = jax.jit(batched)
    n = next(jax.tree_util.tree_leaves(a)[0].shape[0] for a, ax in zip(args, in_axes) if ax == 0)

    def example(i, x, ax):
        return jax.tree_util.tree_map(lambda t: t[i], x) if ax == 0 else x

    one = jax.jit(lambda i, *xs: f(*[example(i, x, ax) for x, ax in zip(xs, in_axes)]))

    variants = {
        "jit(vmap)": lambda: jitted(*args),
        "vmap": lambda: batched(*args),
        "loop": lambda: stack_leaves([one(i, *args) for i in range(n)]),
    }
    if manual is not None:
        m = jax.jit(manual)
        variants["manual"] = lambda: m(*args)
    return variants


def rows_variants(f, x, manual=None):
    """A Jacobian by rows of the identity: vmap of f's vjp over the cotangents (jacrev spelled
    out), and the loop that linearizes once and pulls back one row at a time."""
    eye = jnp.eye(x.shape[0], dtype=x.dtype)

    def row(v, e):
        return jax.vjp(f, v)[1](e)[0]

    batched = jax.vmap(row, in_axes=(None, 0))
    jitted = jax.jit(batched)
    pull = jax.jit(lambda pullback, e: pullback(e)[0])

    def loop():
        _, pullback = jax.vjp(f, x)
        return stack([pull(pullback, eye[i]) for i in range(eye.shape[0])])

    variants = {"jit(vmap)": lambda: jitted(x, eye), "vmap": lambda: batched(x, eye),
                "loop": loop}
    if manual is not None:
        m = jax.jit(manual)
        variants["manual"] = lambda: m(x)
    return variants


def l2_loss(x):
    return 0.5 * jnp.sum(x * x)


def cross_entropy(logits, label):
    return -jax.nn.log_softmax(logits)[label]


def outer_rows(a, c):
    """a[b] outer c[b] for every b."""
    return a[:, :, None] * c[:, None, :]


# ---- mapped functions ----------------------------------------------------------------------------

@workload
def outer(inputs, params):
    (a,) = put(inputs, "a")
    return mapped_variants(lambda m: jnp.tensordot(m, m, 0), (0,), (a,),
                           manual=lambda a: a[:, :, :, None, None] * a[:, None, None, :, :])


@workload
def sqrt_images(inputs, params):
    (images,) = put(inputs, "images")
    f = lambda x: jnp.sqrt(x.astype(F32)).astype(jnp.uint8)  # noqa: E731
    return mapped_variants(f, (0,), (images,), manual=f)


@workload
def batched_dot(inputs, params):
    x, y = put(inputs, "x", "y")
    return mapped_variants(jnp.dot, (0, 0), (x, y), manual=lambda x, y: jnp.sum(x * y, 1))


@workload
def ensemble(inputs, params):
    w1, b1, w2, b2, x = put(inputs, "w1", "b1", "w2", "b2", "x")

    def model(q, v):
        return jax.nn.relu(v @ q[0] + q[1]) @ q[2] + q[3]

    def manual(q, v):
        h = jax.nn.relu(jnp.matmul(v, q[0]) + q[1][:, None, :])
        return jnp.matmul(h, q[2]) + q[3][:, None, :]

    return mapped_variants(model, (0, None), ((w1, b1, w2, b2), x), manual=manual)


# ---- per-example gradients -----------------------------------------------------------------------

@workload
def perex_linear(inputs, params):
    w, b, x, y = put(inputs, "w", "b", "x", "y")

    def loss(q, xi, yi):
        return l2_loss(yi - (xi @ q[0] + q[1]))

    def manual(q, x, y):
        r = x @ q[0] + q[1] - y
        return outer_rows(x, r), r

    return mapped_variants(jax.grad(loss), (None, 0, 0), ((w, b), x, y), manual=manual)


@workload
def perex_mlp(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")

    def loss(q, xi, yi):
        h1 = jnp.tanh(xi @ q[0] + q[1])
        h2 = jnp.tanh(h1 @ q[2] + q[3])
        return cross_entropy(h2 @ q[4] + q[5], yi)

    def manual(q, x, y):
        h1 = jnp.tanh(x @ q[0] + q[1])
        h2 = jnp.tanh(h1 @ q[2] + q[3])
        d3 = jax.nn.softmax(h2 @ q[4] + q[5]) - jax.nn.one_hot(y, 10, dtype=F32)
        d2 = (d3 @ q[4].T) * (1 - h2 * h2)
        d1 = (d2 @ q[2].T) * (1 - h1 * h1)
        return outer_rows(x, d1), d1, outer_rows(h1, d2), d2, outer_rows(h2, d3), d3

    return mapped_variants(jax.grad(loss), (None, 0, 0), (p, x, y), manual=manual)


def mlp_loss(q, xi, yi, keep1=None, keep2=None, scale=1.0):
    """perex_mlp's loss; with keep masks, dropout after each tanh (kept values times scale)."""
    h1 = jnp.tanh(xi @ q[0] + q[1])
    if keep1 is not None:
        h1 = jnp.where(keep1, h1 * scale, 0.0)
    h2 = jnp.tanh(h1 @ q[2] + q[3])
    if keep2 is not None:
        h2 = jnp.where(keep2, h2 * scale, 0.0)
    return cross_entropy(h2 @ q[4] + q[5], yi)


# Eager jax.vmap materializes every per-example gradient; above this it gets no cell.
EAGER_LIMIT_BYTES = 8 << 30
GRAD_NORMS_CHUNK = 64  # the examples perex_grad_norms' jit(vmap) maps at a time


@workload
def perex_grad_norms(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")

    def norm(q, xi, yi):
        g = jax.grad(mlp_loss)(q, xi, yi)
        return jnp.sqrt(sum(jnp.sum(jnp.square(t)) for t in g))

    variants = mapped_variants(norm, (None, 0, 0), (p, x, y))
    variants["loop"] = Variant(variants["loop"], once=True)  # 4096 calls, as lanes' loop
    # XLA does not fuse the per-example outer products (dot_generals) into the sums of squares:
    # jit(vmap) of 4096 examples asks for 30 GB ("Out of memory allocating 30534696960 bytes").
    # jax's chunked vmap is lax.map with batch_size (a scan over vmapped chunks), as torch's
    # chunk_size; 64 at a time, as in torch_workloads.py.
    chunk = min(GRAD_NORMS_CHUNK, x.shape[0])
    chunked = jax.jit(lambda q, x, y: lax.map(lambda xy: norm(q, *xy), (x, y), batch_size=chunk))
    variants["jit(vmap)"] = Variant(lambda: chunked(p, x, y),
                                    note=f"jit(lax.map(batch_size={chunk})): unchunked jit(vmap) "
                                    "allocates 30 GB at 4096 examples")
    grads_bytes = x.shape[0] * sum(t.size for t in p) * 4
    if grads_bytes > EAGER_LIMIT_BYTES:
        variants["vmap"] = Skip(f"eager vmap materializes the per-example gradients: "
                                f"{grads_bytes / 2**30:.0f} GiB")
    return variants


@workload
def perex_mlp_dropout(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y, keep1, keep2 = put(inputs, "x", "y", "keep1", "keep2")
    scale = 1.0 / (1.0 - params["rate"])

    def loss(q, xi, yi, k1, k2):  # lanes' masks, dumped (jax cannot draw lanes' numbers)
        return mlp_loss(q, xi, yi, k1, k2, scale)

    def manual(q, x, y, k1, k2):
        h1 = jnp.tanh(x @ q[0] + q[1])
        a1 = jnp.where(k1, h1 * scale, 0.0)
        h2 = jnp.tanh(a1 @ q[2] + q[3])
        a2 = jnp.where(k2, h2 * scale, 0.0)
        d3 = jax.nn.softmax(a2 @ q[4] + q[5]) - jax.nn.one_hot(y, 10, dtype=F32)
        d2 = jnp.where(k2, (d3 @ q[4].T) * scale, 0.0) * (1 - h2 * h2)
        d1 = jnp.where(k1, (d2 @ q[2].T) * scale, 0.0) * (1 - h1 * h1)
        return outer_rows(x, d1), d1, outer_rows(a1, d2), d2, outer_rows(a2, d3), d3

    return mapped_variants(jax.grad(loss), (None, 0, 0, 0, 0), (p, x, y, keep1, keep2),
                           manual=manual)


@workload
def dropout_draws(inputs, params):
    x, keep1, keep2 = put(inputs, "x", "keep1", "keep2")
    scale = 1.0 / (1.0 - params["rate"])
    note = "applies lanes' dumped masks: no random draws"

    def masks(xi, k1, k2):
        ones = jnp.ones(k1.shape, F32)
        return jnp.where(k1, ones * scale, 0.0) + xi, jnp.where(k2, ones * scale, 0.0) + xi

    variants = mapped_variants(masks, (0, 0, 0), (x, keep1, keep2))
    for v in ("jit(vmap)", "vmap"):
        variants[v] = Variant(variants[v], note=note, ranked=False)
    del variants["loop"]  # lanes has no loop for this row
    m = jax.jit(lambda x, k1, k2: (jnp.where(k1, F32(scale), F32(0)) + x[:, None],
                                   jnp.where(k2, F32(scale), F32(0)) + x[:, None]))
    variants["manual"] = Variant(lambda: m(x, keep1, keep2), note=note, ranked=False)
    return variants


def conv(x, w, stride, pad):
    """NCHW x OIHW convolution of one example (C, H, W)."""
    return lax.conv_general_dilated(x[None], w, (stride, stride), ((pad, pad), (pad, pad)),
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"))[0]


@workload
def perex_cnn(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")
    s, pad = int(params["stride"]), int(params["padding"])

    def loss(q, xi, yi):
        h1 = jax.nn.relu(conv(xi, q[0], s, pad) + q[1][:, None, None])
        h2 = jax.nn.relu(conv(h1, q[2], s, pad) + q[3][:, None, None])
        return cross_entropy(h2.reshape(-1) @ q[4] + q[5], yi)

    variants = mapped_variants(jax.grad(loss), (None, 0, 0), (p, x, y))
    variants["manual"] = Skip("no hand-written per-example conv backprop for jax")
    return variants


def lstm_step(q, h, c, xt):
    """One LSTM step; gates i, f, g, o side by side in the 4n columns."""
    n = q[1].shape[0]
    a = xt @ q[0] + h @ q[1] + q[2]
    i, f = jax.nn.sigmoid(a[:n]), jax.nn.sigmoid(a[n:2 * n])
    g, o = jnp.tanh(a[2 * n:3 * n]), jax.nn.sigmoid(a[3 * n:])
    c = f * c + i * g
    return o * jnp.tanh(c), c


@workload
def lstm_perex(inputs, params):
    p = put(inputs, "wx", "wh", "b")
    (x,) = put(inputs, "x")

    def loss(q, xs):
        h = c = jnp.zeros(q[1].shape[0], F32)
        for t in range(xs.shape[0]):  # 8 steps, unrolled as the C++ per-example function is
            h, c = lstm_step(q, h, c, xs[t])
        return l2_loss(c)

    variants = mapped_variants(jax.grad(loss), (None, 0), (p, x))
    variants["manual"] = Skip("no hand-written batched BPTT for jax")
    return variants


# ---- Jacobians and Hessians ----------------------------------------------------------------------

@workload
def jacobian_square(inputs, params):
    (x,) = put(inputs, "x")
    return rows_variants(jnp.square, x,
                         manual=lambda x: jnp.eye(x.shape[0], dtype=F32) * (2 * x)[:, None])


@workload
def jacobian_mlp(inputs, params):
    w1, b1, w2, b2, x = put(inputs, "w1", "b1", "w2", "b2", "x")

    def f(v):
        return w2 @ jnp.tanh(w1 @ v + b1) + b2

    def manual(x):
        h = jnp.tanh(w1 @ x + b1)
        return (w2 * (1 - h * h)[None, :]) @ w1

    return rows_variants(f, x, manual=manual)


@workload
def fc_batch_jacobian(inputs, params):
    depth = int(params["depth"])
    ws = put(inputs, *[f"w{k:02d}" for k in range(depth)])
    bs = put(inputs, *[f"b{k:02d}" for k in range(depth)])
    (xs,) = put(inputs, "x")

    def mlp(v):
        for w, b in zip(ws, bs):
            v = jax.nn.relu(v @ w + b)
        return v

    def manual(xs):  # forward-mode chain rule on the whole batch, as bench/workloads/jacobians.h
        h, a = xs, None
        for k, (w, b) in enumerate(zip(ws, bs)):
            z = h @ w + b
            a = (w if k == 0 else a @ w) * (z > 0).astype(F32)[:, None, :]
            h = jax.nn.relu(z)
        return jnp.swapaxes(a, 1, 2)

    return mapped_variants(jax.jacrev(mlp), (0,), (xs,), manual=manual)


@workload
def hessian(inputs, params):
    w, x = put(inputs, "w", "x")

    def f(v):
        return jnp.sum(jnp.tanh(w @ v))

    hess = jax.hessian(f)  # jacfwd(jacrev(f)): the batching is inside the transform
    jitted = jax.jit(hess)
    eye = jnp.eye(x.shape[0], dtype=F32)
    pull = jax.jit(lambda pullback, e: pullback(e)[0])

    def loop():
        _, pullback = jax.vjp(jax.grad(f), x)
        return stack([pull(pullback, eye[i]) for i in range(eye.shape[0])])

    def manual(x):
        t = jnp.tanh(w @ x)
        return (w.T * (-2 * t * (1 - t * t))[None, :]) @ w

    m = jax.jit(manual)
    return {"jit(vmap)": lambda: jitted(x), "vmap": lambda: hess(x), "loop": loop,
            "manual": lambda: m(x)}


# ---- control flow --------------------------------------------------------------------------------

def _piecewise(inputs, params):
    w = put(inputs, "w1", "w2", "w3", "w4")
    (x,) = put(inputs, "x")
    threshold = params["threshold"]

    def mlp4(ws, v):
        for wk in ws:
            v = jnp.tanh(wk @ v)
        return v

    def f(ws, v):
        return lax.cond(v[0] > threshold, mlp4, lambda ws, v: v * 0.5, ws, v)

    wt = tuple(wk.T for wk in w)

    def manual():  # gather the examples that take mlp4, run them as one batch, scatter back
        pred = x[:, 0] > threshold
        taken = jnp.nonzero(pred)[0]
        h = x[taken]
        for wk in wt:
            h = jnp.tanh(h @ wk)
        return (x * 0.5).at[taken].set(h)

    variants = mapped_variants(f, (None, 0), (w, x))
    variants["manual"] = manual
    return variants


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
        return lax.while_loop(lambda x: jnp.abs(x * x - a) > a * rtol,
                              lambda x: (x + a / x) * 0.5, a + 1.0)

    variants = mapped_variants(f, (0,), (a,))
    variants["loop"] = Variant(variants["loop"], once=True)
    variants["manual"] = Skip("vmap of while_loop is already the masked loop")
    return variants


@workload
def mandelbrot(inputs, params):
    cr, ci = put(inputs, "cr", "ci")
    max_iter = int(params["max_iter"])

    def f(cr, ci):
        def cond(c):
            zr, zi, n = c
            return (zr * zr + zi * zi <= 4.0) & (n < max_iter)

        def body(c):
            zr, zi, n = c
            return zr * zr - zi * zi + cr, zr * zi * 2.0 + ci, n + 1

        zero = jnp.zeros((), F32)
        return lax.while_loop(cond, body, (zero, zero, jnp.zeros((), jnp.int32)))[2]

    variants = mapped_variants(f, (0, 0), (cr, ci))
    variants["loop"] = Variant(variants["loop"], once=True)
    variants["manual"] = Skip("vmap of while_loop is already the masked loop")
    return variants


@workload
def power_iter(inputs, params):
    a, v0 = put(inputs, "a", "v0")
    tol, max_steps = params["tol"], int(params["max_steps"])

    def f(m, v0):
        def cond(c):
            v, av, k = c
            r = av - jnp.dot(v, av) * v
            return (jnp.sqrt(jnp.sum(r * r)) > tol) & (k < max_steps)

        def body(c):
            v, av, k = c
            nxt = av / jnp.sqrt(jnp.sum(av * av))
            return nxt, m @ nxt, k + 1

        v, av, _ = lax.while_loop(cond, body, (v0, m @ v0, jnp.zeros((), jnp.int32)))
        return jnp.dot(v, av), v

    variants = mapped_variants(f, (0, 0), (a, v0))
    variants["manual"] = Skip("vmap of while_loop is already the masked loop")
    return variants


@workload
def rnn_scan(inputs, params):
    p = put(inputs, "wx", "wh", "b")
    (x,) = put(inputs, "x")
    n = p[1].shape[0]

    def loss(q, xs):
        def step(hc, xt):
            return lstm_step(q, *hc, xt), None

        zero = jnp.zeros(n, F32)
        (h, _), _ = lax.scan(step, (zero, zero), xs)
        return l2_loss(h)

    def unrolled_loss(q, xs):
        h = c = jnp.zeros(n, F32)
        for t in range(xs.shape[0]):
            h, c = lstm_step(q, h, c, xs[t])
        return l2_loss(h)

    variants = mapped_variants(jax.grad(loss), (None, 0), (p, x))
    variants["manual"] = Skip("no hand-written batched BPTT for jax")
    unrolled = jax.jit(jax.vmap(jax.grad(unrolled_loss), in_axes=(None, 0)))
    variants["unrolled"] = lambda: unrolled(p, x)
    return variants


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

        return lax.fori_loop(0, steps, body, y)

    def loss(q, y, t):
        def field(v):
            return jnp.tanh(q[2] @ jnp.tanh(q[0] @ v + q[1]) + q[3])

        return l2_loss(rk4(field, y) - t)

    variants = mapped_variants(jax.grad(loss), (None, 0, 0), (p, y0, target))
    variants["manual"] = Skip("the tiled-weights trick is what vmap does; not repeated for jax")
    return variants


# ---- ragged batches ------------------------------------------------------------------------------

RAGGED_VMAP = "no ragged batches in jax.vmap (manual below: padded, masked)"
Cells = dict[str, Union[Callable[[], object], Variant, Skip]]


def ragged_variants(f: Callable, masked: Callable, shared: tuple, packed: np.ndarray,
                    lengths: np.ndarray, mapped: np.ndarray) -> Cells:
    """The cells of a ragged row (bench/workloads/ragged.h): the loop, f(shared, example,
    mapped[i]) per example at its own length; the manual variant, jax.jit(jax.vmap) of
    masked(shared, padded example, its length, mapped[i]) over the batch padded by hand once,
    outside the timed function (lanes' manual is compile(vmap) of its masked function); jit(vmap)
    and vmap skipped."""
    xs = [jnp.asarray(x) for x in ragged_examples(packed, lengths)]
    ms = [jnp.asarray(m) for m in mapped]
    # Jitted per example: one compile per distinct length, in the loop's warm-up.
    one = jax.jit(f)
    manual = jax.jit(jax.vmap(masked, in_axes=(None, 0, 0, 0)))
    args = tuple(jnp.asarray(a) for a in (ragged_padded(packed, lengths), lengths, mapped))
    return {"jit(vmap)": Skip(RAGGED_VMAP), "vmap": Skip(RAGGED_VMAP),
            "loop": lambda: stack_leaves([one(shared, x, m) for x, m in zip(xs, ms)]),
            "manual": lambda: manual(shared, *args)}


def live_mask(steps: int, length: jax.Array) -> jax.Array:
    """An example's valid positions of a padded axis of extent `steps`: (steps,) bool."""
    return jnp.arange(steps) < length


def lstm_logits(q: tuple, xs: jax.Array, live: Optional[jax.Array] = None) -> jax.Array:
    """An LSTM over xs (L, d) from zero state, q = (wx, wh, b, wo, bo); the logits of its final
    hidden state. With `live` (L,) bool the carry freezes on the steps where it is false."""
    zero = jnp.zeros(q[1].shape[0], F32)
    if live is None:
        (h, _), _ = lax.scan(lambda hc, xt: (lstm_step(q, *hc, xt), None), (zero, zero), xs)
    else:
        def step(hc, x_live):
            nxt = lstm_step(q, *hc, x_live[0])
            return tuple(jnp.where(x_live[1], a, b) for a, b in zip(nxt, hc)), None

        (h, _), _ = lax.scan(step, (zero, zero), (xs, live))
    return h @ q[3] + q[4]


@workload
def ragged_lstm(inputs: dict[str, np.ndarray], params: dict[str, float]) -> Cells:
    p = put(inputs, "wx", "wh", "b", "wo", "bo")

    def loss(q, xs, label):
        return cross_entropy(lstm_logits(q, xs), label)

    def masked_loss(q, xs, length, label):
        return cross_entropy(lstm_logits(q, xs, live_mask(xs.shape[0], length)), label)

    return ragged_variants(jax.grad(loss), jax.grad(masked_loss), p, inputs["x"],
                           inputs["lengths"], inputs["y"])


def attention_pool(q: tuple, x: jax.Array, live: Optional[jax.Array] = None) -> jax.Array:
    """One self-attention layer (one head) over x (L, d), q = (wq, wk, wv), and the mean of its
    outputs over the positions; with `live` (L,) the padded keys and rows are masked."""
    scale = 1 / math.sqrt(q[0].shape[0])
    queries, keys, values = x @ q[0], x @ q[1], x @ q[2]
    scores = (queries @ keys.T) * scale
    if live is not None:
        scores = jnp.where(live, scores, -1e30)
    out = jax.nn.softmax(scores, -1) @ values
    if live is None:
        return jnp.mean(out, 0)
    rows = live.astype(F32)[:, None]
    return jnp.sum(out * rows, 0) / jnp.sum(rows)


@workload
def ragged_attention(inputs: dict[str, np.ndarray], params: dict[str, float]) -> Cells:
    p = put(inputs, "wq", "wk", "wv")
    unused = np.zeros(inputs["lengths"].shape[0], np.float32)  # as lanes' per-example input

    def f(q, x, _):
        return attention_pool(q, x)

    def masked(q, x, length, _):
        return attention_pool(q, x, live_mask(x.shape[0], length))

    return ragged_variants(f, masked, p, inputs["x"], inputs["lengths"], unused)


@workload
def ragged_attention_uniform(inputs: dict[str, np.ndarray], params: dict[str, float]) -> Cells:
    """ragged_attention with every sequence of one length (64)."""
    return ragged_attention(inputs, params)


def main():
    from importlib.metadata import version
    versions = {"jax": jax.__version__, "jaxlib": version("jaxlib"), "numpy": np.__version__}
    run_all("jax", versions, jax.block_until_ready,
            lambda out: [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(out)])


if __name__ == "__main__":
    main()
