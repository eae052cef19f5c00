/* Block-uniform quadtree grids (tessera/buq.h), on a 300 x 200 domain (no block size divides it)
 * with a NODATA lake and an island of data inside it:
 *  1. One level is the uniform grid of M x M blocks: every block holding data, none other, each
 *     valid cell in exactly one block.
 *  2. Three levels of M = 16 and four of M = 8, the cell width wanted growing with the distance
 * from a river line (1 near it, 8 far away), and a corner asking for nothing: every valid cell lies
 * in exactly one leaf, no leaf lacks data, no cell is wider than wanted, every two leaves that
 *     touch (across a side or a corner) differ by at most one level, the leaves are in Morton
 *     order, and each leaf's neighbour links agree with a brute-force search of the cells just
 *     across each side and corner (same level, coarser, finer, none) and with the neighbour's
 *     own links back. Counts per level add up.
 *  3. Partitions along the Morton order: contiguous, every part non-empty, each part's cost
 *     within one block's cost of the ideal share, for unit and uneven costs.
 *  4. Fields on the leaves: a DEM (NaN in the lake) averaged onto the leaves and resampled to the
 *     finest grid gives each valid cell the mean of the valid cells of its leaf cell (the DEM
 *     itself on level 0), keeps the DEM's sum over every fully valid leaf cell to rounding, and
 *     resampled to cells 2 and 4 finest cells wide equals the DEM's own mean over those cells
 *     where every finest cell is valid and lies in a leaf no coarser than them; NaN where no
 *     valid cell is.
 *  5. What a grid is refined for, against brute force: sizes in metres to the widest power of
 *     two no wider (12 m on 5 m cells: 2), slopes above a threshold (a cliff and a NaN hole), and
 *     a margin of 3 cells around water; each narrows what the target holds.
 *  6. Bad arguments are refused with a message (block 12, 9 levels, no data, more parts than
 *     blocks, a cost of 0, resampling to 3 cells). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/buq.h"
#include "unit/check.h"

enum { NX = 300, NY = 200 };

static unsigned char valid[NX * NY];
static double target[NX * NY];

static void make_domain(void) {
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      double lake = hypot(i - 200.0, j - 120.0), island = hypot(i - 205.0, j - 118.0);
      valid[i + NX * j] = !(lake < 40 && island > 8);
      double river = fabs(j - (60 + 0.3 * i)); /* distance from the river line */
      target[i + NX * j] = river < 10 ? 1 : river < 30 ? 2 : river < 60 ? 4 : 8;
      if (i > 260 && j > 170)
        target[i + NX * j] = NAN; /* asks nothing */
    }
}

/* Finest-cell extent of leaf b: [x0, x1) x [y0, y1). */
static void extent(const ts_buq *q, const ts_buq_block *b, int *x0, int *x1, int *y0, int *y1) {
  int w = q->block << b->level;
  *x0 = b->bi * w, *x1 = *x0 + w, *y0 = b->bj * w, *y1 = *y0 + w;
}

/* Every valid cell covered once, and ts_buq_find agrees; no leaf without data. */
static int coverage(const ts_buq *q) {
  int *owner = malloc(sizeof(int) * NX * NY), ok = 1;
  for (int c = 0; c < NX * NY; c++)
    owner[c] = -1;
  for (int k = 0; k < q->nblocks; k++) {
    int x0, x1, y0, y1, any = 0;
    extent(q, &q->blocks[k], &x0, &x1, &y0, &y1);
    for (int j = y0; j < y1 && j < NY; j++)
      for (int i = x0; i < x1 && i < NX; i++) {
        ok &= owner[i + NX * j] == -1;
        owner[i + NX * j] = k;
        any |= valid[i + NX * j];
      }
    ok &= any;
  }
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      int c = i + NX * j;
      ok &= !valid[c] || owner[c] >= 0;
      ok &= ts_buq_find(q, i, j) == owner[c] ||
            (owner[c] >= 0 && !valid[c] && ts_buq_find(q, i, j) == owner[c]);
    }
  free(owner);
  return ok;
}

