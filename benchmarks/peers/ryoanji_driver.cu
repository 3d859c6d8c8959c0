/* ryoanji_driver.cu — runs Ryoanji (ExaFMM's GPU treecode) on a .pts file
 * (make_points.c) and writes its potentials and accelerations in the points'
 * order and in libfmmcl's units, so both codes are compared on one input.
 *
 *   ryoanji_driver POINTS.pts [--repeat R] [--theta T] [--ncrit C] [--out FILE]
 *
 * Built by build-ryoanji.sh inside Ryoanji's CMake tree (its headers and
 * kernels); uses only Ryoanji's public building blocks, in the order its
 * demo (ryoanji/test/demo.cu) calls them: octree (TreeBuilder), upward pass
 * (source centres, multipoles, MAC), traversal. Times each with
 * cudaDeviceSynchronize around it; the traversal --repeat times (outputs
 * zeroed between runs), best and median printed.
 *
 * Units: Ryoanji sums gravity, p_i = -G m_i sum_j m_j / r_ij and
 * a_i = G sum_j m_j (x_j - x_i) / r^3; with G = 1 the driver writes
 * pot_i = -p_i / m_i = sum_j m_j / r and a_i, which is the gradient of
 * that potential: libfmmcl's potential and gradient for charges m. Masses
 * must be positive (Ryoanji expands about each cell's centre of mass).
 * Its P2P softens pairs closer than h_i + h_j; h is 1e-9 of the box side
 * here, so the sum is the plain 1/r of every distinct pair (and the self
 * pair adds nothing). Rows written: float64 pot gx gy gz per point.
 * The order Ryoanji sorts the points into is recomputed with its own SFC
 * keys and stable sort, to put results back in the file's order. */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/host_vector.h>

#include "cstone/cuda/cuda_utils.cuh"
#include "cstone/cuda/gpu_config.cuh"
#include "cstone/cuda/thrust_util.cuh"
#include "cstone/focus/source_center_gpu.h"
#include "cstone/primitives/primitives_gpu.h"
#include "cstone/sfc/sfc_gpu.h"
#include "cstone/traversal/groups_gpu.h"
#include "cstone/util/array.hpp"

#include "ryoanji/interface/treebuilder.cuh"
#include "ryoanji/nbody/cartesian_qpole.hpp"
#include "ryoanji/nbody/traversal_gpu.h"
#include "ryoanji/nbody/types.h"
#include "ryoanji/nbody/upsweep_gpu.h"

using namespace ryoanji;
using T = float;
using MType = CartesianQuadrupole<T>;
using KeyType = uint64_t;

