#!/usr/bin/env python3
"""Train a two-layer MLP on two interleaved spirals, every matmul through VGPU.

The data set is generated here: 1000 points on two interleaved spirals (1.5
turns each, Gaussian noise), 2 classes. The network is 2 -> 64 (ReLU) -> 2
(softmax, cross-entropy), trained with plain mini-batch SGD (no momentum). Every
matrix product of the forward and the backward pass, of the accuracy check and of
the decision-region grid runs through ``vgpu.VGPUCache``: the hidden layer as one
fused kernel (``matmul_bias_relu``: the bias and the ReLU in the matmul's store),
the output layer through ``matmul`` and row-wise ``softmax``; the gradients'
element-wise work stays in numpy.

At the end it prints the training accuracy and the cache counters (one compile
per distinct matmul shape and one per fused kernel, every other call a cache hit) and writes a PNG with
the loss curve and the learned decision regions: with matplotlib when it is
installed, otherwise drawn with numpy and written by a small PNG encoder.

Usage: python examples/mlp.py [--epochs 200] [--out mlp.png] [--backend auto|gpu|cpu]
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
import zlib
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

import vgpu

# Defaults shared with examples/mlp.rs.
POINTS = 1000
TURNS = 1.5
NOISE = 0.03
HIDDEN = 64
BATCH = 100
LEARNING_RATE = 0.5
EPOCHS = 200


def make_spirals(n: int = POINTS, turns: float = TURNS, noise: float = NOISE,
                 seed: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals: ``n`` points (n/2 per class) in [-1, 1]^2.

    Class c's points lie at angle ``theta + c*pi`` and radius ``theta / (2*pi*turns)``
    for ``theta`` in [0, 2*pi*turns] (sqrt-distributed so the density along the arm is
    even), plus Gaussian noise of standard deviation ``noise``.
    Returns X (n, 2) float32 and the labels y (n,) int64.
    """
    rng = np.random.default_rng(seed)
    per = n // 2
    xs, ys = [], []
    for c in range(2):
        theta = np.sqrt(rng.uniform(0.0, 1.0, per)) * (2 * np.pi * turns)
        r = theta / (2 * np.pi * turns)
        pts = np.stack([r * np.cos(theta + c * np.pi), r * np.sin(theta + c * np.pi)], axis=1)
        xs.append(pts + rng.normal(0.0, noise, (per, 2)))
        ys.append(np.full(per, c, dtype=np.int64))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys)


@dataclass
class MLP:
    """A 2-layer perceptron: logits = relu(x W1 + b1) W2 + b2."""

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray

    @staticmethod
    def init(inputs: int, hidden: int, classes: int, seed: int = 1) -> "MLP":
        """He-initialised weights (normal, std sqrt(2/fan_in)), zero biases."""
        rng = np.random.default_rng(seed)
        return MLP(
            w1=(rng.standard_normal((inputs, hidden)) * np.sqrt(2.0 / inputs)).astype(np.float32),
            b1=np.zeros(hidden, np.float32),
            w2=(rng.standard_normal((hidden, classes)) * np.sqrt(1.0 / hidden)).astype(np.float32),
            b2=np.zeros(classes, np.float32),
        )

    def logits(self, cache: vgpu.VGPUCache, x: np.ndarray) -> np.ndarray:
        """The network's output for the rows of ``x``, both matmuls through ``cache``
        (the hidden layer's bias and ReLU fused into its matmul)."""
        h = cache.matmul_bias_relu(x, self.w1, self.b1)
        return cache.matmul(h, self.w2) + self.b2

    def predict(self, cache: vgpu.VGPUCache, x: np.ndarray) -> np.ndarray:
        """The predicted class of each row of ``x``."""
        return self.logits(cache, x).argmax(axis=1)