/* The leaf holding finest cell (i, j) by brute force, -1 when none. */
static int holder(const ts_buq *q, int i, int j) {
  for (int k = 0; k < q->nblocks; k++) {
    int x0, x1, y0, y1;
    extent(q, &q->blocks[k], &x0, &x1, &y0, &y1);
    if (i >= x0 && i < x1 && j >= y0 && j < y1)
      return k;
  }
  return -1;
}

static int contains(const int *list, int n, int v) {
  for (int k = 0; k < n; k++)
    if (list[k] == v)
      return 1;
  return 0;
}

/* The leaves touching leaf k across side or corner d, by brute force over the cells just across
 * it (the whole side's length); their count. */
static int touching(const ts_buq *q, int k, int d, int *out) {
  static const int dirs[8][2] = {{-1, 0},  {1, 0},  {0, -1}, {0, 1},
                                 {-1, -1}, {1, -1}, {-1, 1}, {1, 1}};
  int x0, x1, y0, y1, n = 0;
  extent(q, &q->blocks[k], &x0, &x1, &y0, &y1);
  int dx = dirs[d][0], dy = dirs[d][1];
  int xa = dx < 0 ? x0 - 1 : dx > 0 ? x1 : x0, xb = dx == 0 ? x1 - 1 : xa;
  int ya = dy < 0 ? y0 - 1 : dy > 0 ? y1 : y0, yb = dy == 0 ? y1 - 1 : ya;
  for (int j = ya; j <= yb; j++)
    for (int i = xa; i <= xb; i++) {
      int h = i >= 0 && j >= 0 ? holder(q, i, j) : -1;
      if (h >= 0 && !contains(out, n, h))
        out[n++] = h;
    }
  return n;
}

