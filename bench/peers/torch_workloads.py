"""PyTorch 2.x (CPU) on the workloads of bench/workloads.cpp, reading the inputs that
`build/bench/workloads --dump-inputs DIR` wrote, and printing the same JSON lines.

    build/peers-venv/bin/python bench/peers/torch_workloads.py --inputs DIR [--workload NAME]...
        [--variant NAME]... [--threads N] [--quick]

Variants: "vmap" (torch.func.vmap of the per-example function, with torch.func.grad / jacrev /
vjp / hessian inside, run eagerly), "compile" (torch.compile of that vmap function, inductor's
C++ backend), "loop" (the per-example function called once per example from Python, results
stacked) and "manual" (hand-batched torch, eager) where it is short.

Control flow: torch.cond batches under torch.func.vmap (it becomes a select of both branches).
torch._higher_order_ops.while_loop has no batching rule and scan has no torch.func.grad rule (in
the pinned torch), so newton_sqrt, mandelbrot and power_iter have no vmap/compile cells: their
"loop" is the eager Python while loop per example, and "manual" the masked loop over the whole
batch; rnn_scan's and ode_rk4's vmap unroll the Python for loop of steps (torch has no
fori_loop), each marked with a note.

Ragged rows (ragged_lstm, ragged_attention: examples of different lengths): torch.func.vmap maps
tensors of one shape, so they have no vmap/compile cells; "manual" is torch.func.vmap of the
per-example function over the batch padded by hand, the padding masked by hand (the LSTM's steps
a Python for loop, eager), and ragged_attention has an extra "nested" cell: torch.nested jagged
tensors with F.scaled_dot_product_attention.

Adding a workload: write one function named as its row of bench/workloads.cpp, decorated with
@workload, that takes (inputs, params) -- the arrays and numbers of the dump's manifest -- and
returns {variant: callable}; each callable returns the output leaves as a tuple in lanes' tree
order (the fields of the LANES_TREE struct, in order), so the checksums compare. For the usual
shapes use mapped_variants() (a function mapped over batch axes) below.

Threads: --threads N calls torch.set_num_threads(N) and torch.set_num_interop_threads(N) and sets
OMP_NUM_THREADS / MKL_NUM_THREADS / TORCHINDUCTOR_COMPILE_THREADS to N before torch is imported;
scripts/bench_peers.sh also runs this under `taskset` on N cores.
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


THREADS = _threads_from_argv()
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS"):
    os.environ[var] = str(THREADS)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.func import grad, hessian as hessian_of, jacrev, vjp, vmap  # noqa: E402

torch.set_num_threads(THREADS)
torch.set_num_interop_threads(THREADS)
torch._dynamo.config.cache_size_limit = 64  # every workload compiles its own graphs

NO_WHILE_VMAP = "no vmap rule for torch while_loop (loop, manual below)"


def put(inputs, *names):
    """The named inputs as torch tensors (int32 labels become int64, as torch's losses want)."""
    out = []
    for n in names:
        t = torch.from_numpy(inputs[n])
        out.append(t.long() if t.dtype == torch.int32 else t)
    return tuple(out)


def stack_leaves(outs):
    """A list of per-example outputs (tensors or tuples of them) -> stacked leaves."""
    if isinstance(outs[0], torch.Tensor):
        return torch.stack(outs)
    return tuple(torch.stack(xs) for xs in zip(*outs))


def example(x, i):
    return tuple(t[i] for t in x) if isinstance(x, tuple) else x[i]


def mapped_variants(f, in_dims, args, manual=None, note=None):
    """vmap, compile and loop of f over the arguments whose in_dims entry is 0 (None: shared),
    plus manual(*args) when given; `note` marks the vmap and compile cells."""
    batched = vmap(f, in_dims=in_dims)
    compiled = torch.compile(batched)
    first = next(a for a, d in zip(args, in_dims) if d == 0)
    n = (first[0] if isinstance(first, tuple) else first).shape[0]

    def loop():
        return stack_leaves(
            [f(*[example(a, i) if d == 0 else a for a, d in zip(args, in_dims)])
             for i in range(n)])

    variants = {"vmap": Variant(lambda: batched(*args), note=note),
                "compile": Variant(lambda: compiled(*args), note=note), "loop": loop}
    if manual is not None:
        variants["manual"] = lambda: manual(*args)
    return variants


def rows_variants(f, x, manual=None):
    """A Jacobian by rows of the identity: vmap of f's vjp over the cotangents, and the loop
    that linearizes once and pulls back one row at a time."""
    eye = torch.eye(x.shape[0], dtype=x.dtype)

    def row(v, e):
        return vjp(f, v)[1](e)[0]

    batched = vmap(row, in_dims=(None, 0))
    compiled = torch.compile(batched)

    def loop():
        _, pullback = vjp(f, x)
        return torch.stack([pullback(eye[i])[0] for i in range(eye.shape[0])])

    variants = {"vmap": lambda: batched(x, eye), "compile": lambda: compiled(x, eye),
                "loop": loop}
    if manual is not None:
        variants["manual"] = lambda: manual(x)
    return variants


def l2_loss(x):
    return 0.5 * torch.sum(x * x)


def outer_rows(a, c):
    return a[:, :, None] * c[:, None, :]


# ---- mapped functions ----------------------------------------------------------------------------

@workload
def outer(inputs, params):
    (a,) = put(inputs, "a")
    return mapped_variants(lambda m: torch.tensordot(m, m, dims=0), (0,), (a,),
                           manual=lambda a: a[:, :, :, None, None] * a[:, None, None, :, :])


@workload
def sqrt_images(inputs, params):
    (images,) = put(inputs, "images")
    f = lambda x: torch.sqrt(x.float()).to(torch.uint8)  # noqa: E731
    return mapped_variants(f, (0,), (images,), manual=f)


@workload
def batched_dot(inputs, params):
    x, y = put(inputs, "x", "y")
    return mapped_variants(torch.dot, (0, 0), (x, y), manual=lambda x, y: torch.sum(x * y, 1))


@workload
def ensemble(inputs, params):
    w1, b1, w2, b2, x = put(inputs, "w1", "b1", "w2", "b2", "x")

    def model(q, v):
        return torch.relu(v @ q[0] + q[1]) @ q[2] + q[3]

    def manual(q, v):
        h = torch.relu(torch.matmul(v, q[0]) + q[1][:, None, :])
        return torch.matmul(h, q[2]) + q[3][:, None, :]

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

    return mapped_variants(grad(loss), (None, 0, 0), ((w, b), x, y), manual=manual)


@workload
def perex_mlp(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")

    def loss(q, xi, yi):
        h1 = torch.tanh(xi @ q[0] + q[1])
        h2 = torch.tanh(h1 @ q[2] + q[3])
        return F.cross_entropy(h2 @ q[4] + q[5], yi)

    def manual(q, x, y):
        h1 = torch.tanh(x @ q[0] + q[1])
        h2 = torch.tanh(h1 @ q[2] + q[3])
        d3 = torch.softmax(h2 @ q[4] + q[5], -1) - F.one_hot(y, 10).float()
        d2 = (d3 @ q[4].T) * (1 - h2 * h2)
        d1 = (d2 @ q[2].T) * (1 - h1 * h1)
        return outer_rows(x, d1), d1, outer_rows(h1, d2), d2, outer_rows(h2, d3), d3

    return mapped_variants(grad(loss), (None, 0, 0), (p, x, y), manual=manual)


def mlp_loss(q, xi, yi, keep1=None, keep2=None, scale=1.0):
    """perex_mlp's loss; with keep masks, dropout after each tanh (kept values times scale)."""
    h1 = torch.tanh(xi @ q[0] + q[1])
    if keep1 is not None:
        h1 = torch.where(keep1, h1 * scale, 0.0)
    h2 = torch.tanh(h1 @ q[2] + q[3])
    if keep2 is not None:
        h2 = torch.where(keep2, h2 * scale, 0.0)
    return F.cross_entropy(h2 @ q[4] + q[5], yi)


# The examples torch.func.vmap maps at a time in perex_grad_norms: unchunked, the per-example
# gradients of all 4096 examples (1.86M floats each) are 30 GB; 64 at a time they are 476 MB,
# about lanes' 1 GiB budget once the squares beside them are counted.
GRAD_NORMS_CHUNK = 64


@workload
def perex_grad_norms(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")

    def norm(q, xi, yi):
        g = grad(mlp_loss)(q, xi, yi)
        return torch.sqrt(sum(torch.sum(torch.square(t)) for t in g))

    chunk = min(GRAD_NORMS_CHUNK, x.shape[0])
    note = f"torch.func.vmap chunk_size={chunk} (unchunked: 30 GB at 4096 examples)"
    batched = vmap(norm, in_dims=(None, 0, 0), chunk_size=chunk)
    compiled = torch.compile(batched)

    def loop():
        return torch.stack([norm(p, x[i], y[i]) for i in range(x.shape[0])])

    return {"vmap": Variant(lambda: batched(p, x, y), note=note),
            "compile": Variant(lambda: compiled(p, x, y), note=note),
            "loop": Variant(loop, once=True)}


@workload
def perex_mlp_dropout(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y, keep1, keep2 = put(inputs, "x", "y", "keep1", "keep2")
    scale = 1.0 / (1.0 - params["rate"])

    def loss(q, xi, yi, k1, k2):  # lanes' masks, dumped (torch cannot draw lanes' numbers)
        return mlp_loss(q, xi, yi, k1, k2, scale)

    def manual(q, x, y, k1, k2):
        h1 = torch.tanh(x @ q[0] + q[1])
        a1 = torch.where(k1, h1 * scale, 0.0)
        h2 = torch.tanh(a1 @ q[2] + q[3])
        a2 = torch.where(k2, h2 * scale, 0.0)
        d3 = torch.softmax(a2 @ q[4] + q[5], -1) - F.one_hot(y, 10).float()
        d2 = torch.where(k2, (d3 @ q[4].T) * scale, 0.0) * (1 - h2 * h2)
        d1 = torch.where(k1, (d2 @ q[2].T) * scale, 0.0) * (1 - h1 * h1)
        return outer_rows(x, d1), d1, outer_rows(a1, d2), d2, outer_rows(a2, d3), d3

    return mapped_variants(grad(loss), (None, 0, 0, 0, 0), (p, x, y, keep1, keep2),
                           manual=manual)


@workload
def dropout_draws(inputs, params):
    x, keep1, keep2 = put(inputs, "x", "keep1", "keep2")
    scale = 1.0 / (1.0 - params["rate"])
    note = "applies lanes' dumped masks: no random draws"

    def masks(xi, k1, k2):
        ones = torch.ones(k1.shape)
        return torch.where(k1, ones * scale, 0.0) + xi, torch.where(k2, ones * scale, 0.0) + xi

    def manual(x, k1, k2):
        return (torch.where(k1, scale, 0.0) + x[:, None], torch.where(k2, scale, 0.0) + x[:, None])

    variants = mapped_variants(masks, (0, 0, 0), (x, keep1, keep2), note=note)
    for v in ("vmap", "compile"):
        variants[v].ranked = False  # no draws: timed, but not the row's best peer
    del variants["loop"]  # lanes has no loop for this row
    variants["manual"] = Variant(lambda: manual(x, keep1, keep2), note=note, ranked=False)
    return variants


@workload
def perex_cnn(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2", "w3", "b3")
    x, y = put(inputs, "x", "y")
    s, pad = int(params["stride"]), int(params["padding"])

    def loss(q, xi, yi):  # xi (1, 28, 28): conv2d takes unbatched (C, H, W)
        h1 = torch.relu(F.conv2d(xi, q[0], q[1], stride=s, padding=pad))
        h2 = torch.relu(F.conv2d(h1, q[2], q[3], stride=s, padding=pad))
        return F.cross_entropy(h2.reshape(-1) @ q[4] + q[5], yi)

    variants = mapped_variants(grad(loss), (None, 0, 0), (p, x, y))
    variants["manual"] = Skip("no hand-written per-example conv backprop for torch")
    return variants


def lstm_step(q, h, c, xt):
    """One LSTM step; gates i, f, g, o side by side in the 4n columns."""
    a = xt @ q[0] + h @ q[1] + q[2]
    i, f, g, o = a.chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


@workload
def lstm_perex(inputs, params):
    p = put(inputs, "wx", "wh", "b")
    (x,) = put(inputs, "x")

    def loss(q, xs):
        h = c = torch.zeros(q[1].shape[0])
        for t in range(xs.shape[0]):
            h, c = lstm_step(q, h, c, xs[t])
        return l2_loss(c)

    variants = mapped_variants(grad(loss), (None, 0), (p, x))
    variants["manual"] = Skip("no hand-written batched BPTT for torch")
    return variants


# ---- Jacobians and Hessians ----------------------------------------------------------------------

@workload
def jacobian_square(inputs, params):
    (x,) = put(inputs, "x")
    return rows_variants(torch.square, x,
                         manual=lambda x: torch.eye(x.shape[0]) * (2 * x)[:, None])


@workload
def jacobian_mlp(inputs, params):
    w1, b1, w2, b2, x = put(inputs, "w1", "b1", "w2", "b2", "x")

    def f(v):
        return w2 @ torch.tanh(w1 @ v + b1) + b2

    def manual(x):
        h = torch.tanh(w1 @ x + b1)
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
            v = torch.relu(v @ w + b)
        return v

    def manual(xs):  # forward-mode chain rule on the whole batch, as bench/workloads/jacobians.h
        h, a = xs, None
        for k, (w, b) in enumerate(zip(ws, bs)):
            z = h @ w + b
            a = (w if k == 0 else a @ w) * (z > 0).float()[:, None, :]
            h = torch.relu(z)
        return a.transpose(1, 2)

    return mapped_variants(jacrev(mlp), (0,), (xs,), manual=manual)


@workload
def hessian(inputs, params):
    w, x = put(inputs, "w", "x")

    def f(v):
        return torch.sum(torch.tanh(w @ v))

    hess = hessian_of(f)  # jacfwd(jacrev(f)): the batching is inside the transform
    compiled = torch.compile(hess)
    eye = torch.eye(x.shape[0])

    def loop():
        _, pullback = vjp(grad(f), x)
        return torch.stack([pullback(eye[i])[0] for i in range(eye.shape[0])])

    def manual():
        t = torch.tanh(w @ x)
        return (w.T * (-2 * t * (1 - t * t))[None, :]) @ w

    return {"vmap": lambda: hess(x), "compile": lambda: compiled(x), "loop": loop,
            "manual": manual}


# ---- control flow --------------------------------------------------------------------------------

def _piecewise(inputs, params):
    w = put(inputs, "w1", "w2", "w3", "w4")
    (x,) = put(inputs, "x")
    threshold = params["threshold"]

    def mlp4(w1, w2, w3, w4, v):
        for wk in (w1, w2, w3, w4):
            v = torch.tanh(wk @ v)
        return v

    def half(w1, w2, w3, w4, v):
        return v * 0.5

    def f(ws, v):
        return torch.cond(v[0] > threshold, mlp4, half, (*ws, v))

    wt = tuple(wk.T.contiguous() for wk in w)

    def manual():  # gather the examples that take mlp4, run them as one batch, scatter back
        taken = torch.nonzero(x[:, 0] > threshold).squeeze(1)
        h = x[taken]
        for wk in wt:
            h = torch.tanh(h @ wk)
        out = x * 0.5
        out[taken] = h
        return out

    variants = mapped_variants(f, (None, 0), (w, x), note="torch.cond under vmap")
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

    def one(ai):
        x = ai + 1.0
        while bool(torch.abs(x * x - ai) > ai * rtol):
            x = (x + ai / x) * 0.5
        return x

    def manual():  # masked loop over the whole batch until every example has converged
        x = a + 1.0
        active = torch.abs(x * x - a) > a * rtol
        while bool(active.any()):
            x = torch.where(active, (x + a / x) * 0.5, x)
            active = torch.abs(x * x - a) > a * rtol
        return x

    return {"vmap": Skip(NO_WHILE_VMAP), "compile": Skip(NO_WHILE_VMAP),
            "loop": Variant(lambda: torch.stack([one(a[i]) for i in range(a.shape[0])]),
                            once=True),
            "manual": manual}


@workload
def mandelbrot(inputs, params):
    cr, ci = put(inputs, "cr", "ci")
    max_iter = int(params["max_iter"])

    def one(r, i):
        zr = zi = torch.zeros((), dtype=torch.float32)
        n = 0
        while bool(zr * zr + zi * zi <= 4.0) and n < max_iter:
            zr, zi, n = zr * zr - zi * zi + r, zr * zi * 2.0 + i, n + 1
        return torch.tensor(n, dtype=torch.int32)

    def manual():  # masked loop over the whole batch
        zr, zi = torch.zeros_like(cr), torch.zeros_like(ci)
        n = torch.zeros(cr.shape, dtype=torch.int32)
        active = (zr * zr + zi * zi <= 4.0) & (n < max_iter)
        while bool(active.any()):
            zr, zi = (torch.where(active, zr * zr - zi * zi + cr, zr),
                      torch.where(active, zr * zi * 2.0 + ci, zi))
            n = torch.where(active, n + 1, n)
            active = (zr * zr + zi * zi <= 4.0) & (n < max_iter)
        return n

    return {"vmap": Skip(NO_WHILE_VMAP), "compile": Skip(NO_WHILE_VMAP),
            "loop": Variant(lambda: torch.stack([one(cr[k], ci[k]) for k in range(cr.shape[0])]),
                            once=True),
            "manual": manual}


@workload
def power_iter(inputs, params):
    a, v0 = put(inputs, "a", "v0")
    tol, max_steps = params["tol"], int(params["max_steps"])

    def one(m, v):
        av, k = m @ v, 0
        while k < max_steps:
            r = av - torch.dot(v, av) * v
            if not bool(torch.sqrt(torch.sum(r * r)) > tol):
                break
            v = av / torch.sqrt(torch.sum(av * av))
            av, k = m @ v, k + 1
        return torch.dot(v, av), v

    def manual():  # masked loop: every example steps until all have converged
        v = v0
        av = torch.einsum("bij,bj->bi", a, v)
        for _ in range(max_steps):
            lam = torch.sum(v * av, 1)
            r = av - lam[:, None] * v
            running = torch.sqrt(torch.sum(r * r, 1)) > tol
            if not bool(running.any()):
                break
            v = torch.where(running[:, None], av / torch.sqrt(torch.sum(av * av, 1))[:, None], v)
            av = torch.einsum("bij,bj->bi", a, v)
        return torch.sum(v * av, 1), v

    return {"vmap": Skip(NO_WHILE_VMAP), "compile": Skip(NO_WHILE_VMAP),
            "loop": Variant(lambda: stack_leaves([one(a[i], v0[i]) for i in range(a.shape[0])])),
            "manual": manual}


@workload
def rnn_scan(inputs, params):
    p = put(inputs, "wx", "wh", "b")
    (x,) = put(inputs, "x")
    n = p[1].shape[0]

    def unrolled_loss(q, xs):
        h = c = torch.zeros(n)
        for t in range(xs.shape[0]):
            h, c = lstm_step(q, h, c, xs[t])
        return l2_loss(h)

    variants = mapped_variants(grad(unrolled_loss), (None, 0), (p, x),
                               note="Python for loop unrolled (scan has no torch.func.grad rule)")
    variants["manual"] = Skip("no hand-written batched BPTT for torch")
    return variants


@workload
def ode_rk4(inputs, params):
    p = put(inputs, "w1", "b1", "w2", "b2")
    y0, target = put(inputs, "y0", "target")
    dt, steps = params["dt"], int(params["steps"])

    def loss(q, y, t):
        def field(v):
            return torch.tanh(q[2] @ torch.tanh(q[0] @ v + q[1]) + q[3])

        for _ in range(steps):  # torch has no fori_loop: the 100 steps are unrolled
            k1 = field(y)
            k2 = field(y + k1 * (dt / 2))
            k3 = field(y + k2 * (dt / 2))
            k4 = field(y + k3 * dt)
            y = y + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (dt / 6)
        return l2_loss(y - t)

    variants = mapped_variants(grad(loss), (None, 0, 0), (p, y0, target),
                               note="Python for loop unrolled (torch has no fori_loop)")
    variants["loop"] = Variant(variants["loop"], once=True)  # 128 x 100 eager steps: ~20 s
    # Measured once: 8 minutes to compile on the 2-core machine, then 0.7x eager vmap's time.
    variants["compile"] = Skip("compiling the 100 unrolled steps takes ~8 min")
    variants["manual"] = Skip("the tiled-weights trick is what vmap does; not repeated for torch")
    return variants


# ---- ragged batches ------------------------------------------------------------------------------

RAGGED_VMAP = "no ragged batches in torch.func.vmap (manual below: padded, masked)"
Cells = dict[str, Union[Callable[[], object], Variant, Skip]]


def ragged_variants(f: Callable, masked: Callable, shared: tuple, packed: np.ndarray,
                    lengths: np.ndarray, mapped: torch.Tensor) -> Cells:
    """The cells of a ragged row (bench/workloads/ragged.h): the loop, f(shared, example,
    mapped[i]) per example at its own length, eager, run once (as lanes' loop); the manual
    variant, torch.func.vmap of masked(shared, padded example, its length, mapped[i]) over the
    batch padded by hand once, outside the timed function, eager; vmap and compile skipped."""
    xs = [torch.from_numpy(x) for x in ragged_examples(packed, lengths)]
    batched = vmap(masked, in_dims=(None, 0, 0, 0))
    padded, lens = torch.from_numpy(ragged_padded(packed, lengths)), torch.from_numpy(lengths)

    def loop():
        return stack_leaves([f(shared, x, mapped[i]) for i, x in enumerate(xs)])

    return {"vmap": Skip(RAGGED_VMAP), "compile": Skip(RAGGED_VMAP),
            "loop": Variant(loop, once=True),
            "manual": lambda: batched(shared, padded, lens, mapped)}


def live_mask(steps: int, length: torch.Tensor) -> torch.Tensor:
    """An example's valid positions of a padded axis of extent `steps`: (steps,) bool."""
    return torch.arange(steps) < length


def lstm_logits(q: tuple, xs: torch.Tensor, live: Optional[torch.Tensor] = None) -> torch.Tensor:
    """An LSTM over xs (L, d) from zero state, q = (wx, wh, b, wo, bo), its steps a Python for
    loop; the logits of its final hidden state. With `live` (L,) bool the carry freezes on the
    steps where it is false."""
    h = c = torch.zeros(q[1].shape[0])
    for t in range(xs.shape[0]):
        nh, nc = lstm_step(q, h, c, xs[t])
        if live is None:
            h, c = nh, nc
        else:
            h, c = torch.where(live[t], nh, h), torch.where(live[t], nc, c)
    return h @ q[3] + q[4]


@workload
def ragged_lstm(inputs: dict[str, np.ndarray], params: dict[str, float]) -> Cells:
    p = put(inputs, "wx", "wh", "b", "wo", "bo")
    (y,) = put(inputs, "y")

    def loss(q, xs, label):
        return F.cross_entropy(lstm_logits(q, xs), label)

    def masked_loss(q, xs, length, label):
        return F.cross_entropy(lstm_logits(q, xs, live_mask(xs.shape[0], length)), label)

    return ragged_variants(grad(loss), grad(masked_loss), p, inputs["x"], inputs["lengths"], y)


def attention_pool(q: tuple, x: torch.Tensor,
                   live: Optional[torch.Tensor] = None) -> torch.Tensor:
    """One self-attention layer (one head) over x (L, d), q = (wq, wk, wv), and the mean of its
    outputs over the positions; with `live` (L,) the padded keys and rows are masked."""
    scale = 1 / math.sqrt(q[0].shape[0])
    queries, keys, values = x @ q[0], x @ q[1], x @ q[2]
    scores = (queries @ keys.T) * scale
    if live is not None:
        scores = torch.where(live, scores, -1e30)
    out = torch.softmax(scores, -1) @ values
    if live is None:
        return torch.mean(out, 0)
    rows = live.float()[:, None]
    return torch.sum(out * rows, 0) / torch.sum(rows)


@workload
def ragged_attention(inputs: dict[str, np.ndarray], params: dict[str, float]) -> Cells:
    p = put(inputs, "wq", "wk", "wv")
    unused = torch.zeros(inputs["lengths"].shape[0])  # as lanes' per-example input

    def f(q, x, _):
        return attention_pool(q, x)

    def masked(q, x, length, _):
        return attention_pool(q, x, live_mask(x.shape[0], length))

    variants = ragged_variants(f, masked, p, inputs["x"], inputs["lengths"], unused)
    # torch's own ragged batches: a nested tensor of the jagged layout, made once outside the
    # timed function (as the padding of manual). Two jagged tensors have no matmul (q @ k.T:
    # "not supported between inputs of shapes (B, j1, 64) and (B, 64, j1)"), so the attention
    # is F.scaled_dot_product_attention (one head; its default scale is 1 / sqrt(64)).
    lengths = torch.from_numpy(inputs["lengths"])
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lengths, 0)])
    nested = torch.nested.nested_tensor_from_jagged(torch.from_numpy(inputs["x"]), offsets)

    def nested_attention():
        heads = [(nested @ w).unsqueeze(2).transpose(1, 2) for w in p]  # (B, 1, j, d)
        out = F.scaled_dot_product_attention(*heads)
        return out.transpose(1, 2).squeeze(2).mean(1)

    variants["nested"] = Variant(nested_attention, note="torch.nested (jagged layout) and "
                                 "F.scaled_dot_product_attention, eager")
    return variants


@workload
def ragged_attention_uniform(inputs: dict[str, np.ndarray], params: dict[str, float]) -> Cells:
    """ragged_attention with every sequence of one length (64)."""
    return ragged_attention(inputs, params)


def to_numpy(out):
    leaves = [out] if isinstance(out, torch.Tensor) else list(out)
    return [leaf.detach().numpy() for leaf in leaves]


def main():
    versions = {"torch": torch.__version__, "numpy": np.__version__}
    with torch.no_grad():  # torch.func transforms differentiate inside; nothing else needs a tape
        run_all("torch", versions, lambda out: out, to_numpy)


if __name__ == "__main__":
    main()
