#!/usr/bin/env python3
"""plot_fmm3d.py — PNG plots of bench-fmm3d's CSV: time and error vs N, the
per-phase breakdown (Yokota & Barba Fig. 6) and GFLOP/s per kernel (Fig. 7)."""
import csv
import os
import sys
from collections import defaultdict

USAGE = """usage: plot_fmm3d.py [DIR]
Reads DIR/times.csv, phases.csv, gflops.csv (and crossover.csv) written by
benchmarks/bench-fmm3d --out DIR (default out-fmm3d) and writes into DIR:
  time_vs_n.png    execute (solid) and end-to-end (dashed) time per method
  error_vs_n.png   relative L2 error of potential and gradient
  phases_<method>_<precision>.png   stacked time per phase at each N
  gflops_<precision>.png            GFLOP/s per operator vs N
Needs matplotlib; without it, says so and exits 0."""

METHOD_STYLE = {"direct": "tab:gray", "treecode": "tab:blue", "fmm": "tab:red"}
# phases of execute in launch order; host phases first (as they run)
PHASE_ORDER = ["tree", "lists", "upload", "p2m", "m2m", "m2l", "p2l", "l2l", "l2p", "m2p", "p2p", "download"]


def read(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot_times(plt, rows, cross, out):
    precs = sorted({r["precision"] for r in rows})
    fig, axes = plt.subplots(1, len(precs), figsize=(6 * len(precs), 4.5), squeeze=False)
    for ax, prec in zip(axes[0], precs):
        for method, color in METHOD_STYLE.items():
            pts = sorted((int(r["n"]), float(r["execute_s"]), float(r["end_to_end_s"]))
                         for r in rows if r["method"] == method and r["precision"] == prec)
            if not pts:
                continue
            n = [p[0] for p in pts]
            ax.loglog(n, [p[1] for p in pts], "o-", color=color, label=method + " execute")
            if method != "direct":
                ax.loglog(n, [p[2] for p in pts], "s--", color=color, alpha=0.6,
                          label=method + " end to end")
        for c in cross:
            if c["precision"] == prec and c["measure"] == "execute" and c["crossover_n"]:
                ax.axvline(float(c["crossover_n"]), color=METHOD_STYLE.get(c["method"], "k"),
                           linestyle=":", alpha=0.7)
        ax.set_title(f"3D Laplace, {prec} precision")
        ax.set_xlabel("N")
        ax.set_ylabel("time [s]")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "time_vs_n.png"), dpi=120)
    plt.close(fig)


def plot_errors(plt, rows, out):
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for r_method, color in METHOD_STYLE.items():
        for prec, marker in (("single", "o"), ("double", "s")):
            pts = sorted((int(r["n"]), float(r["err_potential"]), float(r["err_gradient"]))
                         for r in rows if r["method"] == r_method and r["precision"] == prec
                         and r["err_potential"] not in ("", "nan"))
            if not pts:
                continue
            n = [p[0] for p in pts]
            ax.loglog(n, [p[1] for p in pts], marker + "-", color=color,
                      label=f"{r_method} {prec} potential")
            ax.loglog(n, [p[2] for p in pts], marker + ":", color=color, alpha=0.6,
                      label=f"{r_method} {prec} gradient")
    ax.set_xlabel("N")
    ax.set_ylabel("relative L2 error")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "error_vs_n.png"), dpi=120)
    plt.close(fig)


def plot_phases(plt, rows, out):
    groups = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        groups[(r["method"], r["precision"])][int(r["n"])][r["phase"]] = float(r["seconds"])
    for (method, prec), by_n in groups.items():
        ns = sorted(by_n)
        names = [p for p in PHASE_ORDER if any(p in by_n[n] for n in ns)]
        names += sorted({p for n in ns for p in by_n[n]} - set(names))
        fig, ax = plt.subplots(figsize=(7, 4.5))
        x = range(len(ns))
        bottom = [0.0] * len(ns)
        cmap = plt.get_cmap("tab20")
        for i, name in enumerate(names):
            v = [by_n[n].get(name, 0.0) for n in ns]
            ax.bar(x, v, bottom=bottom, color=cmap(i % 20), label=name)
            bottom = [b + y for b, y in zip(bottom, v)]
        ax.set_xticks(list(x))
        ax.set_xticklabels([f"{n:.0e}" for n in ns], rotation=45)
        ax.set_yscale("log" if max(bottom) / max(min(bottom), 1e-12) > 1e3 else "linear")
        ax.set_xlabel("N")
        ax.set_ylabel("time [s] (median per phase)")
        ax.set_title(f"{method}, {prec}: time per phase")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"phases_{method}_{prec}.png"), dpi=120)
        plt.close(fig)


def plot_gflops(plt, rows, out):
    for prec in sorted({r["precision"] for r in rows}):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        cmap = plt.get_cmap("tab10")
        keys = sorted({(r["method"], r["phase"]) for r in rows if r["precision"] == prec})
        for i, (method, phase) in enumerate(keys):
            pts = sorted((int(r["n"]), float(r["gflops"])) for r in rows
                         if r["precision"] == prec and r["method"] == method and r["phase"] == phase
                         and r["gflops"] not in ("", "nan"))
            if not pts:
                continue
            style = {"direct": "o:", "treecode": "s--", "fmm": "^-"}.get(method, "x-")
            ax.semilogx([p[0] for p in pts], [p[1] for p in pts], style, color=cmap(i % 10),
                        label=f"{method} {phase}")
        ax.set_xlabel("N")
        ax.set_ylabel("GFLOP/s (model flops / kernel time)")
        ax.set_title(f"GFLOP/s per operator, {prec} precision")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"gflops_{prec}.png"), dpi=120)
        plt.close(fig)


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(USAGE)
        return 0 if len(argv) == 2 and argv[1] in ("-h", "--help") else 2
    out = argv[1] if len(argv) == 2 else "out-fmm3d"
    times = read(os.path.join(out, "times.csv"))
    if not times:
        print(f"plot_fmm3d.py: no {out}/times.csv (run benchmarks/bench-fmm3d --out {out} first)",
              file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_fmm3d.py: matplotlib is not installed, so no plots were made "
              "(pip install matplotlib, or apt-get install python3-matplotlib); the CSV files "
              f"in {out} hold all the numbers.")
        return 0
    plot_times(plt, times, read(os.path.join(out, "crossover.csv")), out)
    plot_errors(plt, times, out)
    plot_phases(plt, read(os.path.join(out, "phases.csv")), out)
    plot_gflops(plt, read(os.path.join(out, "gflops.csv")), out)
    print(f"plot_fmm3d.py: wrote PNG plots into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
