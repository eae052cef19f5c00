/* The halo engine's transport interface across MPI ranks, without a GPU: a transport that keeps
 * its buffers in host memory, packs boxes row by row and sends with MPI stands in for the GPU
 * transports (which use the same calls on device buffers). An uneven 11 x 7 x 6 grid in 2 x 2 x 2
 * boxes spread over the ranks, five components of which only some cross each face: every halo
 * cell must receive exactly the owner's values of the components that cross towards it, through
 * the transport and through the engine's own MPI path alike, with the grid periodic along every
 * axis too (windows past its edges receive the wrapped cells).
 * usage: mpirun -np R mpi_halo_transport */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/comm.h"
#include "tessera/halo.h"
#include "unit/check.h"
#include "unit/halo_grid.h"

/* ---- the stand-in transport */

static MPI_Request *requests; /* grown to the messages of the largest exchange */
static int nrequests, capacity;

static void *host_alloc(size_t bytes) { return malloc(bytes); }
static void host_release(void *buf) { free(buf); }

static void host_move(const ts_box *box, int nfields, const uint32_t *masks,
                      const ts_halo_field *fields, char *buf, int pack) {
  size_t offset = 0;
  for (int f = 0; f < nfields; f++) {
    const ts_halo_field *fl = &fields[f];
    size_t run = (size_t)(box->hi[0] - box->lo[0]) * fl->elem;
    for (int c = 0; c < fl->ncomp; c++) {
      if (!(masks[f] >> c & 1u))
        continue;
      for (int z = box->lo[2]; z < box->hi[2]; z++)
        for (int y = box->lo[1]; y < box->hi[1]; y++) {
          int64_t e = fl->origin + (box->lo[0] - fl->lo[0]) * fl->stride[0] +
                      (int64_t)(y - fl->lo[1]) * fl->stride[1] +
                      (int64_t)(z - fl->lo[2]) * fl->stride[2];
          char *cell = (char *)fl->comp[c] + (size_t)e * fl->elem;
          memcpy(pack ? buf + offset : cell, pack ? cell : buf + offset, run);
          offset += run;
        }
    }
  }
}

static ts_status host_post(int nrecvs, const ts_halo_message *recvs, int nsends,
                           const ts_halo_message *sends) {
  nrequests = 0;
  if (nrecvs + nsends > capacity) {
    MPI_Request *r = realloc(requests, sizeof *r * (size_t)(nrecvs + nsends));
    if (!r)
      return ts_error(TS_ERR_NOMEM, "out of memory");
    requests = r;
    capacity = nrecvs + nsends;
  }
  for (int k = 0; k < nrecvs; k++)
    MPI_Irecv(recvs[k].buf, (int)recvs[k].bytes, MPI_BYTE, recvs[k].peer, recvs[k].tag,
              MPI_COMM_WORLD, &requests[nrequests++]);
  for (int k = 0; k < nsends; k++)
    MPI_Isend(sends[k].buf, (int)sends[k].bytes, MPI_BYTE, sends[k].peer, sends[k].tag,
              MPI_COMM_WORLD, &requests[nrequests++]);
  return TS_OK;
}

static ts_status host_wait(void) {
  MPI_Waitall(nrequests, requests, MPI_STATUSES_IGNORE);
  return TS_OK;
}

static ts_status host_done(void) { return TS_OK; }

static const ts_halo_transport host_transport = {"test",    host_alloc, host_release, host_move,
                                                 host_post, host_wait,  host_done};

/* ---- subdomains */

/* One exchange of this rank's subdomains (others are described but never read), on a grid
 * periodic along every axis or none; returns the number of wrong halo values on this rank, and
 * counts the values received. */