static void check_tree(int block, int levels) {
  ts_buq q;
  ts_status st = ts_buq_build(&q, NX, NY, block, levels, valid, target);
  CHECK(st == TS_OK, "M = %d, %d levels: built (%s)", block, levels,
        st == TS_OK ? "ok" : ts_error_message());
  if (st != TS_OK)
    return;
  int64_t cells = 0;
  int blocks = 0;
  for (int l = 0; l < levels; l++)
    blocks += q.blocks_per_level[l], cells += q.cells_per_level[l];
  CHECK(blocks == q.nblocks && cells == ts_buq_cells(&q) && q.blocks_per_level[0] > 0 &&
            q.blocks_per_level[levels - 1] > 0,
        "M = %d: %d blocks (levels 0..%d: %d .. %d), %lld cells against %d uniform", block,
        q.nblocks, levels - 1, q.blocks_per_level[0], q.blocks_per_level[levels - 1],
        (long long)cells, NX * NY);
  CHECK(coverage(&q), "M = %d: every valid cell in exactly one leaf; no leaf without data", block);
  int wide = 0, order = 1, balanced = 1, links = 1, back = 1;
  for (int k = 0; k < q.nblocks; k++) {
    const ts_buq_block *b = &q.blocks[k];
    int x0, x1, y0, y1;
    extent(&q, b, &x0, &x1, &y0, &y1);
    for (int j = y0; j < y1 && j < NY; j++)
      for (int i = x0; i < x1 && i < NX; i++)
        wide += valid[i + NX * j] && (1 << b->level) > target[i + NX * j];
    if (k > 0) { /* Morton order of the lower-left corners */
      const ts_buq_block *a = &q.blocks[k - 1];
      uint64_t ka = 0, kb = 0;
      for (int bit = 0; bit < 20; bit++) {
        ka |= (uint64_t)(((a->bi << a->level) >> bit) & 1) << (2 * bit) |
              (uint64_t)(((a->bj << a->level) >> bit) & 1) << (2 * bit + 1);
        kb |= (uint64_t)(((b->bi << b->level) >> bit) & 1) << (2 * bit) |
              (uint64_t)(((b->bj << b->level) >> bit) & 1) << (2 * bit + 1);
      }
      order &= ka < kb;
    }
    for (int d = 0; d < 8; d++) {
      int found[64], n = touching(&q, k, d, found);
      const int *linked = d < 4 ? b->side[d] : &b->corner[d - 4];
      ts_buq_relation rel = d < 4 ? b->side_relation[d] : b->corner_relation[d - 4];
      int nl = d < 4 ? 2 : 1, count = 0;
      for (int m = 0; m < n; m++) {
        int dl = q.blocks[found[m]].level - b->level;
        balanced &= dl >= -1 && dl <= 1;
        ts_buq_relation want = dl == 0 ? TS_BUQ_SAME : dl > 0 ? TS_BUQ_COARSER : TS_BUQ_FINER;
        links &= rel == want && contains(linked, nl, found[m]);
      }
      for (int m = 0; m < nl; m++)
        count += linked[m] >= 0;
      links &= count == n && (n > 0) == (rel != TS_BUQ_NONE);
      for (int m = 0; m < nl; m++) { /* the neighbour links back across the opposite side */
        if (linked[m] < 0)
          continue;
        const ts_buq_block *o = &q.blocks[linked[m]];
        int od = d < 4 ? d ^ 1 : 4 + (3 - (d - 4));
        const int *olist = od < 4 ? o->side[od] : &o->corner[od - 4];
        back &= contains(olist, od < 4 ? 2 : 1, k) || (d >= 4 && rel == TS_BUQ_COARSER) ||
                (d >= 4 && o->corner_relation[od - 4] == TS_BUQ_COARSER);
      }
    }
  }
  CHECK(wide == 0, "M = %d: no valid cell wider than wanted (%d are)", block, wide);
  CHECK(order, "M = %d: the leaves in Morton order of their lower-left corners", block);
  CHECK(balanced, "M = %d: touching leaves differ by at most one level (sides and corners)", block);
  CHECK(links, "M = %d: every side's and corner's links and relations equal a brute-force search",
        block);
  CHECK(back,
        "M = %d: neighbours link back across the opposite side (and corner, where both are "
        "on one level)",
        block);

  double *cost = malloc(sizeof(double) * q.nblocks);
  for (int k = 0; k < q.nblocks; k++)
    cost[k] = 1 + (q.blocks[k].level == 0 ? 3 : 0) + (k % 7 == 0);
  for (int uneven = 0; uneven < 2; uneven++)
    for (int parts = 1; parts <= 7; parts += 3) {
      int first[8], ok = ts_buq_partition(&q, uneven ? cost : NULL, parts, first) == TS_OK;
      double total = 0, worst = 0, most = 0;
      for (int k = 0; k < q.nblocks; k++)
        total += uneven ? cost[k] : 1, most = fmax(most, uneven ? cost[k] : 1);
      ok &= first[0] == 0 && first[parts] == q.nblocks;
      for (int p = 0; ok && p < parts; p++) {
        double c = 0;
        ok &= first[p + 1] > first[p];
        for (int k = first[p]; k < first[p + 1]; k++)
          c += uneven ? cost[k] : 1;
        worst = fmax(worst, fabs(c - total / parts));
      }
      CHECK(ok && worst <= most,
            "M = %d, %s costs, %d parts: contiguous, non-empty, each within "
            "%.1f of its share (one block: %.1f)",
            block, uneven ? "uneven" : "unit", parts, worst, most);
    }
  free(cost);
  ts_buq_destroy(&q);
}

static double dem[NX * NY];

