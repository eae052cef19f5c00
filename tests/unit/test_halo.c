/* The halo engine and decompositions in 3D, as the lattice Boltzmann module will use them: an
 * uneven 11 x 7 x 6 grid in 2 x 2 x 2 boxes, five components of which only some cross each face
 * (direction masks), windows one cell wider than the owned boxes. Every halo cell must receive
 * exactly the owner's values of the components that cross towards it and keep the others, across
 * periodic boundaries too (windows past the grid's edges, and one subdomain feeding itself); a
 * migration plan between two splits must move every owned cell. Also checks the splits, and
 * transfers named as links (patches in per-subdomain slots, as quadtree blocks are kept): each
 * linked cell gets its source's values, every other cell keeps its own. */
#include <stdlib.h>
#include <string.h>

#include "tessera/halo.h"
#include "unit/check.h"
#include "unit/halo_grid.h"

/* Box b grown by `by` cells, clipped to the grid along the axes that are not periodic. */
static ts_box grow(const ts_box *b, int by, const int periodic[3]) {
  ts_box w = *b;
  int n[3] = {NX, NY, NZ};
  for (int a = 0; a < 3; a++) {
    w.lo[a] = b->lo[a] - by < 0 && !periodic[a] ? 0 : b->lo[a] - by;
    w.hi[a] = b->hi[a] + by > n[a] && !periodic[a] ? n[a] : b->hi[a] + by;
  }
  return w;
}

static void describe(sub_data *d, const uint32_t *mask, ts_halo_field *f) {
  memset(f, 0, sizeof *f);
  f->ncomp = NCOMP;
  f->elem = sizeof(double);
  for (int c = 0; c < NCOMP; c++)
    f->comp[c] = d->comp[c];
  f->stride[0] = 1;
  f->stride[1] = d->win.hi[0] - d->win.lo[0];
  f->stride[2] = f->stride[1] * (d->win.hi[1] - d->win.lo[1]);
  memcpy(f->lo, d->win.lo, sizeof f->lo);
  f->dir_mask = mask;
}

/* Allocates each subdomain's window (own box grown by `by`), owned cells set, the rest -1. */
static void fill(const ts_decomp *dc, int by, const int periodic[3], sub_data *subs) {
  for (int s = 0; s < dc->count; s++) {
    subs[s].win = grow(&dc->boxes[s], by, periodic);
    for (int c = 0; c < NCOMP; c++) {
      subs[s].comp[c] = malloc(sizeof(double) * (size_t)ts_box_cells(&subs[s].win));
      const ts_box *w = &subs[s].win;
      for (int z = w->lo[2]; z < w->hi[2]; z++)
        for (int y = w->lo[1]; y < w->hi[1]; y++)
          for (int x = w->lo[0]; x < w->hi[0]; x++) {
            int cell[3] = {x, y, z};
            *at(&subs[s], c, x, y, z) =
                ts_box_contains(&dc->boxes[s], cell) ? value(c, x, y, z) : -1;
          }
    }
  }
}

static void release(sub_data *subs, int n) {
  for (int s = 0; s < n; s++)
    for (int c = 0; c < NCOMP; c++)
      free(subs[s].comp[c]);
}

/* Exchanges the halos of windows one cell wider than the boxes of dc, periodic along the axes
 * where period[a] > 0, and returns halo_values_wrong's count (-1 when the plan fails). */
static long exchange_and_count(const ts_decomp *dc, const int period[3], const uint32_t *mask,
                               long *received) {
  sub_data subs[COUNT];
  ts_halo_field fields[COUNT];
  ts_box windows[COUNT];
  int ranks[COUNT] = {0};
  fill(dc, 1, period, subs);
  for (int s = 0; s < dc->count; s++) {
    describe(&subs[s], mask, &fields[s]);
    windows[s] = subs[s].win;
  }
  ts_halo_spec spec = {.nsub = dc->count,
                       .sub_rank = ranks,
                       .src = dc->boxes,
                       .dst = windows,
                       .dst_owned = dc->boxes,
                       .period = {period[0], period[1], period[2]},
                       .nfields = 1,
                       .layout = fields};
  ts_halo_plan *plan;
  long wrong = -1;
  *received = 0;
  if (ts_halo_plan_create(&plan, ts_comm_world(), &spec) == TS_OK) {
    ts_halo_start(plan, fields, fields);
    ts_halo_finish(plan, fields);
    ts_halo_plan_destroy(plan);
    wrong = halo_values_wrong(dc, subs, mask, NULL, 0, received);
  }
  release(subs, dc->count);
  return wrong;
}

