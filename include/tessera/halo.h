/* The halo exchange engine, generic over modules: a subdomain describes each of its fields
 * (components, element size, layout, and which components cross which face); a plan lists the
 * boxes of cells each subdomain receives from each other one (faces, edges and corners alike,
 * from box intersections, across periodic boundaries too), and moves them with one message per
 * pair of subdomains (and periodic shift) carrying all fields. Subdomains of one process copy
 * directly; others use MPI persistent requests with contiguous pack buffers, or a transport for
 * fields in GPU memory (NCCL, CUDA-aware MPI, staged through the host). Start and finish are split
 * so computation overlaps the transfer. The same plan, built from old and new boxes, migrates cells
 * when boundaries move. */
#ifndef TESSERA_HALO_H
#define TESSERA_HALO_H

#include <stddef.h>
#include <stdint.h>

#include "tessera/comm.h"
#include "tessera/decomp.h"
#include "tessera/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_HALO_MAX_COMP 32
#define TS_HALO_DIRS 27

/* Direction of a halo box seen from the receiver: -1, 0, +1 per axis (0 0 0: inside). */
static inline int ts_halo_dir(int dx, int dy, int dz) {
  return (dx + 1) + 3 * (dy + 1) + 9 * (dz + 1);
}

/* One field of one subdomain. Element e of component c of the cell at global coordinates
 * (x, y, z) is at comp[c] + elem * (origin + (x - lo[0]) * stride[0] + (y - lo[1]) * stride[1]
 * + (z - lo[2]) * stride[2]). */
typedef struct ts_halo_field {
  int ncomp;
  size_t elem;
  void *comp[TS_HALO_MAX_COMP];
  int64_t origin;
  int64_t stride[3];
  int lo[3];
  /* NULL: every component crosses every face. Otherwise TS_HALO_DIRS masks (bit c: component
   * c is sent into a halo box lying in that direction; the centre entry is ignored, all go). */
  const uint32_t *dir_mask;
} ts_halo_field;

/* A transfer named outright (a plan's `links`): subdomain `src` sends its cells box - shift (in
 * its own coordinates) into the cells `box` of subdomain `dst`. Patches that are not boxes of one
 * global grid, such as the leaves of a quadtree kept in per-subdomain slots, exchange this way. */
typedef struct ts_halo_link {
  int src, dst;
  ts_box box;
  int shift[3];
} ts_halo_link;

typedef struct ts_halo_spec {
  int nsub;
  const int *sub_rank;     /* rank running each subdomain */
  const ts_box *src;       /* per subdomain: the cells it can send (its owned box) */
  const ts_box *dst;       /* per subdomain: the cells it wants (its window with the halo) */
  const ts_box *dst_owned; /* per subdomain: its own box, for directions (NULL: dst) */
  /* per subdomain: its own box, or NULL. When set, the direction of a box is seen from the
   * sender (the box lies in its halo in that direction): plans that send cells of the halo
   * back to their owners, such as populations pushed across a face (lattice Boltzmann). */
  const ts_box *src_owned;
  int include_self; /* also move src[s] ∩ dst[s] (when migrating between layouts) */
  /* Per axis, the period of a periodic domain in cells (0: not periodic): a cell at x + period
   * is the cell at x, so src[s] shifted by -period, 0 and +period along such axes feeds dst[d]
   * (a box is kept in the receiver's coordinates; the sender reads it period cells away). A
   * subdomain feeds itself only through a shift. */
  int period[3];
  int nfields;
  const ts_halo_field *layout; /* nfields entries: ncomp, elem and dir_mask (pointers unused) */
  /* With nlinks > 0 the transfers are these links, in this order (the same list on every
   * rank), every component of every field going: src, dst, dst_owned, src_owned, include_self
   * and period are not read. */
  int nlinks;
  const ts_halo_link *links;
} ts_halo_spec;

typedef struct ts_halo_times {
  double pack, wait, unpack; /* seconds, accumulated */
} ts_halo_times;

typedef struct ts_halo_plan ts_halo_plan;

ts_status ts_halo_plan_create(ts_halo_plan **out, const ts_comm *c, const ts_halo_spec *spec);
void ts_halo_plan_destroy(ts_halo_plan *p);

/* fields[s * nfields + f] describes field f of subdomain s (only this rank's are read). src
 * and dst may be the same array. Start copies between this rank's subdomains, packs and sends
 * to other ranks and posts the receives; finish waits and unpacks. Collective over ranks. */
ts_status ts_halo_start(ts_halo_plan *p, const ts_halo_field *src, const ts_halo_field *dst);
ts_status ts_halo_finish(ts_halo_plan *p, const ts_halo_field *dst);

/* Copies `box` of every field from one subdomain to another of this process (masks[f]: the
 * components of field f that go). The default copies host memory; a GPU backend sets one that
 * copies device memory, so halos between its subdomains never leave the GPUs. */
typedef void (*ts_halo_copier)(const ts_box *box, int nfields, const uint32_t *masks,
                               const ts_halo_field *from, const ts_halo_field *to);
void ts_halo_set_copier(ts_halo_plan *p, ts_halo_copier copy);

/* A message of a plan to or from another rank. */
typedef struct ts_halo_message {
  int peer;  /* the other rank */
  int tag;   /* the receiving subdomain */
  void *buf; /* in the transport's buffers */
  size_t bytes;
} ts_halo_message;

/* How a plan moves halos between ranks when the fields live in GPU memory (transport.h builds
 * them): it allocates the packed message buffers (device memory), packs and unpacks boxes with
 * device copies, and moves the messages (NCCL, CUDA-aware MPI, or staged through host memory).
 * Without one, the plan packs with memcpy and sends host buffers with MPI. */
typedef struct ts_halo_transport {
  const char *name;
  void *(*alloc)(size_t bytes);
  void (*release)(void *buf);
  /* Packs (pack = 1: fields to buf) or unpacks the components `masks` of `box`. */
  void (*move)(const ts_box *box, int nfields, const uint32_t *masks, const ts_halo_field *fields,
               char *buf, int pack);
  /* Starts the messages once the packs are queued; collective over the plan's ranks. */
  ts_status (*post)(int nrecvs, const ts_halo_message *recvs, int nsends,
                    const ts_halo_message *sends);
  ts_status (*wait)(void); /* the messages arrived: unpacks may be queued */
  ts_status (*done)(void); /* the unpacks are complete */
} ts_halo_transport;

/* Uses transport t for the messages between ranks (before the first start). */
ts_status ts_halo_set_transport(ts_halo_plan *p, const ts_halo_transport *t);

/* Accumulated times of subdomain s (wait: the process's wait, shared by its subdomains). */
ts_halo_times ts_halo_times_of(const ts_halo_plan *p, int s);
/* Cells this rank receives per exchange from other ranks and from its own subdomains. */
void ts_halo_volume(const ts_halo_plan *p, int64_t *remote_cells, int64_t *local_cells);
/* Whether an exchange of the plan moves anything on this rank (sends, receives or copies). */
int ts_halo_moves(const ts_halo_plan *p);

#ifdef __cplusplus
}
#endif
#endif
