"""Differentially private SGD with per-example gradients, the way a jax user writes it.

Each example's gradient is clipped to norm C before averaging, so every example needs its own
gradient: ``vmap(grad(loss))`` computes all of them as a few batched ops, and ``jit`` compiles
the whole step once. Run: ./scripts/demo.sh (or PYTHONPATH=build/python python this_file).
"""

from __future__ import annotations

import time

import numpy as np

import lanes
import lanes.numpy as lnp
from lanes import random


def init(key, sizes: list[int]) -> list[dict]:
    params = []
    for k, (n_in, n_out) in zip(random.split(key, len(sizes) - 1), zip(sizes, sizes[1:])):
        params.append({"w": random.normal(k, (n_in, n_out)) / np.sqrt(n_in),
                       "b": lnp.zeros((n_out,))})
    return params


def predict(params: list[dict], x):
    for layer in params[:-1]:
        x = lnp.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss(params: list[dict], x, y):
    logits = predict(params, x)
    return lanes.nn.softmax_cross_entropy(logits, y)


def private_step(params, xs, ys, noise_key, clip=1.0, sigma=1.0, lr=0.1):
    grads = lanes.vmap(lanes.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)
    leaves, tree = lanes.tree_util.tree_flatten(grads)
    # Each example's whole-gradient norm, then scale it to at most `clip`.
    sq = sum(lnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1) for g in leaves)
    scale = lnp.minimum(1.0, clip / (lnp.sqrt(sq) + 1e-12))
    keys = random.split(noise_key, len(leaves))
    noisy = []
    for g, k in zip(leaves, keys):
        clipped = lnp.sum(g * scale.reshape((-1,) + (1,) * (g.ndim - 1)), axis=0)
        noise = random.normal(k, clipped.shape) * (sigma * clip)
        noisy.append((clipped + noise) / xs.shape[0])
    mean = lanes.tree_util.tree_unflatten(tree, noisy)
    return lanes.tree_util.tree_map(lambda p, g: p - lr * g, params, mean)


def main() -> None:
    rng = np.random.default_rng(0)
    batch, n_in, classes = 256, 64, 10
    xs = lanes.asarray(rng.normal(size=(batch, n_in)).astype(np.float32))
    labels = rng.integers(0, classes, size=batch)
    ys = lanes.asarray(np.eye(classes, dtype=np.float32)[labels])
    params = init(random.key(0), [n_in, 128, classes])
    step = lanes.jit(private_step)
    key = random.key(1)
    print(f"DP-SGD, {batch} per-example gradients per step:")
    for i in range(5):
        key, sub = random.split(key)
        start = time.perf_counter()
        params = step(params, xs, ys, sub)
        ms = (time.perf_counter() - start) * 1e3
        mean_loss = float(lnp.mean(lanes.vmap(loss, (None, 0, 0))(params, xs, ys)))
        print(f"  step {i}: loss {mean_loss:.4f}  ({ms:.1f} ms{', compiles' if i == 0 else ''})")


if __name__ == "__main__":
    main()
