#!/usr/bin/env python3
# quickstart.py — one FMM sum of 100,000 random charges, its time and its error against the direct sum.
"""Evaluates the 3D Laplace potential and field of N random charges in the unit
cube by the FMM and compares K targets with the library's double-precision
direct sum on the host.

    python quickstart.py [--n 100000] [--tol 1e-6] [--device cpu]
"""
import argparse
import time

import numpy as np

import fmmcl


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000, help="number of charges (default 100000)")
    ap.add_argument("--tol", type=float, default=1e-6, help="requested relative error")
    ap.add_argument("--method", default="fmm", help="fmm (default), treecode, bbfmm, direct, auto")
    ap.add_argument("--check", type=int, default=1000, help="targets compared with the direct sum")
    ap.add_argument("--device", default=None, help="gpu, cpu, P:D or a name (default: FMMCL_DEVICE)")
    a = ap.parse_args()

    rng = np.random.default_rng(1)
    x = rng.random((a.n, 3))
    q = rng.random(a.n) - 0.5
    ctx = fmmcl.Context(a.device)
    print(f"device: {ctx.device.name} ({ctx.device.type})")

    t0 = time.perf_counter()
    with fmmcl.Plan(ctx, x, method=a.method, tol=a.tol) as plan:
        t1 = time.perf_counter()
        phi, grad = plan.execute(q)
        t2 = time.perf_counter()
    print(f"{a.method} of {a.n} points: plan {t1 - t0:.2f} s, execute {t2 - t1:.2f} s")
    print(f"potential[:3] = {phi[:3]}")
    print(f"gradient[0]   = {grad[0]}")

    idx = rng.choice(a.n, size=min(a.check, a.n), replace=False)
    exact = fmmcl.reference(x, q, targets=x[idx])
    print(f"relative L2 error over {len(idx)} targets: potential "
          f"{fmmcl.relative_error(phi[idx], exact.potential):.3e}, gradient "
          f"{fmmcl.relative_error(grad[idx], exact.gradient):.3e} (tol {a.tol:g})")


if __name__ == "__main__":
    main()
