#!/bin/sh
# tests/mpi.sh — runs tests/mpi-check (the distributed plan against the direct sum and one device) under mpirun on 1 to 4 ranks.
# Skips (exit 77) with a message when configure found no MPI, unless FMMCL_REQUIRE_MPI=1 (CI) makes that a failure.
mpirun=${FMMCL_MPIRUN:-}
check=$(pwd)/tests/mpi-check
if [ -z "$mpirun" ] || [ ! -x "$check" ]; then
  echo "SKIP: MPI not found by configure (Debian: apt-get install libopenmpi-dev openmpi-bin, then ./configure)"
  [ "${FMMCL_REQUIRE_MPI:-0}" = 1 ] && exit 1
  exit 77
fi
# Open MPI refuses root and more ranks than cores unless told; the ranks
# share this machine's cores, so the plain-C reference runs on one thread each.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
OMP_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe OMP_NUM_THREADS
status=0
for n in 1 2 3 4; do
  echo "== mpirun -n $n"
  "$mpirun" -n "$n" "$check" || { echo "FAIL: $n ranks"; status=1; }
done
# fmmcl-mpi warns (rank 0, whatever --quiet says) when single precision
# cannot resolve the closest pair, here 1e-9 apart at 0.2, and not otherwise.
prog=$(pwd)/host/fmmcl-mpi
if [ -x "$prog" ]; then
  dir=$(mktemp -d)
  for with_pair in 1 0; do
    { echo "x,y,z,q"
      i=0
      while [ $i -lt 40 ]; do
        awk -v i=$i 'BEGIN { printf "%.17g,%.17g,%.17g,1\n", 0.5 + 0.01 * i, 0.3 + 0.007 * i, 0.1 * (i % 7) }'
        i=$((i + 1))
      done
      [ $with_pair = 1 ] && printf '0.2,0.2,0.2,1\n0.200000001,0.2,0.2,1\n'
    } > "$dir/close.csv"
    out=$("$mpirun" -n 2 "$prog" --quiet --precision single --input "$dir/close.csv" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then echo "FAIL: fmmcl-mpi exit $rc: $out"; status=1
    elif [ $with_pair = 1 ] && ! echo "$out" | grep -q "warning.*1e-09.*--precision double"; then
      echo "FAIL: fmmcl-mpi gave no resolution warning: $out"; status=1
    elif [ $with_pair = 0 ] && echo "$out" | grep -q warning; then
      echo "FAIL: fmmcl-mpi warned on a resolved set: $out"; status=1
    else echo "fmmcl-mpi resolution warning (pair: $with_pair): ok"
    fi
  done
  rm -rf "$dir"
fi
exit $status
