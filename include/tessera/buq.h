/* Block-uniform quadtree (BUQ) grids: a 2D domain of nx x ny finest cells covered by blocks of
 * M x M cells (M = 16 or 8) at levels 0 .. levels-1, level l having cells 2^l finest cells wide.
 * The blocks are the leaves of a quadtree whose roots are the blocks of the coarsest level; a
 * block is refined while any of its cells that hold data is wider than the cell size wanted
 * there, then blocks are refined until every two leaves that touch (across a side or a corner)
 * differ by at most one level (2:1 balance). Blocks without any cell holding data are not
 * allocated. The leaves are kept in Morton (Z) order of their lower-left corners, so a range of
 * leaves is a compact piece of the domain: partitions are contiguous ranges of near-equal cost.
 * Each leaf knows its neighbours across its 4 sides and 4 corners, on the same level, one level
 * coarser or one level finer. */
#ifndef TESSERA_BUQ_H
#define TESSERA_BUQ_H

#include <stdint.h>

#include "tessera/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_BUQ_MAX_LEVELS 8

/* How a neighbour relates to a block (none: outside the domain, or no data there). */
typedef enum ts_buq_relation {
  TS_BUQ_NONE = 0,
  TS_BUQ_SAME,    /* one block of the same level */
  TS_BUQ_COARSER, /* one block of the next coarser level */
  TS_BUQ_FINER    /* across a side two blocks of the next finer level (one may lack data), across
                     a corner one */
} ts_buq_relation;

/* Sides and corners, in this order: west, east, south, north (x-, x+, y-, y+), then
 * south-west, south-east, north-west, north-east. */
enum { TS_BUQ_WEST, TS_BUQ_EAST, TS_BUQ_SOUTH, TS_BUQ_NORTH };
enum { TS_BUQ_SW, TS_BUQ_SE, TS_BUQ_NW, TS_BUQ_NE };

typedef struct ts_buq_block {
  int level;  /* 0: the finest */
  int bi, bj; /* position on its level: its cells are [bi M, (bi + 1) M) x [bj M, (bj + 1) M) of
                 that level's cells, i.e. finest cells [bi M 2^level, ...) */
  /* neighbours across each side: [0] and, for a finer side, [1] (the two finer blocks in order of
   * increasing x or y; -1 where one lacks data); -1 when none */
  int side[4][2];
  ts_buq_relation side_relation[4];
  int corner[4];
  ts_buq_relation corner_relation[4];
} ts_buq_block;

typedef struct ts_buq {
  int nx, ny; /* finest cells of the domain */
  int block;  /* M */
  int levels;
  int nblocks;
  ts_buq_block *blocks; /* the leaves, in Morton order */
  int blocks_per_level[TS_BUQ_MAX_LEVELS];
  int64_t cells_per_level[TS_BUQ_MAX_LEVELS]; /* M^2 x blocks_per_level */
  int roots[2];                               /* coarsest blocks along x and y */
  int *index[TS_BUQ_MAX_LEVELS]; /* per level, the leaf at (bi, bj), -1 elsewhere (internal) */
} ts_buq;

/* Builds the grid. valid: nx * ny flags (cell i + nx j, j northwards), 1 where a finest cell
 * holds data (NULL: everywhere); target: nx * ny widths of the cells wanted, in finest cells
 * (1: the finest level, 2 the next, ...; values <= 1 ask for the finest, NULL or values above
 * 2^(levels - 1) ask nothing: the coarsest). block: 8 or 16; levels: 1 to TS_BUQ_MAX_LEVELS. */
ts_status ts_buq_build(ts_buq *q, int nx, int ny, int block, int levels, const unsigned char *valid,
                       const double *target);
void ts_buq_destroy(ts_buq *q);

/* What a grid is refined for, each into target (nx * ny widths in finest cells, as
 * ts_buq_build takes them; each narrows what target already holds, so they combine; start from
 * INFINITY everywhere):
 * ts_buq_want_sizes: a raster of wanted cell sizes in metres on the finest grid (NaN: no wish),
 *   dx the finest cell size: the widest power of two no wider than the size;
 * ts_buq_want_slopes: the finest level where the bed's steepest slope to a neighbour holding
 *   data (m/m, cell size dx) exceeds `slope` (NaN beds: no data);
 * ts_buq_want_water: the finest level within `margin` cells (Chebyshev distance) of a cell
 *   whose depth is above 0. */
void ts_buq_want_sizes(int nx, int ny, const double *sizes, double dx, double *target);
void ts_buq_want_slopes(int nx, int ny, const double *bed, double dx, double slope, double *target);
ts_status ts_buq_want_water(int nx, int ny, const double *depth, int margin, double *target);

/* The leaf holding finest cell (i, j), or -1 (outside, or a block without data). */
int ts_buq_find(const ts_buq *q, int i, int j);
/* Cells of all leaves, and of a uniform grid of finest cells over the domain (nx * ny). */
int64_t ts_buq_cells(const ts_buq *q);

/* Fields on the leaves: nblocks * M * M values, cell (i, j) of leaf k (i along x) at
 * k M^2 + i + M j.
 * ts_buq_average: each leaf cell the mean of the finest cells it covers that hold a value (fine:
 * nx * ny values, cell i + nx j, NaN where none), NaN where none does: the conservative average
 * of a DEM on every level. The same bits on any partition (a fixed order of summation).
 * ts_buq_resample: a uniform grid of cells `factor` finest cells wide (a power of two; 1: the
 * finest grid), ceil(nx / factor) x ceil(ny / factor) values: each the mean over the finest cells
 * it covers of the value of the leaf cell holding them (the area-weighted mean of the leaf cells
 * it overlaps), NaN where none holds one. */
ts_status ts_buq_average(const ts_buq *q, const double *fine, double *cells);
ts_status ts_buq_resample(const ts_buq *q, const double *cells, int factor, double *out);

/* Splits the leaves, in Morton order, into `parts` contiguous ranges of near-equal cost (cost:
 * nblocks positive numbers, NULL for one each): part p holds leaves first[p] .. first[p+1]-1
 * (first has parts + 1 entries). Every part gets at least one leaf (parts <= nblocks). */
ts_status ts_buq_partition(const ts_buq *q, const double *cost, int parts, int *first);

#ifdef __cplusplus
}
#endif
#endif
