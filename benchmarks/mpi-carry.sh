#!/bin/sh
# mpi-carry.sh — copies this machine's Open MPI (mpirun, orted, their
# plugins, help files and every shared library they and the given programs
# need beyond the C library) into a relocatable prefix, for a machine
# without Open MPI (the GPU machine). Plugins for fabrics a single node does
# not use (UCX, OFI, verbs, PSM) are left out, which also leaves out their
# libraries. Usage: benchmarks/mpi-carry.sh DEST PROGRAM...   then there:
#   . DEST/env.sh; mpirun --allow-run-as-root -n 4 PROGRAM ...
set -e
dest=$1
shift
ompi=/usr/lib/x86_64-linux-gnu/openmpi
pmix=/usr/lib/x86_64-linux-gnu/pmix2
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/lib/x86_64-linux-gnu/openmpi/lib/openmpi3" "$dest/share" \
  "$dest/pmix/lib/pmix" "$dest/pmix/share"
cp -L /usr/bin/orterun "$dest/bin/mpirun"
cp -L /usr/bin/orted "$dest/bin/orted"
cp -a /usr/share/openmpi "$dest/share/openmpi"
cp -a "$pmix/share/pmix" "$dest/pmix/share/pmix"
skip='ucx|ucp|uct|ofi|openib|psm|verbs|rdma|fabric|cuda|smcuda|portals|usnic|hcoll|fca|ibm'
for f in "$ompi"/lib/openmpi3/*.so; do
  echo "$f" | grep -Eq "mca_[a-z]+_($skip)" && continue
  cp -L "$f" "$dest/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/"
done
for f in "$pmix"/lib/pmix/*.so; do cp -L "$f" "$dest/pmix/lib/pmix/"; done
# The libraries everything above and the programs load, but the C and C++
# runtimes and the OpenCL loader, which the GPU machine has (its own driver
# may need its newer ones).
for f in "$dest"/bin/* "$dest"/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so "$dest"/pmix/lib/pmix/*.so "$@"; do
  ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libOpenCL|libstdc\+\+|libgcc_s)\.so' | while read -r l; do
  cp -L "$l" "$dest/lib/"
done
strip --strip-unneeded "$dest"/bin/* "$dest"/lib/*.so* "$dest"/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so \
  "$dest"/pmix/lib/pmix/*.so 2>/dev/null || true
cat > "$dest/env.sh" <<'ENV'
# Sourced before mpirun on a machine without Open MPI: the carried prefix.
d=$(cd "$(dirname "${BASH_SOURCE:-$0}")" 2>/dev/null && pwd)
[ -f "$d/env.sh" ] || d=$PWD/.dev/mpi
export OPAL_PREFIX=$d PATH=$d/bin:$PATH LD_LIBRARY_PATH=$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_MCA_mca_base_component_path=$d/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export PMIX_MCA_mca_base_component_path=$d/pmix/lib/pmix PMIX_INSTALL_PREFIX=$d/pmix
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
export OMPI_MCA_orte_launch_agent=$d/bin/orted
ENV
du -sh "$dest"
