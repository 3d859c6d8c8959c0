#!/bin/sh
# kernels_ext.sh — times fmmcl_plan_evaluate's kernels through the fmmcl program
# (Stokes FMM and direct, Helmholtz and Laplace dipoles/Hessians direct) on the GPU,
# each checked at 100 targets against the host's double reference.
# Usage (after . benchmarks/gpu-env.sh BUILD_DIR, figures in benchmarks/README.md):
#   benchmarks/kernels_ext.sh [N_LARGE]
set -u
big=${1:-1000000}
run() { echo "\$ fmmcl $*"; fmmcl --device gpu "$@" 2>&1; echo; }
for n in 100000 "$big"; do
  run --kernel stokes3d --method fmm --precision double --tol 1e-6 --pressure --demo "$n" --check 100 --repeat 3
  run --kernel stokes3d --method fmm --precision single --tol 1e-3 --pressure --demo "$n" --check 100 --repeat 3
  run --kernel stokes3d --method direct --precision single --pressure --demo "$n" --check 100 --repeat 3
  run --kernel helmholtz3d --wavenumber 10,0 --dipoles --method direct --precision single --demo "$n" --check 100 --repeat 3
  run --kernel laplace3d --dipoles --hessian --method direct --precision single --demo "$n" --check 100 --repeat 3
done
run --kernel stokes3d --method direct --precision double --pressure --demo 100000 --check 100 --repeat 3
run --kernel helmholtz3d --wavenumber 10,0 --dipoles --method direct --precision double --demo 100000 --check 100 --repeat 3
run --kernel laplace3d --dipoles --hessian --method direct --precision double --demo 100000 --check 100 --repeat 3
