#!/usr/bin/env python3
# nbody.py — a gravitational N-body Plummer sphere advanced by leapfrog steps, with its energy error plotted.
"""Kick-drift-kick leapfrog of N equal masses (G = 1, total mass 1) in a Plummer
sphere in virial equilibrium. The field comes from fmmcl: the gradient of
phi(x_i) = sum_j m_j / r_ij is the acceleration. Positions move each step, so
each step makes a new plan. Prints and plots the relative energy error.

    python nbody.py [--n 1000] [--steps 200] [--dt 1e-3] [--softening 0.01]
    python nbody.py --n 100000 --steps 20 --softening 0 --method fmm   # larger
The FMM and treecode have no softening: give --softening 0 with them.
"""
import argparse
import time

import numpy as np

import fmmcl


def plummer(n, rng):
    """Positions and velocities of a Plummer sphere (Aarseth, Henon & Wielen 1974)."""
    r = 1.0 / np.sqrt(rng.random(n) ** (-2.0 / 3.0) - 1.0)
    pos = r[:, None] * _unit_vectors(n, rng)
    # the speed by von Neumann rejection of g(s) = s^2 (1 - s^2)^3.5
    s = np.empty(n)
    todo = np.arange(n)
    while todo.size:
        x, y = rng.random(todo.size), 0.1 * rng.random(todo.size)
        ok = y < x * x * (1 - x * x) ** 3.5
        s[todo[ok]] = x[ok]
        todo = todo[~ok]
    v = s * np.sqrt(2.0) * (1.0 + r * r) ** -0.25
    vel = v[:, None] * _unit_vectors(n, rng)
    # to N-body units (E = -1/4): scale lengths by 3 pi / 16
    scale = 3 * np.pi / 16
    pos, vel = pos * scale, vel / np.sqrt(scale)
    return pos - pos.mean(0), vel - vel.mean(0)


def _unit_vectors(n, rng):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1)[:, None]


def field(ctx, pos, mass, opts):
    """phi_i = sum_j m_j / |x_i - x_j| and its gradient, the acceleration."""
    return fmmcl.evaluate(pos, mass, device=ctx, gradient=True, **opts)


def energy(vel, mass, phi):
    return 0.5 * np.sum(mass * np.sum(vel * vel, 1)) - 0.5 * np.sum(mass * phi)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--softening", type=float, default=0.01)
    ap.add_argument("--method", default="auto")
    ap.add_argument("--tol", type=float, default=None)
    ap.add_argument("--precision", default="double")
    ap.add_argument("--device", default=None)
    ap.add_argument("--plot", default="nbody_energy.png", help="PNG written when matplotlib is present")
    a = ap.parse_args()

    rng = np.random.default_rng(2)
    pos, vel = plummer(a.n, rng)
    mass = np.full(a.n, 1.0 / a.n)
    ctx = fmmcl.Context(a.device)
    opts = dict(method=a.method, tol=a.tol, precision=a.precision, softening=a.softening)
    print(f"{a.n} bodies, {a.steps} steps of {a.dt:g}, softening {a.softening:g}, "
          f"method {a.method}, on {ctx.device.name}")

    t0 = time.perf_counter()
    phi, acc = field(ctx, pos, mass, opts)
    e0 = energy(vel, mass, phi)
    times, errors = [0.0], [0.0]
    for step in range(1, a.steps + 1):
        vel += 0.5 * a.dt * acc
        pos += a.dt * vel
        phi, acc = field(ctx, pos, mass, opts)
        vel += 0.5 * a.dt * acc
        e = energy(vel, mass, phi)
        times.append(step * a.dt)
        errors.append((e - e0) / abs(e0))
        if step % max(1, a.steps // 10) == 0:
            print(f"t = {step * a.dt:.3f}  E = {e:.8f}  (E - E0)/|E0| = {errors[-1]:+.3e}")
    wall = time.perf_counter() - t0
    print(f"max |energy error| {np.max(np.abs(errors)):.3e}; {wall:.1f} s, "
          f"{wall / (a.steps + 1) * 1e3:.1f} ms per force evaluation")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found: no plot")
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(times, errors)
    ax.set_xlabel("time (N-body units)")
    ax.set_ylabel("(E - E0) / |E0|")
    ax.set_title(f"Plummer sphere, N = {a.n}, leapfrog dt = {a.dt:g}, {a.method}")
    fig.tight_layout()
    fig.savefig(a.plot, dpi=100)
    print(f"wrote {a.plot}")


if __name__ == "__main__":
    main()
