#!/bin/sh
# build-fmm3d.sh FMM3D_SRC [OUTDIR]
#
# Builds FMM3D's static library (gfortran -O3 -march=x86-64-v3 -fopenmp, not
# -march=native: the GPU machine's CPU may differ; FAST_KER=ON by default, see
# below) and links benchmarks/peers/fmm3d_driver.c and make_points.c against
# it into OUTDIR, the driver as OUTDIR/$DRIVER_NAME (default fmm3d_driver)
# (default .dev/peers, relative to the repository root). libgfortran,
# libquadmath, libgcc and libgomp are linked statically (STATIC_GOMP=0: libgomp
# shared, then libgomp.so.1 is copied into OUTDIR/lib and found through the
# RPATH $ORIGIN/lib). Needs gcc and gfortran here; the result needs only glibc.
#
# FMM3D_SRC: a checkout of github.com/flatironinstitute/FMM3D, e.g.
#   git --git-dir=<mirror> archive HEAD | tar -x -C /tmp/fmm3d
set -eu
src=${1:?usage: build-fmm3d.sh FMM3D_SRC [OUTDIR]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${2:-$root/.dev/peers}
jobs=${JOBS:-$(nproc)}
name=${DRIVER_NAME:-fmm3d_driver}
mkdir -p "$out/lib"
out=$(cd "$out" && pwd)

arch="-march=x86-64-v3"
cat > "$src/make.inc" <<EOF
FFLAGS= -fPIC -O3 $arch -funroll-loops -std=legacy -w
CFLAGS= -fPIC -O3 $arch -funroll-loops -std=gnu17
CXXFLAGS= -std=c++11 -DSCTL_PROFILE=-1 -fPIC -O3 $arch -funroll-loops
EOF
# FAST_KER=ON (default): FMM3D's vectorised C++ (SCTL) near-field kernels and
# its leaf sizes for them (lndiv_fast.f), the configuration FMM3D recommends
# for speed; FAST_KER=OFF: the plain Fortran kernels.
fast=${FAST_KER:-ON}
# the makefile's rule for the static library is named libfmm3d.a and moves it
# into lib-static/; rebuild from scratch when the configuration changed
stamp="$src/lib-static/.peers-config"
config="FAST_KER=$fast $arch"
if [ ! -f "$src/lib-static/libfmm3d.a" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$config" ]; then
  make -C "$src" clean > /dev/null
  make -C "$src" -j"$jobs" libfmm3d.a FAST_KER="$fast"
  echo "$config" > "$stamp"
fi
lib="$src/lib-static/libfmm3d.a"
cxx=""
[ "$fast" = ON ] && cxx="-Wl,-Bstatic -lstdc++ -Wl,-Bdynamic"

cc=${CC:-gcc}
fc=${FC:-gfortran}
# gfortran drives the link so that its runtime comes in; -static-libgfortran
# pulls libgfortran.a and libquadmath.a.
$cc -c -O2 $arch -fopenmp -std=gnu17 -Wall -o "$out/fmm3d_driver.o" "$here/fmm3d_driver.c"
# libgomp static too when gcc has libgomp.a (Debian's gcc does); no -fopenmp
# at the link, which would add the shared -lgomp.
if [ "${STATIC_GOMP:-1}" = 1 ] && [ -f "$($cc -print-file-name=libgomp.a)" ]; then
  gomp="-Wl,-Bstatic -lgomp -Wl,-Bdynamic -lpthread -ldl"
else
  gomp="-fopenmp"
fi
$fc -o "$out/$name" "$out/fmm3d_driver.o" "$lib" $cxx $gomp \
  -static-libgfortran -static-libgcc -Wl,-rpath,'$ORIGIN/lib' -lm
rm -f "$out/fmm3d_driver.o"
$cc -O2 -std=gnu17 -Wall -o "$out/make_points" "$here/make_points.c" -lm
$cc -O2 -std=gnu17 -Wall -o "$out/compare_rows" "$here/compare_rows.c" -lm

# carry the shared libraries that remain (libgomp; libgfortran if it did not
# go static)
for so in $(ldd "$out/$name" | awk '/libgomp|libgfortran|libquadmath/ {print $3}'); do
  [ "$so" -ef "$out/lib/$(basename "$so")" ] || cp -L "$so" "$out/lib/"
done
echo "built $out/$name ($config) and $out/make_points; needs:"
ldd "$out/$name"
