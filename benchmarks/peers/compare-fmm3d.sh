#!/bin/sh
# compare-fmm3d.sh OUTDIR [N ...] — libfmmcl against FMM3D on shared inputs,
# every kernel FMM3D users come for: Laplace (charges; charges + dipoles
# with Hessians), Helmholtz k = 1 (charges; charges + dipoles), Stokes
# (Stokeslets with pressure; Stokeslets + stresslets). For each N (default
# 1e5 1e6) and case: make_points writes the points once for both codes,
# fmm3d_driver runs FMM3D (--eps $EPS, $THREADS threads, its tree build
# included, best of $FMM3D_REPEAT, default 2) and writes its results in libfmmcl's units, fmmcl runs
# `--method $METHOD (fmm) --precision double --tol $EPS` on --device $DEVICE (best of
# 3 executions; wall_s: the whole fmmcl process, reading the input, the
# OpenCL start, plan creation and writing included), and compare_rows gives
# the relative L2 difference of every output group over all N targets.
# Run on the GPU machine after `. benchmarks/gpu-env.sh BUILD` (fmmcl on
# PATH) with the peers built into .dev/peers (build-fmm3d.sh). CASES (e.g.
# "laplace,stokes") runs only the cases it names. Prints one line per case
# and writes OUTDIR/compare-fmm3d.csv.
set -eu
out=${1:?usage: compare-fmm3d.sh OUTDIR [N ...]}
shift
[ $# -gt 0 ] || set -- 1e5 1e6
peers=${PEERS:-.dev/peers}
EPS=${EPS:-1e-6}
THREADS=${THREADS:-16}
DEVICE=${DEVICE:-gpu}
METHOD=${METHOD:-fmm}
mkdir -p "$out"
csv="$out/compare-fmm3d.csv"
echo "case,n,eps,fmmcl_execute_s,fmmcl_wall_s,fmm3d_s,speedup,agreement" > "$csv"
# case | make_points layout | fmmcl options | fmm3d_driver options | columns | groups
cases='laplace|laplace|--kernel laplace3d|--kernel laplace|4|0,1
laplace-dipoles-hessian|laplace-dipoles|--kernel laplace3d --dipoles --hessian|--kernel laplace --dipoles --hessian|10|0,1,4
helmholtz|helmholtz|--kernel helmholtz3d --wavenumber 1|--kernel helmholtz --zk 1|8|0,2
helmholtz-dipoles|helmholtz-dipoles|--kernel helmholtz3d --wavenumber 1 --dipoles|--kernel helmholtz --zk 1 --dipoles|8|0,2
stokes|stokes|--kernel stokes3d --pressure|--kernel stokes|4|0,3
stokes-stresslets|stokes-stresslets|--kernel stokes3d --pressure --stresslets|--kernel stokes --stresslets|4|0,3'
for n in "$@"; do
  echo "$cases" | while IFS='|' read -r name layout fopts dopts cols groups; do
    case ",${CASES:-$name}," in *",$name,"*) ;; *) continue ;; esac
    pts="$out/$name-$n.pts" bin="$out/$name-$n.bin"
    "$peers/make_points" "$n" "$pts" --fmmcl "$bin" --fmmcl-columns "$layout"
    # shellcheck disable=SC2086
    d=$(OMP_NUM_THREADS=$THREADS "$peers/fmm3d_driver" "$pts" $dopts --eps "$EPS" --repeat "${FMM3D_REPEAT:-2}" --out "$out/$name-$n.fmm3d")
    t3=$(echo "$d" | sed -n 's/.*best_s=\([0-9.e+-]*\).*/\1/p')
    # shellcheck disable=SC2086
    w0=$(date +%s.%N)
    f=$(fmmcl "$bin" $fopts --method "$METHOD" --precision double --tol "$EPS" --device "$DEVICE" --repeat 3 \
          -o "$out/$name-$n.fmmcl.bin" --force 2>&1) || { echo "$name n=$n: fmmcl failed: $f"; continue; }
    tw=$(awk -v a="$w0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
    # fmmcl_plan_evaluate's runs print "METHOD[ (order P)]: T s (best of R ...", plain
    # Laplace "execute: T ms (best of R)"
    tx=$(echo "$f" | sed -n "s/.* $METHOD\( (order [0-9]*)\)\{0,1\}: \([0-9.e+-]*\) s (best.*/\2/p" | head -1)
    [ -n "$tx" ] || tx=$(echo "$f" | sed -n 's/^execute: \([0-9.e+-]*\) ms (best.*/\1/p' | awk '{ printf "%.6f", $1 / 1000 }')
    agree=$("$peers/compare_rows" "$out/$name-$n.fmmcl.bin" "$out/$name-$n.fmm3d" "$cols" "$groups")
    ratio=$(awk -v a="$t3" -v b="$tx" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "nan" }')
    echo "$name n=$n eps=$EPS fmmcl_execute_s=$tx fmmcl_wall_s=$tw fmm3d_s=$t3 speedup=$ratio | $agree"
    echo "$name,$n,$EPS,$tx,$tw,$t3,$ratio,\"$agree\"" >> "$csv"
    rm -f "$pts" "$bin" "$out/$name-$n.fmm3d" "$out/$name-$n.fmmcl.bin"
  done
done
