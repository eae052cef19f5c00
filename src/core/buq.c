/* Block-uniform quadtree grids (tessera/buq.h): a pyramid of per-block facts (any data, the
 * narrowest cell wanted), refinement from the roots down, 2:1 balance across sides and corners,
 * the leaves in Morton order, their neighbours, and partitions along that order. Per level, an
 * array over the level's blocks holds the leaf index of a leaf, LEAF_NONE where the block is not
 * allocated (no data, or inside a coarser leaf) and LEAF_REFINED where finer blocks cover it. */
#include "tessera/buq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { LEAF_NONE = -1, LEAF_REFINED = -2, LEAF_MARK = -3 /* a leaf before numbering */ };

typedef struct level_grid {
  int nbx, nby;
} level_grid;

static level_grid grid_of(const ts_buq *q, int level) {
  int shift = q->levels - 1 - level;
  return (level_grid){q->roots[0] << shift, q->roots[1] << shift};
}

static int inside(level_grid g, int bi, int bj) {
  return bi >= 0 && bj >= 0 && bi < g.nbx && bj < g.nby;
}

static int *at(const ts_buq *q, int level, int bi, int bj) {
  return &q->index[level][(int64_t)bj * grid_of(q, level).nbx + bi];
}

/* Facts per block of every level: whether any of its cells holds data, and the narrowest cell
 * width (in finest cells) wanted by those that do (INFINITY: none asked). */
typedef struct pyramid {
  unsigned char *data[TS_BUQ_MAX_LEVELS];
  double *want[TS_BUQ_MAX_LEVELS];
} pyramid;

static void pyramid_free(pyramid *p) {
  for (int l = 0; l < TS_BUQ_MAX_LEVELS; l++)
    free(p->data[l]), free(p->want[l]);
}

static ts_status pyramid_build(pyramid *p, const ts_buq *q, const unsigned char *valid,
                               const double *target) {
  memset(p, 0, sizeof *p);
  for (int l = 0; l < q->levels; l++) {
    level_grid g = grid_of(q, l);
    size_t n = (size_t)g.nbx * g.nby;
    p->data[l] = calloc(n, 1);
    p->want[l] = malloc(sizeof(double) * n);
    if (!p->data[l] || !p->want[l])
      return ts_error(TS_ERR_NOMEM, "buq: out of memory for %zu blocks", n);
    for (size_t b = 0; b < n; b++)
      p->want[l][b] = INFINITY;
  }
  level_grid g0 = grid_of(q, 0);
  for (int j = 0; j < q->ny; j++)
    for (int i = 0; i < q->nx; i++) {
      size_t c = (size_t)i + (size_t)q->nx * j,
             b = (size_t)(i / q->block) + (size_t)g0.nbx * (size_t)(j / q->block);
      if (valid && !valid[c])
        continue;
      p->data[0][b] = 1;
      double w = target ? target[c] : INFINITY;
      if (w == w && w < p->want[0][b]) /* NaN asks nothing */
        p->want[0][b] = w;
    }
  for (int l = 1; l < q->levels; l++) {
    level_grid g = grid_of(q, l), f = grid_of(q, l - 1);
    for (int bj = 0; bj < g.nby; bj++)
      for (int bi = 0; bi < g.nbx; bi++) {
        size_t b = (size_t)bi + (size_t)g.nbx * bj;
        for (int k = 0; k < 4; k++) {
          size_t child = (size_t)(2 * bi + (k & 1)) + (size_t)f.nbx * (size_t)(2 * bj + (k >> 1));
          p->data[l][b] |= p->data[l - 1][child];
          p->want[l][b] = fmin(p->want[l][b], p->want[l - 1][child]);
        }
      }
  }
  return TS_OK;
}

