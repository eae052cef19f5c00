/* Domain decomposition: a grid split into boxes of cells (subdomains) by rows, columns, tiles
 * (px x py [x pz]) or automatically (fewest cut faces), with uneven extents allowed, subdomains
 * mapped to ranks in contiguous blocks, and a boundary between two neighbours that can be moved
 * at run time (the load balancer's lever). */
#ifndef TESSERA_DECOMP_H
#define TESSERA_DECOMP_H

#include <stdint.h>

#include "tessera/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Cells lo[a] <= c[a] < hi[a] along each axis (unused axes: lo 0, hi 1). */
typedef struct ts_box {
  int lo[3], hi[3];
} ts_box;

int64_t ts_box_cells(const ts_box *b);
/* Intersection of a and b in *out; returns 0 when it is empty. */
int ts_box_intersect(const ts_box *a, const ts_box *b, ts_box *out);
int ts_box_contains(const ts_box *b, const int c[3]);

typedef enum ts_decomp_kind {
  TS_DECOMP_AUTO = 0, /* the split with the fewest cut faces */
  TS_DECOMP_ROWS,     /* bands of whole rows: split along y (z in 3D) */
  TS_DECOMP_COLUMNS,  /* bands of whole columns: split along x */
  TS_DECOMP_TILES     /* px x py (x pz) boxes; given counts, or the best factorisation */
} ts_decomp_kind;

typedef struct ts_decomp {
  int dim;
  int n[3];      /* grid cells per axis */
  int count;     /* subdomains */
  int parts[3];  /* subdomains per axis of the initial split */
  ts_box *boxes; /* count boxes, partitioning the grid */
} ts_decomp;

/* parts: NULL, or the px, py, pz wanted for TS_DECOMP_TILES (0 entries are chosen). Fails with
 * TS_ERR_INPUT when a subdomain would have no cells. */
ts_status ts_decomp_create(ts_decomp *d, int dim, const int n[3], int count, ts_decomp_kind kind,
                           const int *parts);
void ts_decomp_destroy(ts_decomp *d);
ts_status ts_decomp_copy(ts_decomp *dst, const ts_decomp *src);

/* Subdomain that owns cell c, or -1 outside the grid. */
int ts_decomp_owner(const ts_decomp *d, const int c[3]);
/* Rank that runs subdomain `sub` of `count` on `ranks` ranks: contiguous, even blocks. */
int ts_decomp_rank(int sub, int count, int ranks);

/* Moves the boundaries of a decomposition as ts_decomp_create made it so that the subdomains'
 * extents follow `weights` (count positive numbers, e.g. devices' relative speeds): along each
 * split axis, slab k gets cells in proportion to the sum of the weights of its subdomains
 * (exact for rows and columns, separable for tiles), at least one cell each. */
ts_status ts_decomp_weigh(ts_decomp *d, const double *weights);

/* Moves the face shared by neighbours a and b by `delta` cells towards b (delta > 0: a grows,
 * b shrinks). a and b must share a whole face; each keeps at least one cell. */
ts_status ts_decomp_move_boundary(ts_decomp *d, int a, int b, int delta);

const char *ts_decomp_kind_name(ts_decomp_kind k);

#ifdef __cplusplus
}
#endif
#endif
