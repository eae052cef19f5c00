/* Private state of the lattice Boltzmann solver. Nodes are the cells of the box plus a frame of
 * one node on each side of every axis the lattice uses, where the faces' boundary conditions
 * live (walls, moving walls, equilibrium inlets and outlets, periodic images). Node (x, y, z)
 * is cell (x - 1, y - 1, z - 1). The cells are split into subdomains; a part owns the nodes of
 * its cells and the frame nodes next to them, and stores them with one more layer on every side
 * (halo copies of its neighbours' nodes, or never-read nodes outside the frame).
 *
 * Streaming is in place with the AA pattern: an even step reads the populations of a node from
 * its own slots and writes them back to the opposite slots; an odd step reads each incoming
 * population from the opposite slot of the neighbour it comes from and writes each outgoing one
 * to its own slot in the neighbour it goes to. So even steps need no neighbour; before an odd
 * step the halos get the populations their neighbours will read (forward exchange), and after
 * it the populations pushed into halo nodes go back to their owners (reverse exchange: faces
 * first, then edges and corners, whose values win where both reach a node). */
#ifndef TESSERA_LBM_INTERNAL_H
#define TESSERA_LBM_INTERNAL_H

#include <stddef.h>

#include "core/hd.h"
#include "tessera/halo.h"
#include "tessera/lbm.h"

/* Node kinds (low 4 bits of the type byte; bits 4 to 6 hold the face of boundary nodes, bit 7
 * marks bulk nodes: fluid, with every neighbour streaming, which skip the boundary checks). */
enum {
  LBM_FLUID = 0, /* computed */
  LBM_SOLID,     /* bounce-back, never computed */
  LBM_MOVING,    /* bounce-back with the face's wall velocity, never computed */
  LBM_INLET,     /* computed, relaxed to the equilibrium of the face's velocity */
  LBM_OUTLET,    /* computed, relaxed to the equilibrium of the face's density */
  LBM_PERIODIC   /* frame node holding the image of the opposite face's node */
};

#define LBM_BULK 128
TS_HD static inline int lbm_kind(unsigned char type) { return type & 15; }
TS_HD static inline int lbm_face_of(unsigned char type) { return (type >> 4) & 7; }
/* Nodes whose slots the neighbours stream through (the others reflect). */
TS_HD static inline int lbm_streams(unsigned char type) {
  int k = lbm_kind(type);
  return k != LBM_SOLID && k != LBM_MOVING;
}
TS_HD static inline int lbm_computed(unsigned char type) {
  int k = lbm_kind(type);
  return k == LBM_FLUID || k == LBM_INLET || k == LBM_OUTLET;
}

enum { LBM_ALL = 0, LBM_INNER, LBM_BORDER };

/* What the kernels need of a run, in float. */
typedef struct lbm_consts {
  float omega, omega_minus, tau, smag18, force[3];
  int trt;
  float wall_u[6][3]; /* moving walls and inlets, per face */
  float face_rho[6];  /* outlets, per face */
} lbm_consts;

typedef struct lbm_part {
  int sub;
  ts_box own;    /* owned nodes, global node coordinates */
  ts_box core;   /* own less the frame of split periodic axes (see ts_lbm.core) */
  ts_box cells;  /* own less the frame: the owned nodes that are cells (where bulk nodes are) */
  int lo[3];     /* global node coordinates of local node (0, 0, 0) */
  int len[3];    /* local nodes per axis; along x a multiple of lbm_row_align (the row pitch) */
  int64_t plane; /* nodes of the local array */
  /* LBM_Q planes of populations (deviation from the weights), `lead` populations into their
   * allocation, so that the first cell of every row starts a 32-byte sector (lbm_row_align) */
  void *f;
  int lead;
  unsigned char *type;
  float *u_prev; /* velocities at the last ts_lbm_change, 3 per local node */
  ts_box inner;  /* owned nodes none of whose neighbours is a halo node */
  int device;    /* CUDA device of a GPU part, -1 on the CPU */
  void *gpu;     /* the GPU backend's state, NULL on the CPU */
  void *dev_f;   /* a GPU part's populations in device memory (f is the host mirror) */
  /* Owned periodic frame nodes of axes that are not split (those of split axes are halos):
   * their node, the partner they image, the slots that nodes pushing into them fill (sent on
   * to the partner after an odd step) and the slots that nodes pull from them (copied from the
   * partner before one). */
  int nperiodic;
  int64_t *periodic_node, *periodic_partner;
  uint32_t *periodic_pushed, *periodic_pulled;
  /* Per axis, the interior nodes of a periodic axis across which the part's odd steps pull and
   * push themselves, wrapping from the last node to the first (0: none; then the images above
   * are only refreshed for host code: moments and checkpoints). Set for the parts of a backend
   * with `wraps`, along the periodic axes the split does not cut (a part spans them whole: its
   * halo across a cut face holds the wrapped neighbours as well, the face's every node). */
  int wrap[3];
  /* Slots of owned nodes that a reverse exchange overwrites although their population came
   * from a wall (bounce-back at a subdomain border): saved before, restored after. */
  int nkeep;
  int64_t *keep_slot; /* q * plane + node */
  char *keep_value;   /* nkeep populations */
} lbm_part;

/* Nodes per row pitch unit: a row of the local arrays is a whole number of 32-byte sectors, so
 * that with the arrays offset to put the part's first cell at a sector's start (lbm_part.lead),
 * every row's cells start there: a GPU warp's 32 nodes span whole sectors, a CPU vector of
 * 32 bytes does not straddle two cache lines. */
static inline int lbm_row_align(size_t elem) { return 32 / (int)elem; }

