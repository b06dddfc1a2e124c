"""MLX (CPU) on the workloads of bench/workloads.cpp, reading the inputs that
`build/bench/workloads --dump-inputs DIR` wrote, and printing the same JSON lines.

    build/peers-venv/bin/python bench/peers/mlx_workloads.py --inputs DIR [--workload NAME]...
        [--variant NAME]... [--threads N] [--quick]

Variants: "vmap+compile" (mx.compile of mx.vmap, the way MLX is meant to be used), "vmap"
(mx.vmap, its graph built anew on each call), "loop" (an mx.compile'd per-example function
called once per example from Python, results stacked) and "manual" (hand-batched mx ops,
mx.compile'd) where jax_workloads.py has one. MLX is lazy: every cell is made ready with
mx.eval inside the timed call. MLX has no while_loop, scan, cond or fori_loop: rows whose
per-example function needs a loop with a data-dependent end (newton_sqrt, mandelbrot,
power_iter) have no vmap cells; their "manual" is the masked loop over the whole batch written
by hand (mx.where, the end tested on the host). Static loops are unrolled in Python (lstm_perex,
rnn_scan's "unrolled", ode_rk4), lax.cond is a select of both branches (piecewise10/50).

Threads: MLX has no API for its CPU thread count; scripts/bench_peers.sh runs this under
`taskset` on N cores and sets OMP/OPENBLAS/MKL_NUM_THREADS to N (the BLAS that mlx-cpu bundles).
"""

import math
import os
import sys
from typing import Callable, Union

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Skip, Variant, ragged_examples, ragged_padded, run_all,  # noqa: E402
                    workload)


def _threads_from_argv():
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
    return 2


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, str(_threads_from_argv()))

import mlx.core as mx  # noqa: E402
import numpy as np  # noqa: E402
from mlx.utils import tree_flatten, tree_map  # noqa: E402

mx.set_default_device(mx.cpu)
F32 = mx.float32


def put(inputs, *names):
    """The named inputs as mx arrays, their dtypes as dumped (mx.array makes a float64 numpy
    array float32 unless told: newton_sqrt's input is float64)."""
    return tuple(mx.array(inputs[n], dtype=mx.float64) if inputs[n].dtype == np.float64
                 else mx.array(inputs[n]) for n in names)


def block(out):
    """Makes a (lazy) output tree ready: mx.eval of every leaf."""
    mx.eval(out)
    return out


def leaves(out):
    """The leaves of an output tree in order (tuples, lists; an array is one leaf)."""
    if isinstance(out, mx.array):
        return [out]
    return [v for _, v in tree_flatten(out)]


def stack_leaves(outs):
    """A list of per-example output trees -> one tree of stacked leaves (the loop variants)."""
    return tree_map(lambda *xs: mx.stack(xs), outs[0], *outs[1:])


def mapped_variants(f, in_axes, args, manual=None):
    """vmap+compile, vmap and loop of f over the arguments whose in_axes entry is 0 (None:
    shared), plus an mx.compile'd manual(*args) when given."""
    batched = mx.vmap(f, in_axes=in_axes)
    compiled = mx.compile(batched)
    n = next(leaves(a)[0].shape[0] for a, ax in zip(args, in_axes) if ax == 0)

    def example(i, x, ax):
        return tree_map(lambda t: t[i], x) if ax == 0 else x

    one = mx.compile(f)  # per example; the example slices are taken outside (lazy views)

    variants = {
        "vmap+compile": lambda: compiled(*args),
        "vmap": lambda: batched(*args),
        "loop": lambda: stack_leaves([one(*[example(i, x, ax) for x, ax in zip(args, in_axes)])
                                      for i in range(n)]),
    }
    if manual is not None:
        m = mx.compile(manual)
        variants["manual"] = lambda: m(*args)
    return variants


def vjp_row(f):
    """v, e -> the row e^T J_f(v): mx.vjp's pullback of one cotangent."""
    return lambda v, e: mx.vjp(f, [v], [e])[1][0]