def sgd_step(cache: vgpu.VGPUCache, net: MLP, x: np.ndarray, y: np.ndarray, lr: float) -> float:
    """One plain SGD step on the batch (x, y); returns the batch's mean cross-entropy.

    Five matmuls, all through ``cache``: two forward (the first with its bias
    and ReLU fused, ``matmul_bias_relu``; the second followed by the cache's
    row-wise ``softmax``), three backward (dW2 = h^T d2, dh = d2 W2^T, dW1 = x^T dz).
    """
    b = x.shape[0]
    h = cache.matmul_bias_relu(x, net.w1, net.b1)
    p = cache.softmax(cache.matmul(h, net.w2) + net.b2)
    loss = float(-np.log(np.maximum(p[np.arange(b), y], 1e-12)).mean())
    d2 = p
    d2[np.arange(b), y] -= 1.0
    d2 /= b
    g_w2 = cache.matmul(h.T, d2)
    dh = cache.matmul(d2, net.w2.T)
    dz = dh * (h > 0.0)  # relu'(z1): h > 0 exactly where z1 > 0
    g_w1 = cache.matmul(x.T, dz)
    net.w2 -= lr * g_w2
    net.b2 -= lr * d2.sum(axis=0)
    net.w1 -= lr * g_w1
    net.b1 -= lr * dz.sum(axis=0)
    return loss


@dataclass
class Training:
    """What :func:`train` returns."""

    net: MLP
    losses: List[float] = field(default_factory=list)  # mean batch loss per epoch
    accuracy: float = 0.0  # on the whole training set, after the last epoch
    seconds: float = 0.0