/* A leaf becomes four (its children without data are not allocated). */
static void refine(ts_buq *q, const pyramid *p, int level, int bi, int bj) {
  *at(q, level, bi, bj) = LEAF_REFINED;
  level_grid f = grid_of(q, level - 1);
  for (int k = 0; k < 4; k++) {
    int ci = 2 * bi + (k & 1), cj = 2 * bj + (k >> 1);
    *at(q, level - 1, ci, cj) =
        p->data[level - 1][(size_t)ci + (size_t)f.nbx * cj] ? LEAF_MARK : LEAF_NONE;
  }
}

/* The level of the leaf covering block (bi, bj) of `level` or an ancestor of it, -1 when none
 * does (no data there, or finer blocks cover it). */
static int covering_level(const ts_buq *q, int level, int bi, int bj) {
  for (int l = level; l < q->levels; l++) {
    int v = *at(q, l, bi >> (l - level), bj >> (l - level));
    if (v >= 0 || v == LEAF_MARK)
      return l;
    if (v == LEAF_REFINED)
      return -1;
  }
  return -1;
}

static const int dirs[8][2] = {{-1, 0},  {1, 0},  {0, -1}, {0, 1},
                               {-1, -1}, {1, -1}, {-1, 1}, {1, 1}}; /* sides, then corners */

/* Refines until every two leaves that touch differ by at most one level. */
static void balance(ts_buq *q, const pyramid *p) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (int l = 0; l + 2 < q->levels; l++) {
      level_grid g = grid_of(q, l);
      for (int bj = 0; bj < g.nby; bj++)
        for (int bi = 0; bi < g.nbx; bi++) {
          if (*at(q, l, bi, bj) != LEAF_MARK)
            continue;
          for (int d = 0; d < 8; d++) {
            int ni = bi + dirs[d][0], nj = bj + dirs[d][1];
            if (!inside(g, ni, nj))
              continue;
            int lc = covering_level(q, l, ni, nj);
            if (lc >= l + 2) {
              refine(q, p, lc, ni >> (lc - l), nj >> (lc - l));
              changed = 1;
            }
          }
        }
    }
  }
}

static uint64_t spread_bits(uint32_t v) {
  uint64_t x = v;
  x = (x | x << 16) & 0x0000ffff0000ffffull;
  x = (x | x << 8) & 0x00ff00ff00ff00ffull;
  x = (x | x << 4) & 0x0f0f0f0f0f0f0f0full;
  x = (x | x << 2) & 0x3333333333333333ull;
  x = (x | x << 1) & 0x5555555555555555ull;
  return x;
}

/* Morton key of a block's lower-left corner, in finest-level blocks. */
static uint64_t morton(const ts_buq_block *b) {
  return spread_bits((uint32_t)b->bi << b->level) | spread_bits((uint32_t)b->bj << b->level) << 1;
}

static int by_morton(const void *a, const void *b) {
  uint64_t x = morton(a), y = morton(b);
  return (x > y) - (x < y);
}

/* The leaf of `level` at (bi, bj), or -1 (none, or not a leaf). */
static int leaf_at(const ts_buq *q, int level, int bi, int bj) {
  if (level < 0 || level >= q->levels || !inside(grid_of(q, level), bi, bj))
    return -1;
  int v = *at(q, level, bi, bj);
  return v >= 0 ? v : -1;
}

/* The neighbour across side or corner d (dirs[d]) of leaf b. */
static void link(ts_buq *q, ts_buq_block *b, int d) {
  int dx = dirs[d][0], dy = dirs[d][1], l = b->level, ni = b->bi + dx, nj = b->bj + dy;
  int found[2] = {-1, -1};
  ts_buq_relation rel = TS_BUQ_NONE;
  if (inside(grid_of(q, l), ni, nj)) {
    int v = *at(q, l, ni, nj);
    if (v >= 0) {
      rel = TS_BUQ_SAME, found[0] = v;
    } else if (v == LEAF_REFINED) { /* the finer blocks of the neighbour that touch b */
      int ci = 2 * ni + (dx < 0), cj = 2 * nj + (dy < 0);
      if (dx == 0 || dy == 0) {
        for (int k = 0; k < 2; k++)
          found[k] =
              dx != 0 ? leaf_at(q, l - 1, ci, 2 * nj + k) : leaf_at(q, l - 1, 2 * ni + k, cj);
      } else {
        found[0] = leaf_at(q, l - 1, ci, cj);
      }
      rel = found[0] >= 0 || found[1] >= 0 ? TS_BUQ_FINER : TS_BUQ_NONE;
    } else if ((found[0] = leaf_at(q, l + 1, ni >> 1, nj >> 1)) >= 0) {
      rel = TS_BUQ_COARSER;
    }
  }
  if (d < 4) {
    b->side[d][0] = found[0], b->side[d][1] = found[1];
    b->side_relation[d] = rel;
  } else {
    b->corner[d - 4] = found[0];
    b->corner_relation[d - 4] = rel;
  }
}

