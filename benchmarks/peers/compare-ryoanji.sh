#!/bin/bash
# compare-ryoanji.sh OUTDIR — libfmmcl's FMM against Ryoanji (ExaFMM's GPU
# treecode) on the same points, on the GPU machine, from the repository root.
#
# For each N: make_points writes N uniform points with positive masses
# (--positive: Ryoanji expands about centres of mass); ryoanji_driver times
# Ryoanji's traversal (best of REPEAT; tree and upward pass apart) and writes
# its potentials and accelerations; bench-fmm3d --points --resident times
# libfmmcl's FMM in float on device buffers (best and median of REPEAT) at
# each of TOLS; libfmmcl's direct sum in double on the GPU over all pairs is
# the reference both are measured against, over ALL targets: relative L2 of
# the potential and of the gradient (acceleration), and the median and 99th
# percentile of each target's relative acceleration error (Ryoanji's own
# measure). One table, OUTDIR/table.md, with the ratio of the times (its
# "best ms": Ryoanji's traversal, libfmmcl's whole execute).
#
# Environment (defaults in brackets):
#   SIZES ["1048576 8388608"]  TOLS ["1e-3 1e-4"]  REPEAT [5]
#   PEERS [.dev/peers]: ryoanji_driver, make_points, compare_rows
#   BENCH [bench-fmm3d on PATH]   STEP_TIMEOUT [580] seconds per program run
#   DEVICE [gpu]: the device both libfmmcl runs take (cpu: a dry run here)
#   FMM_ARGS [""]: more bench-fmm3d options for libfmmcl's FMM runs (e.g.
#     "--leaf-size 64"); the setting column gives the order and leaf size run
set -u
out=${1:?usage: compare-ryoanji.sh OUTDIR}
mkdir -p "$out"
peers=${PEERS:-.dev/peers}
bench=${BENCH:-bench-fmm3d}
sizes=${SIZES:-1048576 8388608}
tols=${TOLS:-1e-3 1e-4}
repeat=${REPEAT:-5}
limit=${STEP_TIMEOUT:-580}
device=${DEVICE:-gpu}
fmm_args=${FMM_ARGS:-}
table="$out/table.md"

# the value of key=... in a line of ryoanji_driver's output
ms() { awk -v s="${1:-0}" 'BEGIN { printf "%.2f", 1000 * s }'; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2" | tail -1; }
# column NAME of the last data row of a bench-fmm3d times.csv
csv_col() {
  awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { v = $c } END { print v }' "$2"
}
# compare_rows' groups: potential (col 0) and gradient (cols 1-3)
errors() { "$peers/compare_rows" "$1" "$2" 4 0,1; }
err_of() { echo "$1" | sed -n "s/.*cols $2[^ ]* rel_l2=\([^ ]*\) max=[^ ]* median_rel=\([^ ]*\) p99_rel=\([^ ]*\).*/\1 \2 \3/p"; }

{
  echo "| N | code | setting | best ms | median ms | pot rel. L2 | accel rel. L2 | accel median | accel 99th pct | Ryoanji / libfmmcl |"
  echo "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} > "$table"

for n in $sizes; do
  pts="$out/points-$n.pts"
  "$peers/make_points" "$n" "$pts" --positive --seed 1 || exit 1
  echo "== N = $n: Ryoanji" >&2
  timeout "$limit" "$peers/ryoanji_driver" "$pts" --repeat "$repeat" --out "$out/ryoanji-$n.bin" \
    > "$out/ryoanji-$n.log" 2>&1 || echo "ryoanji_driver failed (see $out/ryoanji-$n.log)" >&2
  cat "$out/ryoanji-$n.log" >&2
  echo "== N = $n: reference (libfmmcl direct, double, every pair)" >&2
  timeout "$limit" "$bench" --device "$device" --methods direct --precision double --points "$pts" \
    --direct-nmax "$n" --check 0 --repeat 1 --results "$out/ref-$n" --out "$out/bench-ref-$n" \
    > "$out/ref-$n.log" 2>&1 || echo "reference failed (see $out/ref-$n.log)" >&2
  ref="$out/ref-$n-direct-double.bin"
  ryo_best=$(field traverse_best_s "$out/ryoanji-$n.log")
  ryo_med=$(field traverse_median_s "$out/ryoanji-$n.log")
  if [ -f "$ref" ] && [ -f "$out/ryoanji-$n.bin" ]; then
    e=$(errors "$out/ryoanji-$n.bin" "$ref"); echo "ryoanji: $e" >> "$out/errors.txt"
    read -r rp _ _ <<< "$(err_of "$e" 0-0)"; read -r rg rmed rp99 <<< "$(err_of "$e" 1-3)"
  else rp=- rg=- rmed=- rp99=-; fi
  printf "| %s | Ryoanji | theta 0.6, quadrupoles, float | %s | %s | %s | %s | %s | %s | |\n" "$n" \
    "$(ms "$ryo_best")" "$(ms "$ryo_med")" "$rp" "$rg" "$rmed" "$rp99" >> "$table"
  for tol in $tols; do
    echo "== N = $n: libfmmcl FMM float tol $tol, device-resident" >&2
    dir="$out/bench-fmm-$n-$tol"
    timeout "$limit" "$bench" --device "$device" --methods fmm --precision single --tol "$tol" --points "$pts" \
      --check 0 --repeat "$repeat" --resident --results "$out/fmm-$n-$tol" --out "$dir" $fmm_args \
      > "$out/fmm-$n-$tol.log" 2>&1 || echo "bench-fmm3d failed (see $out/fmm-$n-$tol.log)" >&2
    grep -E "p=|phases|fmm " "$out/fmm-$n-$tol.log" >&2
    best=$(csv_col execute_min_s "$dir/times.csv"); med=$(csv_col execute_s "$dir/times.csv")
    res="$out/fmm-$n-$tol-fmm-single.bin"
    if [ -f "$ref" ] && [ -f "$res" ]; then
      e=$(errors "$res" "$ref"); echo "fmm tol $tol: $e" >> "$out/errors.txt"
      read -r fp _ _ <<< "$(err_of "$e" 0-0)"; read -r fg fmed fp99 <<< "$(err_of "$e" 1-3)"
    else fp=- fg=- fmed=- fp99=-; fi
    ratio=$(awk -v a="${ryo_best:-0}" -v b="${best:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
    setting="FMM, float, tol $tol (p $(csv_col order "$dir/times.csv"), leaf $(csv_col leaf_size "$dir/times.csv"))"
    printf "| %s | libfmmcl | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$n" "$setting" \
      "$(ms "$best")" "$(ms "$med")" "$fp" "$fg" "$fmed" "$fp99" "$ratio" >> "$table"
  done
  rm -f "$pts" "$out"/*-"$n"*.bin
done
cat "$table"
