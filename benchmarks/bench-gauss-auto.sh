#!/bin/sh
# bench-gauss-auto.sh — the Gaussian's methods over the grid: d = 1,
# 2, 3, 6, sigma 0.01 .. 1, N 1e4 .. 1e7, double at 1e-6 and single at 1e-4;
# one table per (N, precision) from bench-gauss-auto (run where
# benchmarks/bench-gauss-auto is, e.g. after sourcing gpu-env.sh). Extra
# arguments go to every run (--repeat, --max-seconds, --all-bbfmm).
BIN=${BENCH_GAUSS_AUTO:-$(dirname "$0")/bench-gauss-auto}
NS=${NS:-"10000 100000 1000000 10000000"}
for n in $NS; do
  for p in "double 1e-6" "single 1e-4"; do
    prec=${p% *} tol=${p#* }
    "$BIN" --n "$n" --dim ${DIMS:-1,2,3,6} --sigma 0.01,0.05,0.2,1 --precision "$prec" --tol "$tol" --max-seconds 1 "$@"
  done
done
