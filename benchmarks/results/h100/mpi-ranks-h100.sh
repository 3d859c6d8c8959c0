# The H100 run of bench-mpi, ranks sharing the GPU; run from the checkout root with .dev/mpi18 carried (bench-mpi, cl/, the libraries and benchmarks/mpi-carry.sh's Open MPI).
. benchmarks/gpu-env.sh .dev/mpi18/after
export LD_LIBRARY_PATH=$PWD/.dev/mpi18/libs:$LD_LIBRARY_PATH
. .dev/mpi18/mpi/env.sh
export FMMCL_KERNEL_PATH=$PWD/.dev/mpi18/after/cl OMP_NUM_THREADS=4
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
B=.dev/mpi18/after/benchmarks/bench-mpi
M="mpirun --allow-run-as-root --oversubscribe --bind-to none"
start=$(date +%s)
h=--header
for prec in "--tol 1e-6" "--single --tol 1e-4"; do
  for dist in "" "--clusters"; do
    for r in 1 2 4; do
      echo "## -n $r --strong 1e6 $prec $dist"
      timeout 60 $M -n $r $B --strong 1e6 $prec $dist --repeat 3 --per-rank $h 2>&1 | tail -8
      h=
      echo "## elapsed $(( $(date +%s) - start )) s"
    done
  done
done
for r in 1 2 4; do
  [ $(( $(date +%s) - start )) -gt 200 ] && break
  echo "## -n $r --strong 1e7 --tol 1e-6"
  timeout 80 $M -n $r $B --strong 1e7 --tol 1e-6 --repeat 2 --per-rank 2>&1 | tail -8
  echo "## elapsed $(( $(date +%s) - start )) s"
done
