# GPU check of the distributed plan on the H100: mpi-check (every case against the direct sum and one device) and fmmcl-mpi --check at 1e6; run from the checkout root with .dev/mpi18 carried.
. benchmarks/gpu-env.sh .dev/mpi18/after
export LD_LIBRARY_PATH=$PWD/.dev/mpi18/libs:$LD_LIBRARY_PATH
. .dev/mpi18/mpi/env.sh
export FMMCL_KERNEL_PATH=$PWD/.dev/mpi18/after/cl OMP_NUM_THREADS=4 PMIX_MCA_pcompress_base_silence_warning=1
M="mpirun --allow-run-as-root --oversubscribe --bind-to none"
F="pmix\|dlopen\|Perhaps\|^-----\|PMIX\|pcompress\|zlib\|^ *$"
echo "## mpirun -n 4 mpi-check"
timeout 150 $M -n 4 .dev/mpi18/after/tests/mpi-check 2>&1 | grep -v "$F" | cut -c1-260
echo "## mpirun -n 4 fmmcl-mpi --demo 1000000 --precision double --tol 1e-6 --check 200 -v"
timeout 100 $M -n 4 .dev/mpi18/after/host/fmmcl-mpi --demo 1000000 --precision double --tol 1e-6 --check 200 -v 2>&1 | grep -v "$F"
