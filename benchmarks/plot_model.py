#!/usr/bin/env python3
"""plot_model.py — the breakdown plot of bench-model's CSV, as Figure 5 of
Choi et al. (GPGPU-7 2014): per schedule and device, measured and predicted
time stacked by the paper's phases (Up, U, V, W, X, Down, transfers,
launch overhead and the hybrid's host sum)."""
import csv
import sys
from collections import defaultdict

USAGE = """usage: plot_model.py CSV [N] [DIST] [TOL] [OUT.png]
CSV is bench-model --csv's output; N (default the largest), DIST (uniform or
ellipsoid, default uniform) and TOL (default the first) pick one case.
Writes OUT.png (default breakdown_<dist>_<N>.png). Needs matplotlib;
without it, prints the table it would plot and exits 0."""

# the paper's phases from our operators
GROUPS = [("Up", ("p2m", "m2m")), ("U", ("p2p",)), ("V", ("m2l",)), ("W", ("m2p",)),
          ("X", ("p2l",)), ("Down", ("l2l", "l2p")), ("transfers", ("upload", "download")),
          ("overhead", ("overhead", "combine"))]
COLORS = ["tab:blue", "tab:red", "tab:green", "tab:purple", "tab:orange", "tab:cyan", "tab:gray",
          "tab:brown"]


def breakdown(rows, n, dist, tol):
    """{(schedule, device): {"measured": [per group], "predicted": [...]}} for one case."""
    out = defaultdict(lambda: {"measured": [0.0] * len(GROUPS), "predicted": [0.0] * len(GROUPS)})
    for r in rows:
        if int(r["n"]) != n or r["dist"] != dist or float(r["tol"]) != tol or r["device"] == "all":
            continue
        for g, (_, phases) in enumerate(GROUPS):
            if r["phase"] in phases:
                key = (r["schedule"], r["device"])
                out[key]["measured"][g] += float(r["measured_s"])
                out[key]["predicted"][g] += float(r["predicted_s"])
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(USAGE)
        return 0 if len(argv) >= 2 else 2
    with open(argv[1], newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("dist")]
    if not rows:
        print("plot_model.py: no rows in", argv[1])
        return 1
    n = int(argv[2]) if len(argv) > 2 else max(int(r["n"]) for r in rows)
    dist = argv[3] if len(argv) > 3 else "uniform"
    tol = float(argv[4]) if len(argv) > 4 else float(rows[0]["tol"])
    out_png = argv[5] if len(argv) > 5 else "breakdown_%s_%d.png" % (dist, n)
    data = breakdown(rows, n, dist, tol)
    keys = sorted(data)
    for k in keys:
        print("%-10s %s  measured %s  predicted %s" % (k[0], k[1],
              " ".join("%s=%.4f" % (GROUPS[g][0], v) for g, v in enumerate(data[k]["measured"])),
              " ".join("%.4f" % v for v in data[k]["predicted"])))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_model.py: matplotlib is not installed; no plot written")
        return 0
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(keys)), 4.5))
    labels, x = [], 0
    for k in keys:
        for kind, hatch in (("measured", ""), ("predicted", "//")):
            bottom = 0.0
            for g, v in enumerate(data[k][kind]):
                ax.bar(x, v, bottom=bottom, color=COLORS[g], hatch=hatch, edgecolor="black", linewidth=0.3,
                       label=GROUPS[g][0] if x == 0 else None)
                bottom += v
            labels.append("%s\n%s %s" % (k[0], k[1], "meas" if kind == "measured" else "pred"))
            x += 1
        x += 0.5
    pos = []
    x = 0
    for _ in keys:
        pos += [x, x + 1]
        x += 2.5
    ax.set_xticks(pos)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("seconds")
    ax.set_title("FMM phases per schedule and device, %s N = %d, tol %g (a: GPU, b: CPU)" % (dist, n, tol))
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    print("wrote", out_png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