/* Links: two subdomains of 5 slots of 3 x 3 cells (x, y within a slot, z the slot), 2
 * components; subdomain 1's slots 3 and 4 take the inner cell rows 1..2 x 1..2 of subdomain 0's
 * slots 0 and 1 (one link, shift 3), subdomain 0's slot 4 takes subdomain 1's slot 2 (shift 2). */
static void links(void) {
  enum { S = 3, SLOTS = 5, CELLS = S * S * SLOTS };
  float data[2][2][CELLS]; /* [subdomain][component][cell] */
  for (int d = 0; d < 2; d++)
    for (int c = 0; c < 2; c++)
      for (int e = 0; e < CELLS; e++)
        data[d][c][e] = (float)(1000 * d + 100 * c + e);
  ts_halo_field fields[2];
  for (int d = 0; d < 2; d++) {
    fields[d] = (ts_halo_field){.ncomp = 2, .elem = sizeof(float), .stride = {1, S, S * S}};
    fields[d].comp[0] = data[d][0], fields[d].comp[1] = data[d][1];
  }
  ts_halo_link list[2] = {{.src = 0, .dst = 1, .box = {{1, 1, 3}, {3, 3, 5}}, .shift = {0, 0, 3}},
                          {.src = 1, .dst = 0, .box = {{1, 1, 4}, {3, 3, 5}}, .shift = {0, 0, 2}}};
  int ranks[2] = {0, 0};
  ts_halo_spec spec = {
      .nsub = 2, .sub_rank = ranks, .nfields = 1, .layout = fields, .nlinks = 2, .links = list};
  ts_halo_plan *plan = NULL;
  int ok = ts_halo_plan_create(&plan, ts_comm_self(), &spec) == TS_OK &&
           ts_halo_start(plan, fields, fields) == TS_OK && ts_halo_finish(plan, fields) == TS_OK;
  ts_halo_plan_destroy(plan);
  long wrong = 0, moved = 0;
  for (int d = 0; d < 2; d++)
    for (int c = 0; c < 2; c++)
      for (int z = 0; z < SLOTS; z++)
        for (int y = 0; y < S; y++)
          for (int x = 0; x < S; x++) {
            int e = x + S * y + S * S * z, inner = x >= 1 && y >= 1, from_d = d, from_z = z;
            if (inner && d == 1 && z >= 3)
              from_d = 0, from_z = z - 3;
            if (inner && d == 0 && z == 4)
              from_d = 1, from_z = 2;
            float want = (float)(1000 * from_d + 100 * c + x + S * y + S * S * from_z);
            wrong += data[d][c][e] != want;
            moved += from_d != d;
          }
  CHECK(ok && wrong == 0 && moved == 24,
        "links between slots of two subdomains: %ld values moved, %ld wrong", moved, wrong);
}