def jacrev(f):
    """jax.jacrev of a function of one vector: vmap of its vjp over the identity's rows."""
    row = mx.vmap(vjp_row(f), in_axes=(None, 0))

    def jac(v):
        return row(v, mx.eye(f(v).shape[0], dtype=v.dtype))

    return jac


def rows_variants(f, x, manual=None):
    """A Jacobian by rows of the identity: vmap of f's vjp over the cotangents (jacrev spelled
    out), and the loop that pulls back one row at a time."""
    eye = mx.eye(x.shape[0], dtype=x.dtype)
    batched = mx.vmap(vjp_row(f), in_axes=(None, 0))
    compiled = mx.compile(batched)
    pull = mx.compile(vjp_row(f))

    def loop():
        return mx.stack([pull(x, eye[i]) for i in range(eye.shape[0])])

    variants = {"vmap+compile": lambda: compiled(x, eye), "vmap": lambda: batched(x, eye),
                "loop": loop}
    if manual is not None:
        m = mx.compile(manual)
        variants["manual"] = lambda: m(x)
    return variants


def relu(x):
    return mx.maximum(x, 0.0)


def l2_loss(x):
    return 0.5 * mx.sum(x * x)


def one_hot(labels, n):
    """(..., n) float32, 1 at each label."""
    return (mx.arange(n) == mx.expand_dims(labels, -1)).astype(F32)


def cross_entropy(logits, label):
    """-log_softmax(logits)[label], the label picked with a one-hot (a vmap-safe gather)."""
    return mx.logsumexp(logits) - mx.sum(logits * one_hot(label, logits.shape[-1]))


def outer_rows(a, c):
    """a[b] outer c[b] for every b."""
    return a[:, :, None] * c[:, None, :]


# ---- mapped functions ----------------------------------------------------------------------------

@workload
def outer(inputs, params):
    (a,) = put(inputs, "a")
    return mapped_variants(lambda m: m[:, :, None, None] * m[None, None, :, :], (0,), (a,),
                           manual=lambda a: a[:, :, :, None, None] * a[:, None, None, :, :])


@workload
def sqrt_images(inputs, params):
    (images,) = put(inputs, "images")
    f = lambda x: mx.sqrt(x.astype(F32)).astype(mx.uint8)  # noqa: E731
    return mapped_variants(f, (0,), (images,), manual=f)


@workload
def batched_dot(inputs, params):
    x, y = put(inputs, "x", "y")
    return mapped_variants(lambda a, b: mx.sum(a * b), (0, 0), (x, y),
                           manual=lambda x, y: mx.sum(x * y, 1))


@workload
def ensemble(inputs, params):
    w1, b1, w2, b2, x = put(inputs, "w1", "b1", "w2", "b2", "x")

    def model(q, v):
        return relu(v @ q[0] + q[1]) @ q[2] + q[3]

    def manual(q, v):
        h = relu(mx.matmul(v, q[0]) + q[1][:, None, :])
        return mx.matmul(h, q[2]) + q[3][:, None, :]

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

    return mapped_variants(mx.grad(loss), (None, 0, 0), ((w, b), x, y), manual=manual)