static ts_status check_args(int nx, int ny, int block, int levels) {
  if (block != 8 && block != 16)
    return ts_error(TS_ERR_INPUT, "buq: block must be 8 or 16 cells (got %d)", block);
  if (levels < 1 || levels > TS_BUQ_MAX_LEVELS)
    return ts_error(TS_ERR_INPUT, "buq: levels must be in [1, %d] (got %d)", TS_BUQ_MAX_LEVELS,
                    levels);
  if (nx < 1 || ny < 1 || (int64_t)nx * ny > ((int64_t)1 << 40))
    return ts_error(TS_ERR_INPUT, "buq: %d x %d cells", nx, ny);
  return TS_OK;
}

ts_status ts_buq_build(ts_buq *q, int nx, int ny, int block, int levels, const unsigned char *valid,
                       const double *target) {
  memset(q, 0, sizeof *q);
  TS_CALL(check_args(nx, ny, block, levels));
  q->nx = nx, q->ny = ny, q->block = block, q->levels = levels;
  int64_t root = (int64_t)block << (levels - 1); /* finest cells across a root block */
  q->roots[0] = (int)((nx + root - 1) / root);
  q->roots[1] = (int)((ny + root - 1) / root);
  for (int l = 0; l < levels; l++) {
    level_grid g = grid_of(q, l);
    size_t n = (size_t)g.nbx * g.nby;
    q->index[l] = malloc(sizeof(int) * n);
    if (!q->index[l]) {
      ts_buq_destroy(q);
      return ts_error(TS_ERR_NOMEM, "buq: out of memory for %zu blocks", n);
    }
    for (size_t b = 0; b < n; b++)
      q->index[l][b] = LEAF_NONE;
  }
  pyramid p;
  ts_status st = pyramid_build(&p, q, valid, target);
  if (st != TS_OK) {
    pyramid_free(&p);
    ts_buq_destroy(q);
    return st;
  }
  int top = levels - 1;
  level_grid g = grid_of(q, top);
  for (size_t b = 0; b < (size_t)g.nbx * g.nby; b++)
    q->index[top][b] = p.data[top][b] ? LEAF_MARK : LEAF_NONE;
  for (int l = top; l > 0; l--) { /* refine while a cell is wider than wanted */
    g = grid_of(q, l);
    for (int bj = 0; bj < g.nby; bj++)
      for (int bi = 0; bi < g.nbx; bi++)
        if (*at(q, l, bi, bj) == LEAF_MARK &&
            p.want[l][(size_t)bi + (size_t)g.nbx * bj] < (double)(1 << l))
          refine(q, &p, l, bi, bj);
  }
  balance(q, &p);
  pyramid_free(&p);
  for (int l = 0; l < levels; l++) { /* the leaves, numbered in Morton order */
    g = grid_of(q, l);
    for (size_t b = 0; b < (size_t)g.nbx * g.nby; b++)
      q->nblocks += q->index[l][b] == LEAF_MARK;
  }
  if (q->nblocks == 0) {
    ts_buq_destroy(q);
    return ts_error(TS_ERR_INPUT, "buq: no cell holds data");
  }
  q->blocks = calloc((size_t)q->nblocks, sizeof *q->blocks);
  if (!q->blocks) {
    ts_buq_destroy(q);
    return ts_error(TS_ERR_NOMEM, "buq: out of memory");
  }
  int n = 0;
  for (int l = 0; l < levels; l++) {
    g = grid_of(q, l);
    for (int bj = 0; bj < g.nby; bj++)
      for (int bi = 0; bi < g.nbx; bi++)
        if (*at(q, l, bi, bj) == LEAF_MARK)
          q->blocks[n++] = (ts_buq_block){.level = l, .bi = bi, .bj = bj};
  }
  qsort(q->blocks, (size_t)n, sizeof *q->blocks, by_morton);
  for (int k = 0; k < n; k++) {
    const ts_buq_block *b = &q->blocks[k];
    *at(q, b->level, b->bi, b->bj) = k;
    q->blocks_per_level[b->level]++;
    q->cells_per_level[b->level] += (int64_t)block * block;
  }
  for (int k = 0; k < n; k++)
    for (int d = 0; d < 8; d++)
      link(q, &q->blocks[k], d);
  return TS_OK;
}