int main(void) {
  int n[3] = {NX, NY, NZ};
  ts_decomp dc;
  CHECK(ts_decomp_create(&dc, 3, n, COUNT, TS_DECOMP_AUTO, NULL) == TS_OK, "auto split of 8");
  CHECK(dc.parts[0] == 2 && dc.parts[1] == 2 && dc.parts[2] == 2, "auto chose %d x %d x %d",
        dc.parts[0], dc.parts[1], dc.parts[2]);
  int64_t total = 0;
  for (int s = 0; s < COUNT; s++)
    total += ts_box_cells(&dc.boxes[s]);
  CHECK(total == NX * NY * NZ, "the boxes cover the grid: %lld cells", (long long)total);
  ts_decomp rows;
  CHECK(ts_decomp_create(&rows, 3, n, 4, TS_DECOMP_ROWS, NULL) == TS_OK && rows.parts[2] == 4,
        "rows of a 3D grid split along z");
  ts_decomp_destroy(&rows);
  CHECK(ts_decomp_create(&rows, 3, n, 12, TS_DECOMP_COLUMNS, NULL) == TS_ERR_INPUT,
        "12 columns of an 11-cell axis are refused: %s", ts_error_message());

  /* Direction masks: component 4 crosses every face, component c < 4 only towards directions
   * d with d % 4 == c. */
  uint32_t mask[TS_HALO_DIRS];
  for (int d = 0; d < TS_HALO_DIRS; d++)
    mask[d] = (1u << (d % 4)) | (1u << 4);
  sub_data subs[COUNT];
  int none[3] = {0, 0, 0};
  fill(&dc, 1, none, subs);
  ts_halo_field fields[COUNT];
  ts_box windows[COUNT];
  int ranks[COUNT] = {0};
  for (int s = 0; s < COUNT; s++) {
    describe(&subs[s], mask, &fields[s]);
    windows[s] = subs[s].win;
  }
  ts_halo_spec spec = {.nsub = COUNT,
                       .sub_rank = ranks,
                       .src = dc.boxes,
                       .dst = windows,
                       .dst_owned = dc.boxes,
                       .nfields = 1,
                       .layout = fields};
  ts_halo_plan *plan;
  CHECK(ts_halo_plan_create(&plan, ts_comm_world(), &spec) == TS_OK, "halo plan");
  ts_halo_start(plan, fields, fields);
  ts_halo_finish(plan, fields);
  long received = 0, wrong = halo_values_wrong(&dc, subs, mask, NULL, 0, &received);
  CHECK(wrong == 0, "halo cells: %ld values received, %ld wrong", received, wrong);
  int64_t remote, local;
  ts_halo_volume(plan, &remote, &local);
  CHECK(remote == 0 && local > 0, "one process: %lld cells copied directly", (long long)local);
  CHECK(ts_halo_moves(plan), "a plan between neighbours moves cells");
  ts_halo_plan_destroy(plan);
  /* Periodic along every axis: windows reach past the grid's edges and get the wrapped cells. */
  int period[3] = {NX, NY, NZ};
  long got = 0;
  wrong = exchange_and_count(&dc, period, mask, &got);
  CHECK(wrong == 0 && got > received, "periodic: %ld values received, %ld wrong", got, wrong);
  /* one subdomain periodic along x and z: it feeds its own halos through the shifts */
  ts_decomp one;
  CHECK(ts_decomp_create(&one, 3, n, 1, TS_DECOMP_AUTO, NULL) == TS_OK, "one subdomain");
  int xz[3] = {NX, 0, NZ};
  wrong = exchange_and_count(&one, xz, mask, &got);
  CHECK(wrong == 0 && got > 0, "one subdomain periodic along x and z: %ld values, %ld wrong", got,
        wrong);
  ts_decomp_destroy(&one);
  ts_halo_spec alone = spec;
  alone.nsub = 1;
  CHECK(ts_halo_plan_create(&plan, ts_comm_world(), &alone) == TS_OK && !ts_halo_moves(plan),
        "one subdomain: the plan moves nothing");
  ts_halo_plan_destroy(plan);

  /* Migration: move the face between subdomains 0 and 1 (neighbours along x) by 2 cells. */
  ts_decomp moved;
  ts_decomp_copy(&moved, &dc);
  CHECK(ts_decomp_move_boundary(&moved, 0, 1, 2) == TS_OK, "move the boundary of 0 and 1 by 2");
  CHECK(ts_decomp_move_boundary(&moved, 0, 3, 1) == TS_ERR_INPUT, "0 and 3 share no face: %s",
        ts_error_message());
  sub_data after[COUNT];
  fill(&moved, 0, none, after);
  for (int s = 0; s < COUNT; s++)
    for (int c = 0; c < NCOMP; c++) /* forget the values: they must come from the old owners */
      for (int64_t e = 0; e < ts_box_cells(&after[s].win); e++)
        after[s].comp[c][e] = -1;
  ts_halo_field to[COUNT];
  for (int s = 0; s < COUNT; s++)
    describe(&after[s], NULL, &to[s]);
  for (int s = 0; s < COUNT; s++)
    fields[s].dir_mask = NULL;
  ts_halo_spec migrate = {.nsub = COUNT,
                          .sub_rank = ranks,
                          .src = dc.boxes,
                          .dst = moved.boxes,
                          .include_self = 1,
                          .nfields = 1,
                          .layout = to};
  CHECK(ts_halo_plan_create(&plan, ts_comm_world(), &migrate) == TS_OK, "migration plan");
  ts_halo_start(plan, fields, to);
  ts_halo_finish(plan, to);
  ts_halo_plan_destroy(plan);
  wrong = 0;
  for (int s = 0; s < COUNT; s++) {
    const ts_box *w = &after[s].win;
    for (int z = w->lo[2]; z < w->hi[2]; z++)
      for (int y = w->lo[1]; y < w->hi[1]; y++)
        for (int x = w->lo[0]; x < w->hi[0]; x++)
          for (int c = 0; c < NCOMP; c++)
            wrong += *at(&after[s], c, x, y, z) != value(c, x, y, z);
  }
  CHECK(wrong == 0,
        "after migration every owned value is in place (%ld wrong); subdomain 0 has "
        "%lld cells, was %lld",
        wrong, (long long)ts_box_cells(&moved.boxes[0]), (long long)ts_box_cells(&dc.boxes[0]));
  release(subs, COUNT);
  release(after, COUNT);
  ts_decomp_destroy(&moved);
  ts_decomp_destroy(&dc);
  links();
  return failures != 0;
}
