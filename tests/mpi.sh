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
exit $status
