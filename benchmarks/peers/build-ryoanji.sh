#!/bin/sh
# build-ryoanji.sh RYOANJI_SRC [OUTDIR]
#
# Builds Ryoanji's single-GPU demonstrator ryoanji_demo and our driver
# ryoanji_driver (ryoanji_driver.cu, next to this script: Ryoanji on a .pts
# point file, results written back in libfmmcl's units) for sm_90 (H100)
# with nvcc and copies them into OUTDIR (default .dev/peers, relative to the
# repository root). cudart is linked statically (CMAKE_CUDA_RUNTIME_LIBRARY=
# Static), libstdc++ and libgcc too, so the GPU machine needs only glibc and
# the driver's libcuda.so.1 (CUDA 13: driver >= 580). Needs nvcc, CMake >= 3.22, g++ >= 11; MPI and GTest are
# looked for by the CMake files but not needed by this target.
#
# Two things this script changes so that it builds with CUDA 13 and CMake 3.25:
#  - -std=c++20 is passed in CMAKE_CUDA_FLAGS: CMake 3.25 does not know
#    nvcc 13's C++20 flag, drops CMAKE_CUDA_STANDARD 20 silently, and nvcc's
#    default C++17 has no std::span;
#  - cub::Sum() is gone from CUDA 13's CCCL: the two BlockReduce calls that
#    used it become BlockReduce::Sum (same result).
#
# RYOANJI_SRC: a checkout of github.com/exafmm/ryoanji, e.g.
#   git --git-dir=<mirror> archive HEAD | tar -x -C /tmp/ryoanji
set -eu
src=${1:?usage: build-ryoanji.sh RYOANJI_SRC [OUTDIR]}
src=$(cd "$src" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${2:-$root/.dev/peers}
build=${BUILD_DIR:-/tmp/ryoanji-build}
jobs=${JOBS:-$(nproc)}
mkdir -p "$out" "$build"

sed -i 's/reduce\.Reduce(int(nodeOp != 1), cub::Sum())/reduce.Sum(int(nodeOp != 1))/' \
  "$src/cstone/include/cstone/focus/rebalance_gpu.cu"
sed -i 's/reduce\.Reduce(Uewald, cub::Sum())/reduce.Sum(Uewald)/' \
  "$src/ryoanji/src/ryoanji/interface/ewald.cu"

# our driver, as one more target of Ryoanji's test folder (same includes and
# libraries as its demo)
cp "$here/ryoanji_driver.cu" "$src/ryoanji/test/ryoanji_driver.cu"
grep -q ryoanji_driver "$src/ryoanji/test/CMakeLists.txt" || cat >> "$src/ryoanji/test/CMakeLists.txt" <<'CMAKE'
if (CMAKE_CUDA_COMPILER)
    add_executable(ryoanji_driver ryoanji_driver.cu)
    target_link_libraries(ryoanji_driver PUBLIC ryoanji_kernels cstone_gpu)
    set_target_properties(ryoanji_driver PROPERTIES CUDA_SEPARABLE_COMPILATION ON)
    target_include_directories(ryoanji_driver PRIVATE ${RYOANJI_TEST_INCLUDE_DIRS})
endif ()
CMAKE

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_RUNTIME_LIBRARY=Static \
  -DCMAKE_CUDA_FLAGS="-std=c++20" \
  -DCMAKE_CXX_FLAGS_RELEASE="-O3 -march=x86-64-v3 -DNDEBUG" -DBUILD_TESTING=ON \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc"
cmake --build "$build" -j "$jobs" --target ryoanji_demo ryoanji_driver
for prog in ryoanji_demo ryoanji_driver; do
  exe=$(find "$build" -name $prog -type f -perm -u+x | head -1)
  cp "$exe" "$out/$prog"
  strip "$out/$prog"
done
echo "built $out/ryoanji_demo and $out/ryoanji_driver; they need:"
ldd "$out/ryoanji_driver"
