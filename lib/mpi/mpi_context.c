/* mpi_context.c — each rank opens its own device: by default the GPU whose
 * position among its node's GPUs is the rank's position on the node modulo
 * their number, so one rank per GPU needs no configuration. */
#include <stdio.h>
#include <stdlib.h>

#include "mpi_internal.h"

/* "P:D" of the (local_rank mod GPUs)-th GPU into buf; 0 when the node has none. */
static int node_gpu(MPI_Comm comm, char *buf, size_t len) {
  MPI_Comm node;
  int local_rank = 0;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
  }
  size_t n = 0;
  if (fmmcl_devices_list(NULL, 0, &n) || n == 0) return 0;
  fmmcl_device_info *info = malloc(n * sizeof *info);
  if (!info) return 0;
  size_t got = 0, gpus = 0;
  if (fmmcl_devices_list(info, n, &got) == FMMCL_SUCCESS)
    for (size_t i = 0; i < got && i < n; i++) gpus += info[i].is_gpu != 0;
  int found = 0;
  if (gpus > 0) {
    size_t want = (size_t)local_rank % gpus, k = 0;
    for (size_t i = 0; i < got && i < n && !found; i++)
      if (info[i].is_gpu && k++ == want) {
        snprintf(buf, len, "%d:%d", info[i].platform_index, info[i].device_index);
        found = 1;
      }
  }
  free(info);
  return found;
}

fmmcl_status fmmcl_mpi_context_create(MPI_Comm comm, const char *selector, fmmcl_context *ctx) {
  if (!ctx) return FMMCL_ERROR_NULL_POINTER;
  char chosen[32];
  const char *env = getenv("FMMCL_DEVICE");
  int use_default = (!selector || !*selector) && (!env || !*env);
  /* Collective in every case, so ranks with and without a selector agree. */
  int have = node_gpu(comm, chosen, sizeof chosen);
  if (use_default && have) selector = chosen;
  return fmmcl_context_create(ctx, selector);
}