@workload
def perex_mlp(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")

    def manual(q, x, y):
        h1 = mx.tanh(x @ q[0] + q[1])
        h2 = mx.tanh(h1 @ q[2] + q[3])
        d3 = mx.softmax(h2 @ q[4] + q[5], axis=-1) - one_hot(y, 10)
        d2 = (d3 @ q[4].T) * (1 - h2 * h2)
        d1 = (d2 @ q[2].T) * (1 - h1 * h1)
        return outer_rows(x, d1), d1, outer_rows(h1, d2), d2, outer_rows(h2, d3), d3

    return mapped_variants(mx.grad(mlp_loss), (None, 0, 0), (p, x, y), manual=manual)


def mlp_loss(q, xi, yi, keep1=None, keep2=None, scale=1.0):
    """perex_mlp's loss; with keep masks, dropout after each tanh (kept values times scale)."""
    h1 = mx.tanh(xi @ q[0] + q[1])
    if keep1 is not None:
        h1 = mx.where(keep1, h1 * scale, 0.0)
    h2 = mx.tanh(h1 @ q[2] + q[3])
    if keep2 is not None:
        h2 = mx.where(keep2, h2 * scale, 0.0)
    return cross_entropy(h2 @ q[4] + q[5], yi)


# Eager mx.vmap materializes every per-example gradient; above this it gets no cell.
EAGER_LIMIT_BYTES = 8 << 30
GRAD_NORMS_CHUNK = 64  # the examples perex_grad_norms' vmap+compile maps at a time


@workload
def perex_grad_norms(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")

    def norm(q, xi, yi):
        g = mx.grad(mlp_loss)(q, xi, yi)
        return mx.sqrt(sum(mx.sum(mx.square(t)) for t in g))

    variants = mapped_variants(norm, (None, 0, 0), (p, x, y))
    variants["loop"] = Variant(variants["loop"], once=True)  # 4096 calls, as lanes' loop
    # As jax's lax.map(batch_size=64) and torch's chunk_size=64: unchunked, the per-example
    # gradients of 4096 examples are 30 GB. MLX has no chunked vmap: a Python loop over chunks
    # of the compiled vmap, each chunk evaluated before the next is built.
    n = x.shape[0]
    chunk = min(GRAD_NORMS_CHUNK, n)
    compiled = mx.compile(mx.vmap(norm, in_axes=(None, 0, 0)))

    def chunked():
        parts = []
        for s in range(0, n, chunk):
            parts.append(compiled(p, x[s:s + chunk], y[s:s + chunk]))
            mx.eval(parts[-1])
        return mx.concatenate(parts)

    variants["vmap+compile"] = Variant(chunked, note=f"compile(vmap) over chunks of {chunk} "
                                       "examples from Python: unchunked it needs 30 GB at 4096")
    grads_bytes = n * sum(t.size for t in p) * 4
    if grads_bytes > EAGER_LIMIT_BYTES:
        variants["vmap"] = Skip(f"eager vmap materializes the per-example gradients: "
                                f"{grads_bytes / 2**30:.0f} GiB")
    return variants


@workload
def perex_mlp_dropout(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y, keep1, keep2 = put(inputs, "x", "y", "keep1", "keep2")
    scale = 1.0 / (1.0 - params["rate"])

    def loss(q, xi, yi, k1, k2):  # lanes' masks, dumped (MLX cannot draw lanes' numbers)
        return mlp_loss(q, xi, yi, k1, k2, scale)

    def manual(q, x, y, k1, k2):
        h1 = mx.tanh(x @ q[0] + q[1])
        a1 = mx.where(k1, h1 * scale, 0.0)
        h2 = mx.tanh(a1 @ q[2] + q[3])
        a2 = mx.where(k2, h2 * scale, 0.0)
        d3 = mx.softmax(a2 @ q[4] + q[5], axis=-1) - one_hot(y, 10)
        d2 = mx.where(k2, (d3 @ q[4].T) * scale, 0.0) * (1 - h2 * h2)
        d1 = mx.where(k1, (d2 @ q[2].T) * scale, 0.0) * (1 - h1 * h1)
        return outer_rows(x, d1), d1, outer_rows(a1, d2), d2, outer_rows(a2, d3), d3

    return mapped_variants(mx.grad(loss), (None, 0, 0, 0, 0), (p, x, y, keep1, keep2),
                           manual=manual)


@workload
def dropout_draws(inputs, params):
    x, keep1, keep2 = put(inputs, "x", "keep1", "keep2")
    scale = 1.0 / (1.0 - params["rate"])
    note = "applies lanes' dumped masks: no random draws"

    def masks(xi, k1, k2):
        ones = mx.ones(k1.shape, F32)
        return mx.where(k1, ones * scale, 0.0) + xi, mx.where(k2, ones * scale, 0.0) + xi

    variants = mapped_variants(masks, (0, 0, 0), (x, keep1, keep2))
    for v in ("vmap+compile", "vmap"):
        variants[v] = Variant(variants[v], note=note, ranked=False)
    del variants["loop"]  # lanes has no loop for this row
    m = mx.compile(lambda x, k1, k2: (mx.where(k1, scale, 0.0).astype(F32) + x[:, None],
                                      mx.where(k2, scale, 0.0).astype(F32) + x[:, None]))
    variants["manual"] = Variant(lambda: m(x, keep1, keep2), note=note, ranked=False)
    return variants


def conv(x, w, stride, pad):
    """The NCHW x OIHW convolution of one example (C, H, W), through MLX's channels-last
    conv2d (NHWC x OHWI)."""
    y = mx.conv2d(x.transpose(1, 2, 0)[None], w.transpose(0, 2, 3, 1), stride=stride,
                  padding=pad)
    return y[0].transpose(2, 0, 1)


@workload
def perex_cnn(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")
    s, pad = int(params["stride"]), int(params["padding"])

    def loss(q, xi, yi):
        h1 = relu(conv(xi, q[0], s, pad) + q[1][:, None, None])
        h2 = relu(conv(h1, q[2], s, pad) + q[3][:, None, None])
        return cross_entropy(h2.reshape(-1) @ q[4] + q[5], yi)

    variants = mapped_variants(mx.grad(loss), (None, 0, 0), (p, x, y))
    why = ("mx.vmap of conv2d's weight gradient fails in mlx 0.32.4: \"[Primitive::vmap] Not "
           "implemented for AsStrided\"")
    variants["vmap+compile"] = variants["vmap"] = Skip(why)
    variants["manual"] = Skip("no hand-written per-example conv backprop for MLX (as for jax)")
    return variants


def lstm_step(q, h, c, xt):
    """One LSTM step; gates i, f, g, o side by side in the 4n columns."""
    n = q[1].shape[0]
    a = xt @ q[0] + h @ q[1] + q[2]
    i, f = mx.sigmoid(a[:n]), mx.sigmoid(a[n:2 * n])
    g, o = mx.tanh(a[2 * n:3 * n]), mx.sigmoid(a[3 * n:])
    c = f * c + i * g
    return o * mx.tanh(c), c


@workload
def lstm_perex(inputs, params):
    p = put(inputs, "wx", "wh", "b")
    (x,) = put(inputs, "x")

    def loss(q, xs):
        h = c = mx.zeros(q[1].shape[0], F32)
        for t in range(xs.shape[0]):  # 8 steps, unrolled as the C++ per-example function is
            h, c = lstm_step(q, h, c, xs[t])
        return l2_loss(c)

    variants = mapped_variants(mx.grad(loss), (None, 0), (p, x))
    variants["manual"] = Skip("no hand-written batched BPTT for MLX (as for jax)")
    return variants


# ---- Jacobians and Hessians ----------------------------------------------------------------------

@workload
def jacobian_square(inputs, params):
    (x,) = put(inputs, "x")
    return rows_variants(mx.square, x,
                         manual=lambda x: mx.eye(x.shape[0], dtype=F32) * (2 * x)[:, None])


@workload
def jacobian_mlp(inputs, params):
    w1, b1, w2, b2, x = put(inputs, "w1", "b1", "w2", "b2", "x")

    def f(v):
        return w2 @ mx.tanh(w1 @ v + b1) + b2

    def manual(x):
        h = mx.tanh(w1 @ x + b1)
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
            v = relu(v @ w + b)
        return v

    def manual(xs):  # forward-mode chain rule on the whole batch, as bench/workloads/jacobians.h
        h, a = xs, None
        for k, (w, b) in enumerate(zip(ws, bs)):
            z = h @ w + b
            a = (w if k == 0 else a @ w) * (z > 0).astype(F32)[:, None, :]
            h = relu(z)
        return mx.swapaxes(a, 1, 2)

    return mapped_variants(jacrev(mlp), (0,), (xs,), manual=manual)


@workload
def hessian(inputs, params):
    w, x = put(inputs, "w", "x")

    def f(v):
        return mx.sum(mx.tanh(w @ v))

    grad = mx.grad(f)
    eye = mx.eye(x.shape[0], dtype=F32)

    def hvp(v, e):  # forward over reverse, as jax.hessian: one column per tangent
        return mx.jvp(grad, [v], [e])[1][0]

    hess = mx.vmap(hvp, in_axes=(None, 0))
    compiled = mx.compile(hess)
    pull = mx.compile(vjp_row(grad))

    def loop():
        return mx.stack([pull(x, eye[i]) for i in range(eye.shape[0])])

    def manual(x):
        t = mx.tanh(w @ x)
        return (w.T * (-2 * t * (1 - t * t))[None, :]) @ w

    m = mx.compile(manual)
    return {"vmap+compile": lambda: compiled(x, eye), "vmap": lambda: hess(x, eye),
            "loop": loop, "manual": lambda: m(x)}


# ---- control flow --------------------------------------------------------------------------------

SELECT_NOTE = "no cond in MLX: mx.where of both branches"


def _piecewise(inputs, params):
    w = put(inputs, "w1", "w2", "w3", "w4")
    (x,) = put(inputs, "x")
    threshold = params["threshold"]

    def mlp4(ws, v):
        for wk in ws:
            v = mx.tanh(wk @ v)
        return v

    def f(ws, v):  # lax.cond under jax.vmap is this select too
        return mx.where(v[0] > threshold, mlp4(ws, v), v * 0.5)

    wt = tuple(wk.T for wk in w)

    def manual():  # gather the examples that take mlp4, run them as one batch, scatter back
        taken = mx.array(np.nonzero(np.asarray(x[:, 0]) > threshold)[0].astype(np.int32))
        h = x[taken]
        for wk in wt:
            h = mx.tanh(h @ wk)
        out = x * 0.5
        out[taken] = h
        return out

    variants = mapped_variants(f, (None, 0), (w, x))
    for v in ("vmap+compile", "vmap", "loop"):
        variants[v] = Variant(variants[v], note=SELECT_NOTE)
    variants["manual"] = Variant(manual, note="the taken rows found on the host (no nonzero "
                                 "in MLX)")
    return variants


@workload
def piecewise10(inputs, params):
    return _piecewise(inputs, params)


@workload
def piecewise50(inputs, params):
    return _piecewise(inputs, params)


NO_WHILE = "no while_loop in MLX (a data-dependent loop cannot be traced by vmap or compile)"


def masked_loop(cond, body, carry, max_iter=None):
    """The masked loop of a batch, by hand: body applied to the lanes whose cond holds (mx.where),
    until none does -- tested on the host (mx.any(...).item()) after each step."""
    k = 0
    while max_iter is None or k < max_iter:
        live = cond(carry)
        if not mx.any(live).item():
            break
        nxt = body(carry)
        carry = tuple(mx.where(live.reshape(live.shape + (1,) * (a.ndim - live.ndim)), a, b)
                      for a, b in zip(nxt, carry))
        k += 1
    return carry


@workload
def newton_sqrt(inputs, params):
    (a,) = put(inputs, "a")
    rtol = params["rtol"]
    step = mx.compile(lambda c: ((c[0] + a / c[0]) * 0.5,))
    variants = {v: Skip(NO_WHILE) for v in ("vmap+compile", "vmap")}
    variants["loop"] = Skip(NO_WHILE + "; a host-tested loop per example is 65536 x "
                            "iterations of syncs")
    variants["manual"] = lambda: masked_loop(lambda c: mx.abs(c[0] * c[0] - a) > a * rtol,
                                             step, (a + 1.0,))[0]
    return variants


@workload
def mandelbrot(inputs, params):
    cr, ci = put(inputs, "cr", "ci")
    max_iter = int(params["max_iter"])

    @mx.compile
    def cond(c):
        zr, zi, n = c
        return (zr * zr + zi * zi <= 4.0) & (n < max_iter)

    @mx.compile
    def body(c):
        zr, zi, n = c
        return zr * zr - zi * zi + cr, zr * zi * 2.0 + ci, n + 1

    zero = mx.zeros(cr.shape, F32)
    variants = {v: Skip(NO_WHILE) for v in ("vmap+compile", "vmap")}
    variants["loop"] = Skip(NO_WHILE + "; a host-tested loop per example is 16384 x up to "
                            "256 syncs")
    variants["manual"] = lambda: masked_loop(cond, body,
                                             (zero, zero, mx.zeros(cr.shape, mx.int32)))[2]
    return variants


@workload
def power_iter(inputs, params):
    a, v0 = put(inputs, "a", "v0")
    tol, max_steps = params["tol"], int(params["max_steps"])

    @mx.compile
    def cond(c):
        v, av, k = c
        r = av - mx.sum(v * av, -1, keepdims=True) * v
        return (mx.sqrt(mx.sum(r * r, -1)) > tol) & (k < max_steps)

    @mx.compile
    def body(c):
        v, av, k = c
        nxt = av / mx.sqrt(mx.sum(av * av, -1, keepdims=True))
        return nxt, (a @ nxt[:, :, None])[:, :, 0], k + 1

    def manual():
        av0 = (a @ v0[:, :, None])[:, :, 0]
        v, av, _ = masked_loop(cond, body, (v0, av0, mx.zeros(v0.shape[0], mx.int32)))
        return mx.sum(v * av, -1), v

    variants = {v: Skip(NO_WHILE) for v in ("vmap+compile", "vmap", "loop")}
    variants["manual"] = manual
    return variants


NO_SCAN = "no scan in MLX: see unrolled (the steps unrolled in Python)"


@workload
def rnn_scan(inputs, params):
    p = put(inputs, "wx", "wh", "b")
    (x,) = put(inputs, "x")
    n = p[1].shape[0]

    def unrolled_loss(q, xs):
        h = c = mx.zeros(n, F32)
        for t in range(xs.shape[0]):
            h, c = lstm_step(q, h, c, xs[t])
        return l2_loss(h)

    variants = mapped_variants(mx.grad(unrolled_loss), (None, 0), (p, x))
    unrolled = variants.pop("vmap+compile")
    variants["vmap+compile"] = Skip(NO_SCAN)
    variants["vmap"] = Skip(NO_SCAN)
    variants["loop"] = Variant(variants["loop"], note="per-example function unrolled (no scan)")
    variants["manual"] = Skip("no hand-written batched BPTT for MLX (as for jax)")
    variants["unrolled"] = unrolled
    return variants


@workload
def ode_rk4(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2")
    y0, target = put(inputs, "y0", "target")
    dt, steps = params["dt"], int(params["steps"])

    def rk4(field, y):
        for _ in range(steps):  # no fori_loop in MLX: unrolled
            k1 = field(y)
            k2 = field(y + k1 * (dt / 2))
            k3 = field(y + k2 * (dt / 2))
            k4 = field(y + k3 * dt)
            y = y + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (dt / 6)
        return y

    def loss(q, y, t):
        def field(v):
            return mx.tanh(q[2] @ mx.tanh(q[0] @ v + q[1]) + q[3])

        return l2_loss(rk4(field, y) - t)

    variants = mapped_variants(mx.grad(loss), (None, 0, 0), (p, y0, target))
    note = f"no fori_loop in MLX: the {steps} steps unrolled in Python"
    for v in ("vmap+compile", "vmap", "loop"):
        variants[v] = Variant(variants[v], note=note)
    variants["manual"] = Skip("the tiled-weights trick is what vmap does; not repeated (as jax)")
    return variants


# ---- ragged batches ------------------------------------------------------------------------------

RAGGED_VMAP = "no ragged batches in mx.vmap (manual below: padded, masked)"
Cells = dict[str, Union[Callable[[], object], Variant, Skip]]


def ragged_variants(f: Callable, masked: Callable, shared: tuple, packed: np.ndarray,
                    lengths: np.ndarray, mapped: np.ndarray) -> Cells:
    """The cells of a ragged row (bench/workloads/ragged.h): the loop, f(shared, example,
    mapped[i]) per example at its own length (mx.compile traces once per distinct shape); the
    manual variant, mx.compile(mx.vmap) of masked(shared, padded example, its length,
    mapped[i]) over the batch padded by hand once, outside the timed function."""
    xs = [mx.array(x) for x in ragged_examples(packed, lengths)]
    ms = [mx.array(m) for m in mapped]
    one = mx.compile(f)
    manual = mx.compile(mx.vmap(masked, in_axes=(None, 0, 0, 0)))
    args = (mx.array(ragged_padded(packed, lengths)), mx.array(lengths.astype(np.int32)),
            mx.array(mapped))
    return {"vmap+compile": Skip(RAGGED_VMAP), "vmap": Skip(RAGGED_VMAP),
            "loop": lambda: stack_leaves([one(shared, x, m) for x, m in zip(xs, ms)]),
            "manual": lambda: manual(shared, *args)}


def live_mask(steps: int, length: mx.array) -> mx.array:
    """An example's valid positions of a padded axis of extent `steps`: (steps,) bool."""
    return mx.arange(steps) < length


def lstm_logits(q: tuple, xs: mx.array, live=None) -> mx.array:
    """An LSTM over xs (L, d) from zero state, q = (wx, wh, b, wo, bo), its steps unrolled in
    Python (no scan in MLX); the logits of its final hidden state. With `live` (L,) bool the
    carry freezes on the steps where it is false."""
    h = c = mx.zeros(q[1].shape[0], F32)
    for t in range(xs.shape[0]):
        nh, nc = lstm_step(q, h, c, xs[t])
        if live is None:
            h, c = nh, nc
        else:
            h, c = mx.where(live[t], nh, h), mx.where(live[t], nc, c)
    return h @ q[3] + q[4]


@workload
def ragged_lstm(inputs: dict[str, np.ndarray], params: dict[str, float]) -> Cells:
    p = put(inputs, "wx", "wh", "b", "wo", "bo")

    def loss(q, xs, label):
        return cross_entropy(lstm_logits(q, xs), label)

    def masked_loss(q, xs, length, label):
        return cross_entropy(lstm_logits(q, xs, live_mask(xs.shape[0], length)), label)

    cells = ragged_variants(mx.grad(loss), mx.grad(masked_loss), p, inputs["x"],
                            inputs["lengths"], inputs["y"])
    note = "no scan in MLX: the steps unrolled in Python"
    cells["loop"] = Variant(cells["loop"], note=note)
    cells["manual"] = Variant(cells["manual"], note=note)
    return cells


def attention_pool(q: tuple, x: mx.array, live=None) -> mx.array:
    """One self-attention layer (one head) over x (L, d), q = (wq, wk, wv), and the mean of its
    outputs over the positions; with `live` (L,) the padded keys and rows are masked."""
    scale = 1 / math.sqrt(q[0].shape[0])
    queries, keys, values = x @ q[0], x @ q[1], x @ q[2]
    scores = (queries @ keys.T) * scale
    if live is not None:
        scores = mx.where(live, scores, -1e30)
    out = mx.softmax(scores, axis=-1) @ values
    if live is None:
        return mx.mean(out, 0)
    rows = live.astype(F32)[:, None]
    return mx.sum(out * rows, 0) / mx.sum(rows)


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
    versions = {"mlx": mx.__version__, "mlx-cpu": version("mlx-cpu"), "numpy": np.__version__}
    run_all("mlx", versions, block, lambda out: [np.array(leaf) for leaf in leaves(out)])


if __name__ == "__main__":
    main()
