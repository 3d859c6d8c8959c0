# gpu-env.sh — sourced on the NVIDIA test machine before running benchmarks:
# registers NVIDIA's OpenCL driver with the ICD loader (only PoCL is
# registered there by default) and points libfmmcl at this checkout's kernels.
# Usage: . benchmarks/gpu-env.sh BUILD_DIR
mkdir -p /etc/OpenCL/vendors
[ -f /etc/OpenCL/vendors/nvidia.icd ] || echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
FMMCL_BUILD=${1:-.dev/gpu}
export FMMCL_KERNEL_PATH="$PWD/cl"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/fmmcl-cache}
# libraries a bare machine may lack, carried in .dev/libs (see benchmarks/README.md)
[ -d .dev/libs ] && export LD_LIBRARY_PATH="$PWD/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PWD/$FMMCL_BUILD/benchmarks:$PWD/$FMMCL_BUILD/host:$PWD/$FMMCL_BUILD/tuner:$PATH"