/* The populations before local node 0 that put the part's first cell at a sector's start. */
static inline int lbm_lead(const lbm_part *p, size_t elem) {
  int align = lbm_row_align(elem);
  return ((p->lo[0] - p->cells.lo[0]) % align + align) % align;
}

static inline int64_t lbm_local(const lbm_part *p, int x, int y, int z) {
  return (x - p->lo[0]) +
         (int64_t)p->len[0] * ((y - p->lo[1]) + (int64_t)p->len[1] * (z - p->lo[2]));
}

/* The loops of one lattice and storage (lbm_kernels.c, compiled once per pair). */
typedef struct lbm_kernels {
  int q;
  size_t elem;                   /* bytes per population */
  int (*velocity)(int q, int a); /* component a of direction q's velocity */
  int (*opposite)(int q);
  /* Every node at the equilibrium of its initial state (even layout). */
  ts_status (*init)(lbm_part *p, const ts_lbm_params *params, const lbm_consts *k);
  void (*even)(lbm_part *p, const lbm_consts *k);
  /* which: LBM_ALL, LBM_INNER (the nodes of `inner`, which read no halo) or LBM_BORDER (the
   * rest), so that the forward exchange overlaps the inner nodes' update. */
  void (*odd)(lbm_part *p, const lbm_consts *k, const ts_box *inner, int which);
  /* Density and velocity of a computed node, before the step with parity `odd` (0: even). */
  void (*moments)(const lbm_part *p, const lbm_consts *k, int odd, int64_t node, float *rho,
                  float u[3]);
  /* GPU backends (NULL on the CPU): the device side of a part from its host arrays, freed by
   * release; to_host copies the populations down for host code (moments), to_device up (after
   * a checkpoint is loaded); sync waits for the part's queued work; periodic refreshes the
   * images (forward) or sends what was pushed into them on to their partners; keep saves or
   * restores the wall slots of subdomain borders. */
  ts_status (*attach)(lbm_part *p, int device);
  void (*release)(lbm_part *p);
  void (*to_host)(lbm_part *p);
  void (*to_device)(lbm_part *p);
  void (*sync)(lbm_part *p);
  void (*periodic)(lbm_part *p, int forward);
  void (*keep)(lbm_part *p, int restore);
  int wraps; /* odd steps can wrap across periodic axes (lbm_part.wrap) */
  /* Steps ordered on the devices (pairs of steps as one CUDA graph): the part's stream; order
   * makes p's queued work from now on wait for `after`'s queued so far; stream_after makes the
   * work queued from now on on `stream` (of any device: the halo copies to a device, the
   * transport's packs and messages) wait for p's; after_stream makes p's wait for what is queued
   * on `stream` (a stream of p's device). */
  void *(*stream)(lbm_part *p);
  void (*order)(lbm_part *p, lbm_part *after);
  void (*stream_after)(lbm_part *p, void *stream);
  void (*after_stream)(lbm_part *p, void *stream);
} lbm_kernels;

extern const lbm_kernels lbm_kernels_d2q9_fp32, lbm_kernels_d2q9_fp16;
extern const lbm_kernels lbm_kernels_d3q19_fp32, lbm_kernels_d3q19_fp16;
#if TESSERA_CPU_DISPATCH /* the x86-64-v3 and v4 builds of the same loops (tessera/cpu.h) */
extern const lbm_kernels lbm_kernels_d2q9_fp32_v3, lbm_kernels_d2q9_fp16_v3;
extern const lbm_kernels lbm_kernels_d2q9_fp32_v4, lbm_kernels_d2q9_fp16_v4;
extern const lbm_kernels lbm_kernels_d3q19_fp32_v3, lbm_kernels_d3q19_fp16_v3;
extern const lbm_kernels lbm_kernels_d3q19_fp32_v4, lbm_kernels_d3q19_fp16_v4;
#endif
#if TESSERA_HAVE_CUDA
extern const lbm_kernels lbm_kernels_cuda_d2q9_fp32, lbm_kernels_cuda_d2q9_fp16;
extern const lbm_kernels lbm_kernels_cuda_d3q19_fp32, lbm_kernels_cuda_d3q19_fp16;
#endif

struct ts_lbm {
  ts_lbm_params p;
  const ts_comm *comm;
  int rank, nranks, dim;
  int nodes[3]; /* nodes per axis (cells + frame) */
  const lbm_kernels *k;
  lbm_consts consts;
  ts_decomp decomp; /* of the cells */
  ts_box *own;      /* owned nodes per subdomain */
  /* Per subdomain, its owned nodes less the frame nodes of periodic axes that the split cuts:
   * those image nodes of other subdomains and are filled and drained by the halo exchanges
   * (across the periodic boundary), like halo nodes; what the subdomain sends and receives. */
  ts_box *core;
  int split_periodic[3]; /* per axis: periodic and cut by the split */
  ts_box *window;        /* owned nodes and their halo per subdomain */
  int *sub_rank;
  int nparts;
  lbm_part *parts;
  ts_halo_field *fields; /* per subdomain */
  uint32_t mask_forward[TS_HALO_DIRS], mask_faces[TS_HALO_DIRS], mask_diagonal[TS_HALO_DIRS];
  ts_halo_plan *forward, *back_faces, *back_diagonal;
  int64_t steps, fluid_cells;
  int have_change;
  int gpus;           /* CUDA devices this process sees (cuda backend) */
  int transport_open; /* a GPU transport between ranks was opened */
  void *rank_stream;  /* the stream of the NCCL transport between ranks (NULL: none, or another) */
  /* Pairs of steps (even, odd) of this process's GPU parts recorded as one CUDA graph, with the
   * NCCL messages between ranks, which runs them without the host; recording: the exchanges are
   * being ordered on the devices. */
  void *pair_graph;
  int recording;
};

#endif
