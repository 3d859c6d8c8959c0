#!/usr/bin/env python3
# kde.py — a Gaussian kernel density estimate of 2D samples on a grid, by the fast Gauss transform.
"""Draws N samples from a mixture of three Gaussians in the plane and estimates
their density on a G x G grid:

    f(x) = 1 / (N 2 pi h^2) * sum_j exp(-|x - y_j|^2 / (2 h^2))

with Scott's bandwidth h. fmmcl's method "auto" takes the direct sum for small
problems and the fast Gauss transform above ~7e7 pairs (here N G^2). Checks K
grid points against NumPy and plots the estimate when matplotlib is present.

    python kde.py [--n 20000] [--grid 100] [--method auto|fgt|direct]
"""
import argparse
import time

import numpy as np

import fmmcl


def samples(n, rng):
    centres = np.array([[0.3, 0.3], [0.7, 0.6], [0.4, 0.8]])
    widths = np.array([0.08, 0.05, 0.1])
    k = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    return centres[k] + widths[k, None] * rng.normal(size=(n, 2))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--grid", type=int, default=100)
    ap.add_argument("--method", default="auto")
    ap.add_argument("--tol", type=float, default=1e-6,
                    help="FGT: bound on |error| per unit of sum |q| (default 1e-6)")
    ap.add_argument("--check", type=int, default=200)
    ap.add_argument("--device", default=None)
    ap.add_argument("--plot", default="kde.png", help="PNG written when matplotlib is present")
    a = ap.parse_args()

    rng = np.random.default_rng(3)
    y = samples(a.n, rng)
    h = np.std(y, axis=0).mean() * a.n ** (-1.0 / 6.0)        # Scott's rule in 2D
    g = np.linspace(0, 1, a.grid)
    gx, gy = np.meshgrid(g, g)
    x = np.column_stack([gx.ravel(), gy.ravel()])

    ctx = fmmcl.Context(a.device)
    t0 = time.perf_counter()
    with fmmcl.Plan(ctx, y, x, kernel="gaussian", sigma=h, method=a.method, tol=a.tol) as plan:
        s, _ = plan.execute(np.ones(a.n))
        counts = plan.counts()
    wall = time.perf_counter() - t0
    density = s / (a.n * 2 * np.pi * h * h)
    print(f"{a.n} samples, {len(x)} grid points, h = {h:.4f}, method {a.method}: {wall:.2f} s "
          f"on {ctx.device.name} ({counts['p2p']:.3g} direct pairs of {a.n * len(x):.3g})")

    idx = rng.choice(len(x), size=min(a.check, len(x)), replace=False)
    d2 = np.sum((x[idx, None, :] - y[None, :, :]) ** 2, axis=2)
    exact = np.exp(-d2 / (2 * h * h)).sum(1) / (a.n * 2 * np.pi * h * h)
    print(f"max |error| / max density over {len(idx)} grid points: "
          f"{np.max(np.abs(density[idx] - exact)) / density.max():.3e}")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found: no plot")
        return
    fig, ax = plt.subplots(figsize=(5, 4.5))
    cs = ax.contourf(gx, gy, density.reshape(gx.shape), levels=20, cmap="viridis")
    ax.plot(y[:2000, 0], y[:2000, 1], ",", color="w", alpha=0.5)
    fig.colorbar(cs, ax=ax, label="density")
    ax.set_title(f"Gaussian KDE, N = {a.n}, h = {h:.3f}")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    fig.tight_layout()
    fig.savefig(a.plot, dpi=90)
    print(f"wrote {a.plot}")


if __name__ == "__main__":
    main()