void ts_buq_destroy(ts_buq *q) {
  for (int l = 0; l < TS_BUQ_MAX_LEVELS; l++)
    free(q->index[l]);
  free(q->blocks);
  memset(q, 0, sizeof *q);
}

int ts_buq_find(const ts_buq *q, int i, int j) {
  if (i < 0 || j < 0 || i >= q->nx || j >= q->ny)
    return -1;
  for (int l = q->levels - 1; l >= 0; l--) {
    int v = *at(q, l, i / (q->block << l), j / (q->block << l));
    if (v != LEAF_REFINED)
      return v >= 0 ? v : -1;
  }
  return -1;
}

int64_t ts_buq_cells(const ts_buq *q) { return (int64_t)q->nblocks * q->block * q->block; }

void ts_buq_want_sizes(int nx, int ny, const double *sizes, double dx, double *target) {
  for (int64_t c = 0; c < (int64_t)nx * ny; c++) {
    double cells = sizes[c] / dx, width = 1;
    if (!(cells == cells))
      continue;
    while (width * 2 <= cells && width < (double)(1 << 30))
      width *= 2;
    target[c] = fmin(target[c], width);
  }
}

void ts_buq_want_slopes(int nx, int ny, const double *bed, double dx, double slope,
                        double *target) {
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      int64_t c = i + (int64_t)nx * j;
      if (!(bed[c] == bed[c]))
        continue;
      double steepest = 0;
      for (int d = 0; d < 4; d++) {
        int x = i + (d == 0) - (d == 1), y = j + (d == 2) - (d == 3);
        int64_t n = x + (int64_t)nx * y;
        if (x >= 0 && y >= 0 && x < nx && y < ny && bed[n] == bed[n])
          steepest = fmax(steepest, fabs(bed[n] - bed[c]) / dx);
      }
      if (steepest > slope)
        target[c] = 1;
    }
}

/* Marks in out[0 .. n) (stride apart) the entries within `margin` of a marked entry of in. */
static void dilate_line(const unsigned char *in, unsigned char *out, int n, int64_t stride,
                        int margin) {
  int64_t last = -(int64_t)margin - 1; /* the nearest marked entry before, and after */
  for (int k = 0; k < n; k++) {
    if (in[k * stride])
      last = k;
    out[k * stride] = k - last <= margin;
  }
  last = (int64_t)n + margin + 1;
  for (int k = n - 1; k >= 0; k--) {
    if (in[k * stride])
      last = k;
    out[k * stride] |= last - k <= margin;
  }
}

ts_status ts_buq_want_water(int nx, int ny, const double *depth, int margin, double *target) {
  size_t n = (size_t)nx * ny;
  unsigned char *wet = malloc(n), *rows = malloc(n), *near = malloc(n);
  ts_status st = wet && rows && near ? TS_OK : ts_error(TS_ERR_NOMEM, "buq: out of memory");
  if (st == TS_OK) { /* the square around each wet cell, as rows then columns */
    for (size_t c = 0; c < n; c++)
      wet[c] = depth[c] > 0;
    for (int j = 0; j < ny; j++)
      dilate_line(wet + (size_t)nx * j, rows + (size_t)nx * j, nx, 1, margin);
    for (int i = 0; i < nx; i++)
      dilate_line(rows + i, near + i, ny, nx, margin);
    for (size_t c = 0; c < n; c++)
      if (near[c])
        target[c] = 1;
  }
  free(wet), free(rows), free(near);
  return st;
}

