#!/usr/bin/env python3
# tradeoff.py — error against time over tolerances for every method of fmmcl, plotted to a PNG.
"""For each kernel and each of its methods, sums N random charges at a series of
tolerances and records the execution time (the plan's, not its build: kernels
are compiled once and cached) and the relative L2 error of K targets against
the host's double-precision direct sum (NumPy's for the Gaussian).

    python tradeoff.py [--n 5000] [--tols 1e-2,1e-3,1e-4,1e-5] [--plot tradeoff.png]
    python tradeoff.py --n 100000 --tols 1e-2,1e-4,1e-6,1e-8   # larger, on a GPU

Panels: 3D Laplace (direct in single and double, treecode, fmm, bbfmm),
2D Laplace (direct, fmm), 3D Gaussian (direct, fgt, bbfmm). The first run on
a device compiles a kernel per expansion order; later runs use the cache.
"""
import argparse
import time

import numpy as np

import fmmcl

PANELS = {
    "laplace3d": [("direct", "single"), ("direct", "double"), ("treecode", "double"),
                  ("fmm", "double"), ("bbfmm", "double")],
    "laplace2d": [("direct", "double"), ("fmm", "double")],
    "gaussian": [("direct", "double"), ("fgt", "double"), ("bbfmm", "double")],
}
SIGMA = 0.1


def run(ctx, kernel, method, precision, tol, x, q, idx, exact, repeat):
    dim = x.shape[1]
    opts = dict(kernel=kernel, method=method, precision=precision, tol=tol, gradient=False)
    if kernel == "gaussian":
        opts["sigma"] = SIGMA
    with fmmcl.Plan(ctx, x, **opts) as plan:
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            phi, _ = plan.execute(q)
            best = min(best, time.perf_counter() - t0)
    return best, fmmcl.relative_error(phi[idx], exact)


def exact_sum(kernel, x, q, idx):
    if kernel == "gaussian":        # reference() sums it too; NumPy keeps this example plain
        d2 = np.sum((x[idx, None, :] - x[None, :, :]) ** 2, axis=2)
        return np.exp(-d2 / (2 * SIGMA ** 2)) @ q
    return fmmcl.reference(x, q, targets=x[idx], kernel=kernel, gradient=False).potential


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--tols", default="1e-2,1e-3,1e-4,1e-5")
    ap.add_argument("--check", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=1, help="executions timed, the fastest kept")
    ap.add_argument("--kernels", default=",".join(PANELS))
    ap.add_argument("--device", default=None)
    ap.add_argument("--plot", default="tradeoff.png", help="PNG written when matplotlib is present")
    a = ap.parse_args()

    tols = [float(t) for t in a.tols.split(",")]
    kernels = a.kernels.split(",")
    ctx = fmmcl.Context(a.device)
    rng = np.random.default_rng(4)
    print(f"N = {a.n} on {ctx.device.name}; time of one execution (best of {a.repeat})")
    results = {}
    for kernel in kernels:
        dim = 2 if kernel == "laplace2d" else 3
        x = rng.random((a.n, dim))
        q = rng.random(a.n) - 0.5
        idx = rng.choice(a.n, size=min(a.check, a.n), replace=False)
        exact = exact_sum(kernel, x, q, idx)
        for method, precision in PANELS[kernel]:
            # the direct sum has no tolerance: one point
            series = tols[:1] if method == "direct" else tols
            pts = []
            for tol in series:
                try:
                    t, err = run(ctx, kernel, method, precision, tol, x, q, idx, exact, a.repeat)
                except fmmcl.Error as e:   # e.g. a bbFMM order whose matrices the device cannot hold
                    print(f"{kernel:10s} {method:9s} {precision:6s} tol {tol:7.0e}  {e}")
                    continue
                pts.append((t, err, tol))
                print(f"{kernel:10s} {method:9s} {precision:6s} tol {tol:7.0e}  "
                      f"time {t * 1e3:9.2f} ms  error {err:.2e}")
            results[(kernel, method, precision)] = pts

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found: no plot")
        return
    fig, axes = plt.subplots(1, len(kernels), figsize=(4.2 * len(kernels), 3.8), squeeze=False)
    for ax, kernel in zip(axes[0], kernels):
        for method, precision in PANELS[kernel]:
            pts = results[(kernel, method, precision)]
            if not pts:
                continue
            t, e = [p[0] * 1e3 for p in pts], [max(p[1], 1e-17) for p in pts]
            label = f"{method} ({precision})" if method == "direct" else method
            ax.loglog(t, e, "o-" if len(pts) > 1 else "s", label=label)
        ax.set_title(f"{kernel}, N = {a.n}")
        ax.set_xlabel("execution time (ms)")
        ax.set_ylabel("relative L2 error (potential)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"fmmcl on {ctx.device.name}: tolerances {a.tols}", fontsize=9)
    fig.tight_layout()
    fig.savefig(a.plot, dpi=80)
    print(f"wrote {a.plot}")


if __name__ == "__main__":
    main()