static double now() {
  cudaDeviceSynchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void die(const char *msg) {
  fprintf(stderr, "ryoanji_driver: %s\n", msg);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help")) {
    printf("usage: ryoanji_driver POINTS.pts [--repeat R] [--theta T] [--ncrit C] [--out FILE]\n"
           "Ryoanji's octree, upward pass and traversal on the points of POINTS.pts (make_points),\n"
           "charges as masses (positive); prints the phase times (traversal best and median of R),\n"
           "--out writes float64 rows pot gx gy gz in the file's order, libfmmcl's units.\n");
    return argc < 2;
  }
  int repeat = 3, ncrit = 64;
  T theta = 0.6f;
  const char *out = nullptr;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--theta") && i + 1 < argc) theta = (T)atof(argv[++i]);
    else if (!strcmp(argv[i], "--ncrit") && i + 1 < argc) ncrit = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else die("unknown argument (see --help)");
  }
  if (repeat < 1 || ncrit < 1 || !(theta > 0 && theta < 1)) die("bad --repeat, --ncrit or --theta");

  FILE *f = fopen(argv[1], "rb");
  if (!f) die("cannot open the point file");
  int64_t n64 = 0;
  if (fread(&n64, 8, 1, f) != 1 || n64 < 2 || n64 > (int64_t)1 << 31) die("bad point count");
  const size_t n = (size_t)n64;
  std::vector<double> xyz(3 * n), q(n);
  if (fread(xyz.data(), 8, 3 * n, f) != 3 * n || fread(q.data(), 8, n, f) != n) die("short point file");
  fclose(f);

  thrust::host_vector<T> x(n), y(n), z(n), m(n), h(n);
  double lo = xyz[0], hi = xyz[0];
  for (size_t i = 0; i < n; i++) {
    x[i] = (T)xyz[3 * i], y[i] = (T)xyz[3 * i + 1], z[i] = (T)xyz[3 * i + 2], m[i] = (T)q[i];
    if (!(q[i] > 0)) die("charges must be positive (Ryoanji expands about centres of mass)");
    for (int d = 0; d < 3; d++) lo = std::min(lo, xyz[3 * i + d]), hi = std::max(hi, xyz[3 * i + d]);
  }
  const T pad = (T)(1e-6 * (hi - lo));
  cstone::Box<T> box((T)lo - pad, (T)hi + pad);
  for (size_t i = 0; i < n; i++) h[i] = (T)(1e-9 * (hi - lo));

  thrust::device_vector<T> d_x = x, d_y = y, d_z = z, d_m0 = m, d_h = h;

  /* the order TreeBuilder::update sorts into: its keys, its stable sort */
  thrust::device_vector<int> d_order(n);
  {
    thrust::device_vector<KeyType> keys(n), keys_tmp(n);
    thrust::device_vector<int> values_tmp(n);
    uint64_t tmp_bytes = cstone::sortByKeyTempStorage<KeyType, cstone::LocalIndex>(n);
    thrust::device_vector<char> tmp(tmp_bytes);
    cstone::computeSfcKeysGpu(rawPtr(d_x), rawPtr(d_y), rawPtr(d_z), cstone::sfcKindPointer(rawPtr(keys)), n, box);
    cstone::sequenceGpu(rawPtr(d_order), n, 0);
    cstone::sortByKeyGpu(rawPtr(keys), rawPtr(keys) + n, rawPtr(d_order), rawPtr(keys_tmp), rawPtr(values_tmp),
                         rawPtr(tmp), tmp_bytes);
  }
  thrust::device_vector<T> d_m(n);
  thrust::gather(thrust::device, d_order.begin(), d_order.end(), d_m0.begin(), d_m.begin());

  double t0 = now();
  TreeBuilder<KeyType> tb(ncrit);
  const int n_sources = tb.update(rawPtr(d_x), rawPtr(d_y), rawPtr(d_z), n, box);
  const double t_tree = now() - t0;

  t0 = now();
  thrust::device_vector<Vec4<T>> centers(n_sources);
  thrust::device_vector<MType> mult(n_sources);
  const int levels = tb.maxTreeLevel();
  const TreeNodeIndex *level_range = tb.levelRange();
  cstone::computeLeafSourceCenterGpu(rawPtr(d_x), rawPtr(d_y), rawPtr(d_z), rawPtr(d_m), tb.leafToInternal(),
                                     tb.numLeafNodes(), tb.layout(), rawPtr(centers));
  cstone::upsweepCentersGpu(levels, level_range, tb.childOffsets(), rawPtr(centers));
  computeLeafMultipoles(rawPtr(d_x), rawPtr(d_y), rawPtr(d_z), rawPtr(d_m), tb.leafToInternal(), tb.numLeafNodes(),
                        tb.layout(), rawPtr(centers), rawPtr(mult));
  for (int level = levels - 1; level >= 1; level--)
    upsweepMultipoles(level_range[level], level_range[level + 1], tb.childOffsets(), rawPtr(centers), rawPtr(mult));
  cstone::setMacGpu(tb.nodeKeys(), n_sources, rawPtr(centers), 1.f / theta, box);
  const double t_up = now() - t0;

  thrust::device_vector<T> d_p(n), d_ax(n), d_ay(n), d_az(n);
  cstone::GroupData<cstone::GpuTag> groups;
  cstone::computeFixedGroups(0, n, bhMaxTargetSize(), groups);
  thrust::device_vector<int> pool(stackSize(groups.numGroups));
  std::vector<double> times;
  util::array<uint64_t, 5> stats{};
  for (int r = 0; r < repeat; r++) {
    thrust::fill(d_p.begin(), d_p.end(), T(0));
    thrust::fill(d_ax.begin(), d_ax.end(), T(0));
    thrust::fill(d_ay.begin(), d_ay.end(), T(0));
    thrust::fill(d_az.begin(), d_az.end(), T(0));
    t0 = now();
    traverse(groups.view(), 1, rawPtr(d_x), rawPtr(d_y), rawPtr(d_z), rawPtr(d_m), rawPtr(d_h), rawPtr(d_x),
             rawPtr(d_y), rawPtr(d_z), rawPtr(d_m), rawPtr(d_h), tb.childOffsets(), tb.internalToLeaf(), tb.layout(),
             rawPtr(centers), rawPtr(mult), T(1), 0, {box.lx(), box.ly(), box.lz()}, rawPtr(d_p), rawPtr(d_ax),
             rawPtr(d_ay), rawPtr(d_az), rawPtr(pool));
    times.push_back(now() - t0);
    stats = readBhStats();
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) die(cudaGetErrorString(err));
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  printf("ryoanji n=%zu theta=%g ncrit=%d repeat=%d tree_s=%.7f upsweep_s=%.7f traverse_best_s=%.7f "
         "traverse_median_s=%.7f p2p_mean=%.1f m2p_mean=%.1f cells=%d\n",
         n, (double)theta, ncrit, repeat, t_tree, t_up, sorted[0], sorted[sorted.size() / 2],
         (double)stats[0] / n, (double)stats[2] / n, n_sources);

  if (out) {
    thrust::host_vector<T> p = d_p, ax = d_ax, ay = d_ay, az = d_az, ms = d_m;
    thrust::host_vector<int> order = d_order;
    std::vector<double> rows(4 * n);
    for (size_t s = 0; s < n; s++) {
      const size_t i = (size_t)order[s]; /* sorted slot s holds point i */
      rows[4 * i] = -(double)p[s] / (double)ms[s];
      rows[4 * i + 1] = ax[s], rows[4 * i + 2] = ay[s], rows[4 * i + 3] = az[s];
    }
    FILE *o = fopen(out, "wb");
    if (!o || fwrite(rows.data(), 8, rows.size(), o) != rows.size() || fclose(o)) die("cannot write --out");
  }
  return 0;
}