def train(cache: vgpu.VGPUCache, x: np.ndarray, y: np.ndarray, epochs: int = EPOCHS,
          hidden: int = HIDDEN, batch: int = BATCH, lr: float = LEARNING_RATE,
          seed: int = 1) -> Training:
    """Trains a fresh MLP with plain mini-batch SGD (shuffled each epoch)."""
    if x.shape[0] % batch:
        raise ValueError(f"{x.shape[0]} points do not split into batches of {batch}")
    rng = np.random.default_rng(seed)
    net = MLP.init(x.shape[1], hidden, int(y.max()) + 1, seed)
    run = Training(net)
    start = time.perf_counter()
    for _ in range(epochs):
        order = rng.permutation(x.shape[0])
        losses = [sgd_step(cache, net, x[idx], y[idx], lr)
                  for idx in np.split(order, x.shape[0] // batch)]
        run.losses.append(float(np.mean(losses)))
    run.accuracy = float((net.predict(cache, x) == y).mean())
    run.seconds = time.perf_counter() - start
    return run


def decision_grid(cache: vgpu.VGPUCache, net: MLP, size: int = 150,
                  lim: float = 1.2) -> np.ndarray:
    """The predicted class on a size x size grid over [-lim, lim]^2 (row 0 at the top)."""
    ticks = np.linspace(-lim, lim, size, dtype=np.float32)
    gx, gy = np.meshgrid(ticks, ticks[::-1])
    pts = np.stack([gx.ravel(), gy.ravel()], axis=1)
    return net.predict(cache, pts).reshape(size, size)


# ---- the picture ----------------------------------------------------------------

def png_bytes(rgb: np.ndarray) -> bytes:
    """Encodes an (h, w, 3) uint8 image as PNG (8-bit RGB, no filtering, zlib)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[r].tobytes() for r in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b""))


CLASS_LIGHT = np.array([[198, 219, 239], [253, 208, 162]], np.uint8)
CLASS_DARK = np.array([[33, 113, 181], [217, 72, 1]], np.uint8)


def draw_numpy(losses: List[float], grid: np.ndarray, x: np.ndarray, y: np.ndarray,
               lim: float = 1.2) -> np.ndarray:
    """Left: the loss curve (log scale) in a frame; right: the decision regions
    with the training points. No text (that needs matplotlib)."""
    size = grid.shape[0]
    pad = 20
    img = np.full((size * 2 + 2 * pad, size * 4 + 3 * pad, 3), 255, np.uint8)
    # Loss panel: frame, then the polyline sampled densely.
    ph, pw = size * 2, size * 2
    top, left = pad, pad
    img[top, left:left + pw] = img[top + ph - 1, left:left + pw] = 0
    img[top:top + ph, left] = img[top:top + ph, left + pw - 1] = 0
    logl = np.log10(np.maximum(np.asarray(losses, np.float64), 1e-12))
    lo, hi = logl.min(), logl.max()
    span = hi - lo if hi > lo else 1.0
    n = len(logl)
    prev = None
    for col in range(pw - 4):
        s = col / (pw - 5) * (n - 1)
        i = min(int(s), n - 1)
        v = logl[i] if i + 1 >= n else logl[i] + (logl[i + 1] - logl[i]) * (s - i)
        row = top + 2 + int((hi - v) / span * (ph - 5))
        r0, r1 = (row, row) if prev is None else (min(prev, row), max(prev, row))
        img[r0 - 1:r1 + 2, left + 1 + col:left + 4 + col] = (200, 30, 30)
        prev = row
    # Decision panel: each grid cell 2x2 pixels, then the points.
    top, left = pad, 2 * pad + pw
    img[top:top + 2 * size, left:left + 2 * size] = np.repeat(
        np.repeat(CLASS_LIGHT[grid], 2, axis=0), 2, axis=1)
    for (px, py), c in zip(x, y):
        col = left + int((px + lim) / (2 * lim) * (2 * size - 1))
        row = top + int((lim - py) / (2 * lim) * (2 * size - 1))
        if 1 <= col < left + 2 * size - 1 and top + 1 <= row < top + 2 * size - 1:
            img[row - 1:row + 2, col - 1:col + 2] = CLASS_DARK[c]
    return img


def write_png(path: str, run: Training, grid: np.ndarray, x: np.ndarray, y: np.ndarray,
              lim: float = 1.2) -> str:
    """Writes the picture; returns which renderer drew it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        with open(path, "wb") as f:
            f.write(png_bytes(draw_numpy(run.losses, grid, x, y, lim)))
        return "numpy (matplotlib is not installed: no axis labels)"
    fig, (ax_loss, ax_regions) = plt.subplots(1, 2, figsize=(11, 5))
    ax_loss.semilogy(np.arange(1, len(run.losses) + 1), run.losses, color="tab:red")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("mean cross-entropy")
    ax_loss.set_title("training loss")
    ax_regions.imshow(CLASS_LIGHT[grid], extent=(-lim, lim, -lim, lim))
    ax_regions.scatter(x[:, 0], x[:, 1], c=CLASS_DARK[y] / 255.0, s=6)
    ax_regions.set_title(f"decision regions (training accuracy {run.accuracy:.1%})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return "matplotlib"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    ap.add_argument("--out", default="mlp.png", help="PNG to write (loss curve, decision regions)")
    ap.add_argument("--backend", default=None, help="auto, gpu or cpu (default: $VGPU_BACKEND or auto)")
    args = ap.parse_args(argv)

    cache = vgpu.VGPUCache(args.backend)
    print(repr(cache))
    x, y = make_spirals()
    run = train(cache, x, y, epochs=args.epochs)
    print(f"{args.epochs} epochs of SGD ({x.shape[0] // BATCH} batches of {BATCH}) "
          f"in {run.seconds:.2f} s: final loss {run.losses[-1]:.4f}, "
          f"training accuracy {run.accuracy:.1%}")
    grid = decision_grid(cache, run.net)
    s = cache.stats
    print(s)
    print(f"  bytes uploaded {s.bytes_uploaded}, downloaded {s.bytes_downloaded}, "
          f"compile time {s.compile_seconds:.3f} s")
    renderer = write_png(args.out, run, grid, x, y)
    print(f"wrote {args.out} ({renderer})")
    return 0 if run.accuracy >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