static long exchange(const ts_decomp *dc, const int *ranks, const uint32_t *mask,
                     const ts_halo_transport *transport, int periodic, long *received) {
  int n[3] = {NX, NY, NZ}, me = ts_comm_rank(ts_comm_world());
  sub_data subs[COUNT];
  ts_halo_field fields[COUNT];
  ts_box windows[COUNT];
  for (int s = 0; s < COUNT; s++) {
    ts_box w = dc->boxes[s];
    for (int a = 0; a < 3; a++) {
      w.lo[a] = w.lo[a] > 0 || periodic ? w.lo[a] - 1 : 0;
      w.hi[a] = w.hi[a] < n[a] || periodic ? w.hi[a] + 1 : n[a];
    }
    subs[s].win = windows[s] = w;
    for (int c = 0; c < NCOMP; c++) {
      subs[s].comp[c] = malloc(sizeof(double) * (size_t)ts_box_cells(&w));
      for (int z = w.lo[2]; z < w.hi[2]; z++)
        for (int y = w.lo[1]; y < w.hi[1]; y++)
          for (int x = w.lo[0]; x < w.hi[0]; x++) {
            int cell[3] = {x, y, z};
            *at(&subs[s], c, x, y, z) =
                ts_box_contains(&dc->boxes[s], cell) ? value(c, x, y, z) : -1;
          }
    }
    ts_halo_field *f = &fields[s];
    memset(f, 0, sizeof *f);
    f->ncomp = NCOMP;
    f->elem = sizeof(double);
    for (int c = 0; c < NCOMP; c++)
      f->comp[c] = subs[s].comp[c];
    f->stride[0] = 1;
    f->stride[1] = w.hi[0] - w.lo[0];
    f->stride[2] = f->stride[1] * (w.hi[1] - w.lo[1]);
    memcpy(f->lo, w.lo, sizeof f->lo);
    f->dir_mask = mask;
  }
  ts_halo_spec spec = {.nsub = COUNT,
                       .sub_rank = ranks,
                       .src = dc->boxes,
                       .dst = windows,
                       .dst_owned = dc->boxes,
                       .period = {periodic * NX, periodic * NY, periodic * NZ},
                       .nfields = 1,
                       .layout = fields};
  ts_halo_plan *plan = NULL;
  long wrong = 0;
  if (ts_halo_plan_create(&plan, ts_comm_world(), &spec) != TS_OK ||
      (transport && ts_halo_set_transport(plan, transport) != TS_OK) ||
      ts_halo_start(plan, fields, fields) != TS_OK || ts_halo_finish(plan, fields) != TS_OK)
    wrong = -1;
  ts_halo_plan_destroy(plan);
  if (wrong == 0)
    wrong = halo_values_wrong(dc, subs, mask, ranks, me, received);
  for (int s = 0; s < COUNT; s++)
    for (int c = 0; c < NCOMP; c++)
      free(subs[s].comp[c]);
  return wrong;
}

int main(int argc, char **argv) {
  if (ts_comm_init(&argc, &argv) != TS_OK)
    return 2;
  const ts_comm *world = ts_comm_world();
  int nranks = ts_comm_size(world), root = ts_comm_rank(world) == 0;
  int n[3] = {NX, NY, NZ}, ranks[COUNT];
  ts_decomp dc;
  if (ts_decomp_create(&dc, 3, n, COUNT, TS_DECOMP_AUTO, NULL) != TS_OK)
    return 1;
  for (int s = 0; s < COUNT; s++)
    ranks[s] = s * nranks / COUNT; /* contiguous blocks of subdomains per rank */
  /* component 4 crosses every face, component c < 4 only towards directions d with d % 4 == c */
  uint32_t mask[TS_HALO_DIRS];
  for (int d = 0; d < TS_HALO_DIRS; d++)
    mask[d] = (1u << (d % 4)) | (1u << 4);
  const ts_halo_transport *ways[2] = {NULL, &host_transport};
  const char *names[2] = {"the engine's MPI path", "a transport"};
  for (int periodic = 0; periodic < 2; periodic++)
    for (int k = 0; k < 2; k++) {
      long received = 0;
      double result[2] = {(double)exchange(&dc, ranks, mask, ways[k], periodic, &received), 0};
      result[1] = (double)received;
      double bad = result[0] != 0;
      ts_comm_max(world, &bad, 1);
      if (root)
        CHECK(bad == 0, "%d ranks, halos through %s%s: rank 0 received %ld values, %.0f wrong",
              nranks, names[k], periodic ? ", periodic" : "", received, result[0]);
    }
  ts_decomp_destroy(&dc);
  free(requests);
  ts_comm_finalize();
  return failures != 0;
}