/* The index in a leaf field of the leaf cell holding finest cell (i, j), or -1. */
static int64_t leaf_cell(const ts_buq *q, int i, int j) {
  int k = ts_buq_find(q, i, j);
  if (k < 0)
    return -1;
  const ts_buq_block *b = &q->blocks[k];
  int span = q->block << b->level;
  int ci = (i - b->bi * span) >> b->level, cj = (j - b->bj * span) >> b->level;
  return (int64_t)k * q->block * q->block + ci + (int64_t)q->block * cj;
}

ts_status ts_buq_average(const ts_buq *q, const double *fine, double *cells) {
  int64_t n = ts_buq_cells(q);
  int *count = calloc((size_t)n, sizeof *count);
  if (!count)
    return ts_error(TS_ERR_NOMEM, "buq: out of memory for %lld cells", (long long)n);
  for (int64_t c = 0; c < n; c++)
    cells[c] = 0;
  for (int j = 0; j < q->ny; j++)
    for (int i = 0; i < q->nx; i++) {
      double v = fine[i + (int64_t)q->nx * j];
      int64_t c = v == v ? leaf_cell(q, i, j) : -1;
      if (c >= 0)
        cells[c] += v, count[c]++;
    }
  for (int64_t c = 0; c < n; c++)
    cells[c] = count[c] ? cells[c] / count[c] : NAN;
  free(count);
  return TS_OK;
}

ts_status ts_buq_resample(const ts_buq *q, const double *cells, int factor, double *out) {
  if (factor < 1 || (factor & (factor - 1)) || factor > (q->block << (q->levels - 1)))
    return ts_error(TS_ERR_INPUT,
                    "buq: resampling to cells %d finest cells wide: a power of two "
                    "up to a root block's %d",
                    factor, q->block << (q->levels - 1));
  int mx = (q->nx + factor - 1) / factor, my = (q->ny + factor - 1) / factor;
  for (int J = 0; J < my; J++)
    for (int I = 0; I < mx; I++) {
      double sum = 0;
      int count = 0;
      for (int j = J * factor; j < (J + 1) * factor && j < q->ny; j++)
        for (int i = I * factor; i < (I + 1) * factor && i < q->nx; i++) {
          int64_t c = leaf_cell(q, i, j);
          if (c >= 0 && cells[c] == cells[c])
            sum += cells[c], count++;
        }
      out[I + (int64_t)mx * J] = count ? sum / count : NAN;
    }
  return TS_OK;
}

ts_status ts_buq_partition(const ts_buq *q, const double *cost, int parts, int *first) {
  int n = q->nblocks;
  if (parts < 1 || parts > n)
    return ts_error(TS_ERR_INPUT, "buq: %d parts for %d blocks", parts, n);
  double total = 0;
  for (int k = 0; k < n; k++) {
    double c = cost ? cost[k] : 1;
    if (!(c > 0))
      return ts_error(TS_ERR_INPUT, "buq: block %d costs %g: costs must be positive", k, c);
    total += c;
  }
  first[0] = 0, first[parts] = n;
  double sum = 0; /* cost of the leaves before k */
  int k = 0;
  for (int p = 1; p < parts; p++) {
    double goal = total * p / parts;
    /* the cut nearest the goal, leaving at least one leaf to this part and each one after */
    while (k < n - (parts - p) && (k < first[p - 1] + 1 || sum + (cost ? cost[k] : 1) / 2 < goal))
      sum += cost ? cost[k] : 1, k++;
    first[p] = k;
  }
  return TS_OK;
}
