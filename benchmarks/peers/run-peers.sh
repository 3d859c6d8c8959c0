#!/bin/bash
# run-peers.sh OUTDIR — times the peer codes on the GPU machine, from the
# repository root, with the binaries that build-fmm3d.sh and the Ryoanji build
# (benchmarks/peers/README.md) put into .dev/peers.
#
#   FMM3D lfmm3d (Laplace, charges, potential + gradient, targets = sources),
#     OMP_NUM_THREADS=$THREADS, N = 1e5, 1e6 (and 1e7 when the 1e6 run at that
#     eps predicts under ~60 s), eps = 1e-4 and 1e-7; errors against a direct
#     sum at a few hundred targets; results at N = 1e5 written for comparison
#   Ryoanji (ExaFMM's GPU Barnes-Hut treecode, float, theta 0.6, Cartesian
#     quadrupoles) at N = 2^20-1 and 2^23-1 uniform points (its own generator):
#     three timed runs each, one with its direct-sum error check
#
# Environment (defaults in brackets):
#   THREADS [16]   SIZES ["1e5 1e6 1e7"]   EPSS ["1e-4 1e-7"]   REPEAT [3]
#   FMM3D_DRIVERS ["fmm3d_driver fmm3d_driver_plain": FAST_KER=ON and OFF builds;
#                  1e7 only with the first]
#   RYOANJI_POWERS ["20 23"]   RYOANJI_DIRECT [1: error check at every size]
#   DRY=1          CPU parts only, small: THREADS=2, SIZES=1e5, no Ryoanji
#   PEERS [.dev/peers]   PTS_DIR [${TMPDIR:-/tmp}/peers-pts: point files, not in OUTDIR]
# Writes OUTDIR/fmm3d.log, ryoanji-*.log, results.csv, machine.txt and
# OUTDIR/<driver>-n1e5-eps*.bin (rows pot gx gy gz, libfmmcl's 1/r units).
set -u
out=${1:?usage: run-peers.sh OUTDIR}
mkdir -p "$out"
peers=${PEERS:-.dev/peers}
if [ "${DRY:-0}" = 1 ]; then
  THREADS=${THREADS:-2}; SIZES=${SIZES:-1e5}; RYOANJI_POWERS=${RYOANJI_POWERS-}
fi
threads=${THREADS:-16}
sizes=${SIZES:-1e5 1e6 1e7}
epss=${EPSS:-1e-4 1e-7}
repeat=${REPEAT:-3}
# fmm3d_driver: FMM3D with FAST_KER=ON; fmm3d_driver_plain (if present): the
# plain Fortran near field, at 1e5 and 1e6 only
drivers=${FMM3D_DRIVERS:-fmm3d_driver fmm3d_driver_plain}
powers=${RYOANJI_POWERS-20 23}
pts=${PTS_DIR:-${TMPDIR:-/tmp}/peers-pts}
mkdir -p "$pts"
csv="$out/results.csv"
echo "code,kernel,n,eps_or_theta,threads,best_s,median_s,err_pot_rel_l2,err_grad_rel_l2,note" > "$csv"
t_start=$(date +%s)

{
  date -u; uname -a; nproc
  lscpu 2>/dev/null | grep -E "Model name|^CPU\(s\)|Thread|Socket|NUMA node\(s\)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>/dev/null
  ls -l "$peers"
} > "$out/machine.txt" 2>&1

# ---- FMM3D ---------------------------------------------------------------
export OMP_NUM_THREADS=$threads OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-cores}
declare -A t1e6
for n in $sizes; do
  f="$pts/uniform-$n.pts"
  [ -f "$f" ] || "$peers/make_points" "$n" "$f" --seed 1 || exit 1
  for drv in $drivers; do
    [ -x "$peers/$drv" ] || { echo "no $peers/$drv, skipped" | tee -a "$out/fmm3d.log"; continue; }
    for eps in $epss; do
      r=$repeat; check=500; extra=()
      case $n in
        1e5) extra=(--out "$out/$drv-n$n-eps$eps.bin"); check=1000 ;;
        1e7)
          # only the first driver; its 1e6 time x 11 (one run) must stay
          # under ~60 s, else skip
          prev=${t1e6[$drv$eps]:-}
          if [ "$drv" != "${drivers%% *}" ] || [ -z "$prev" ] || awk -v t="$prev" 'BEGIN{exit !(t*11 > 60)}'; then
            echo "skip $drv n=1e7 eps=$eps (1e6 took ${prev:-?} s)" | tee -a "$out/fmm3d.log"
            echo "$drv,laplace,1e7,$eps,$threads,,,,,skipped: 1e6 took ${prev:-?} s" >> "$csv"
            continue
          fi
          r=1; check=100 ;;
      esac
      line=$(timeout 300 "$peers/$drv" "$f" --kernel laplace --eps "$eps" --repeat "$r" \
               --check "$check" "${extra[@]}" 2>&1)
      echo "$drv: $line" | tee -a "$out/fmm3d.log"
      best=$(echo "$line" | sed -n 's/.*best_s=\([^ ]*\).*/\1/p')
      med=$(echo "$line" | sed -n 's/.*median_s=\([^ ]*\).*/\1/p')
      cpu=$(echo "$line" | sed -n 's/.*cpu_s=\([^ ]*\).*/\1/p')
      ep=$(echo "$line" | sed -n 's/.*pot_rel_l2=\([^ ]*\).*/\1/p')
      eg=$(echo "$line" | sed -n 's/.*grad_rel_l2=\([^ ]*\).*/\1/p')
      echo "$drv,laplace,$n,$eps,$threads,$best,$med,$ep,$eg,check=$check targets;repeat=$r;cpu_s=$cpu" >> "$csv"
      [ "$n" = 1e6 ] && t1e6[$drv$eps]=$best
    done
  done
done
# the 1e7 point file is 320 MB: do not leave it behind
rm -f "$pts/uniform-1e7.pts"

# ---- Ryoanji ---------------------------------------------------------------
# EAGER module loading: the kernels are loaded before the timed traversal.
export CUDA_MODULE_LOADING=EAGER
for p in $powers; do
  n=$(( (1 << p) - 1 ))
  log="$out/ryoanji-$p.log"
  : > "$log"
  times=()
  for i in 1 2 3; do
    direct=0
    [ "$i" = 3 ] && [ "${RYOANJI_DIRECT:-1}" = 1 ] && direct=1
    echo "=== ryoanji_demo $p $direct (run $i)" >> "$log"
    timeout 240 "$peers/ryoanji_demo" "$p" "$direct" >> "$log" 2>&1
    t=$(awk '/^--- Total runtime/ {f=1} f && /Total BH/ {print $4; f=0}' "$log" | tail -1)
    times+=("$t")
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -g)
  best=$(echo "$sorted" | head -1); med=$(echo "$sorted" | sed -n 2p)
  e1=$(awk -F': ' '/^1st percentile/ {print $2}' "$log" | tail -1)
  e50=$(awk -F': ' '/^50th percentile/ {print $2}' "$log" | tail -1)
  emax=$(awk -F': ' '/^max Error/ {print $2}' "$log" | tail -1)
  echo "ryoanji n=$n traversal best_s=$best median_s=$med acc_err_50pct=$e50 acc_err_99pct=$e1 acc_err_max=$emax"
  echo "ryoanji,gravity(float),$n,theta=0.6,gpu,$best,$med,,$e50,acc rel err: 50th pct $e50 / 99th pct $e1 / max $emax; traversal only" >> "$csv"
done
echo "run-peers.sh: $(( $(date +%s) - t_start )) s; results in $csv"