static void check_fields(void) {
  ts_buq q;
  if (ts_buq_build(&q, NX, NY, 8, 4, valid, target) != TS_OK)
    return;
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++)
      dem[i + NX * j] = valid[i + NX * j] ? 100 + 0.37 * i - 0.21 * j + sin(0.3 * i) : NAN;
  double *cells = malloc(sizeof(double) * (size_t)ts_buq_cells(&q));
  double *fine = malloc(sizeof(double) * NX * NY), *coarse = malloc(sizeof(double) * NX * NY);
  int ok = ts_buq_average(&q, dem, cells) == TS_OK && ts_buq_resample(&q, cells, 1, fine) == TS_OK;
  double worst_mean = 0, worst_sum = 0;
  int nan_ok = 1;
  for (int j = 0; ok && j < NY; j++)
    for (int i = 0; i < NX; i++) {
      int k = ts_buq_find(&q, i, j);
      if (k < 0)
        continue;
      int l = q.blocks[k].level, x0 = i >> l << l, y0 = j >> l << l, n = 0;
      double sum = 0;
      for (int y = y0; y < y0 + (1 << l) && y < NY; y++)
        for (int x = x0; x < x0 + (1 << l) && x < NX; x++)
          if (valid[x + NX * y])
            sum += dem[x + NX * y], n++;
      if (!n) {
        nan_ok &= isnan(fine[i + NX * j]);
        continue;
      }
      worst_mean = fmax(worst_mean, fabs(fine[i + NX * j] - sum / n));
      if (n == 1 << (2 * l) && i == x0 && j == y0) /* a fully valid leaf cell keeps its sum */
        worst_sum = fmax(worst_sum, fabs(fine[i + NX * j] * n - sum) / fabs(sum));
    }
  CHECK(ok && worst_mean < 1e-12 && worst_sum < 1e-14 && nan_ok,
        "fields: the DEM averaged on the leaves and resampled to the finest grid: each cell its "
        "leaf cell's mean (%.1e), sums kept (%.1e), NaN where no valid cell",
        worst_mean, worst_sum);
  for (int f = 2; f <= 4; f *= 2) {
    double worst = 0;
    int compared = 0, rc = ts_buq_resample(&q, cells, f, coarse) == TS_OK;
    for (int J = 0; rc && J < NY / f; J++)
      for (int I = 0; I < NX / f; I++) {
        double sum = 0;
        int full = 1;
        for (int y = J * f; y < (J + 1) * f; y++)
          for (int x = I * f; x < (I + 1) * f; x++) {
            int k = ts_buq_find(&q, x, y);
            full &= valid[x + NX * y] && k >= 0 && (1 << q.blocks[k].level) <= f;
            sum += dem[x + NX * y];
          }
        if (full)
          worst = fmax(worst, fabs(coarse[I + (NX + f - 1) / f * J] - sum / (f * f))), compared++;
      }
    CHECK(rc && worst < 1e-12 && compared > 100,
          "fields: resampled to cells %d wide, the DEM's mean over %d fully resolved cells (%.1e)",
          f, compared, worst);
  }
  CHECK(ts_buq_resample(&q, cells, 3, coarse) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "power of two"),
        "resampling to cells 3 wide refused: %s", ts_error_message());
  free(cells), free(fine), free(coarse);
  ts_buq_destroy(&q);
}

static void check_wants(void) {
  enum { W = 40, H = 30 };
  static double sizes[W * H], bed[W * H], depth[W * H], t[W * H];
  for (int c = 0; c < W * H; c++) {
    int i = c % W, j = c / W;
    sizes[c] = i < 10 ? 4.0 : i < 20 ? 12.0 : i < 30 ? 41.0 : NAN;
    bed[c] = (i >= 25 ? 3.0 : 0.1 * i) + (i == 5 && j == 5 ? NAN : 0);
    depth[c] = (i == 8 && j == 20) || (i == 39 && j == 0) ? 0.5 : 0;
    t[c] = INFINITY;
  }
  t[3] = 1; /* an earlier wish stays */
  ts_buq_want_sizes(W, H, sizes, 5.0, t);
  int ok = t[3] == 1;
  for (int c = 4; c < W * H; c++) {
    int i = c % W;
    double want = i < 10 ? 1 : i < 20 ? 2 : i < 30 ? 8 : INFINITY;
    ok &= t[c] == want;
  }
  CHECK(ok, "wanted sizes: 4, 12 and 41 m on 5 m cells ask for widths 1, 2 and 8; NaN for none");
  for (int c = 0; c < W * H; c++)
    t[c] = INFINITY;
  ts_buq_want_slopes(W, H, bed, 5.0, 0.05, t);
  ok = 1;
  for (int c = 0; c < W * H; c++) {
    int i = c % W;
    int cliff = i == 24 || i == 25; /* 0.6 m over one 5 m cell: 0.12 > 0.05; 0.1 / 5 elsewhere */
    ok &= isnan(bed[c]) ? isinf(t[c]) : (t[c] == 1) == cliff;
  }
  CHECK(ok, "slopes above 0.05: the two columns at the cliff, not the gentle bed or the NaN hole");
  for (int c = 0; c < W * H; c++)
    t[c] = INFINITY;
  ok = ts_buq_want_water(W, H, depth, 3, t) == TS_OK;
  for (int c = 0; c < W * H; c++) {
    int i = c % W, j = c / W;
    int near = (abs(i - 8) <= 3 && abs(j - 20) <= 3) || (i >= 36 && j <= 3);
    ok &= (t[c] == 1) == near;
  }
  CHECK(ok, "water: the finest level within 3 cells of the wet cells (one at a corner)");
}

int main(void) {
  make_domain();
  check_wants();
  ts_buq q;
  ts_status st = ts_buq_build(&q, NX, NY, 16, 1, valid, target);
  int blocks = 0;
  for (int bj = 0; bj * 16 < NY; bj++)
    for (int bi = 0; bi * 16 < NX; bi++) {
      int any = 0;
      for (int j = bj * 16; j < bj * 16 + 16 && j < NY; j++)
        for (int i = bi * 16; i < bi * 16 + 16 && i < NX; i++)
          any |= valid[i + NX * j];
      blocks += any;
    }
  CHECK(st == TS_OK && q.nblocks == blocks && q.blocks_per_level[0] == blocks && coverage(&q),
        "one level: the %d blocks of 16 x 16 cells holding data (%d), each valid cell once", blocks,
        st == TS_OK ? q.nblocks : -1);
  if (st == TS_OK)
    ts_buq_destroy(&q);

  check_tree(16, 3);
  check_tree(8, 4);
  check_fields();

  CHECK(ts_buq_build(&q, NX, NY, 12, 3, valid, target) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "block"),
        "block 12 refused: %s", ts_error_message());
  CHECK(ts_buq_build(&q, NX, NY, 16, 9, valid, target) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "levels"),
        "9 levels refused: %s", ts_error_message());
  static unsigned char none[NX * NY];
  CHECK(ts_buq_build(&q, NX, NY, 16, 3, none, target) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "data"),
        "a domain without data refused: %s", ts_error_message());
  if (ts_buq_build(&q, NX, NY, 16, 2, valid, NULL) == TS_OK) {
    int first[3];
    double zero[1024] = {0};
    CHECK(ts_buq_partition(&q, NULL, q.nblocks + 1, first) == TS_ERR_INPUT,
          "more parts than blocks refused: %s", ts_error_message());
    CHECK(ts_buq_partition(&q, zero, 2, first) == TS_ERR_INPUT, "a cost of 0 refused: %s",
          ts_error_message());
    CHECK(q.blocks_per_level[0] == 0, "no target: only the coarsest level (%d blocks at level 0)",
          q.blocks_per_level[0]);
    ts_buq_destroy(&q);
  }
  return failures != 0;
}
