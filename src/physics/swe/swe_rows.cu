/* The row engine of the shallow-water CUDA backend (swe_gpu.cuh), compiled once per precision:
 * a warp per strip of columns, marching up the rows with the cells in registers. */
#include "physics/swe/swe_gpu.cuh"

/* ------------------------------------------------------------------ the row engine
 *
 * A warp computes a stage on a strip of ROW_OUT columns and a segment of rows, marching up the
 * rows with the cells in registers: each lane holds one column of the strip or of its ring of
 * RING columns on either side (ROW_OUT = 32 - 2 RING). Neighbours along x come from the next
 * lanes (warp shuffles), neighbours along y from the rows the lane keeps. The iteration that
 * loads row t reconstructs row t - 1 along y and computes the face below it, reconstructs row
 * t - 2 along x and computes its faces, the limiter of row t - 2 and the update of row t - 3,
 * each with the stage functions of swe_stage.h on windows of a few registers: the same values
 * as the CPU sweep, without shared memory or block barriers. Lanes whose ring reaches past the
 * warp compute values nobody uses. */
#define ROW_OUT (32 - 2 * RING)
#define ROW_WARPS 4
/* blocks per multiprocessor: float at most 128 registers (5.28 Gcells/s at 8192^2 on an H100,
 * against 4.90 with the 149 the compiler takes); double keeps its registers */
#if TS_REAL_DOUBLE
#define ROW_MIN_BLOCKS 1
#else
#define ROW_MIN_BLOCKS 4
#endif
static const dim3 row_threads(32, ROW_WARPS);

/* A loaded cell: state, bed, velocities, characteristic speed, activity, and whether it lies in
 * the window in an early-exit tile that is computed. */
struct rcell_t {
  ts_real w, hu, hv, bed, u, v, cs;
  int act, on;
};

__device__ static inline ts_real from_right(ts_real v) {
  return __shfl_down_sync(0xffffffffu, v, 1);
}
__device__ static inline ts_real from_left(ts_real v) { return __shfl_up_sync(0xffffffffu, v, 1); }
__device__ static inline int from_right(int v) { return __shfl_down_sync(0xffffffffu, v, 1); }
__device__ static inline int from_left(int v) { return __shfl_up_sync(0xffffffffu, v, 1); }

/* The cell of the next lane to the right (dir 1) or left (dir -1). */
__device__ static inline rcell_t rcell_next(rcell_t c, int dir) {
  rcell_t n;
  n.w = dir > 0 ? from_right(c.w) : from_left(c.w);
  n.hu = dir > 0 ? from_right(c.hu) : from_left(c.hu);
  n.hv = dir > 0 ? from_right(c.hv) : from_left(c.hv);
  n.bed = dir > 0 ? from_right(c.bed) : from_left(c.bed);
  n.u = dir > 0 ? from_right(c.u) : from_left(c.u);
  n.v = dir > 0 ? from_right(c.v) : from_left(c.v);
  n.cs = dir > 0 ? from_right(c.cs) : from_left(c.cs);
  n.act = dir > 0 ? from_right(c.act) : from_left(c.act);
  n.on = dir > 0 ? from_right(c.on) : from_left(c.on);
  return n;
}

/* The high side of the cell of the lane to the left (its implied bed is w - h). */
__device__ static inline swe_side side_from_left(swe_side s) {
  side_t p = side_pack(s);
  return side_unpack(side_t{from_left(p.w), from_left(p.h), from_left(p.u), from_left(p.v)});
}

/* Cell (i, j) of the part's window as loaded, before its velocities: state, bed, the bed of
 * its low corner, activity, early exit. */
struct rraw_t {
  ts_real w, hu, hv, bed, corner;
  int act, on;
};

/* Loads cell (i, j) as tile_load does (from `start` in skipped tiles of the second stage; cells
 * outside the padded layout are inactive). tx: the early-exit tile column of i. */
__device__ static inline rraw_t row_fetch(const swe_arrays *g, const swe_arrays *in,
                                          const swe_arrays *start, tiles_t tiles, int64_t origin,
                                          int nx, int ny, int i, int j, int tx) {
  int inside = i >= -SWE_GHOST && i <= nx + SWE_GHOST && j >= -SWE_GHOST && j <= ny + SWE_GHOST;
  int window = i >= 0 && i < nx && j >= 0 && j < ny;
  int on = window && tiles.on[tx + (j / tiles.size) * tiles.nx];
  const swe_arrays *from = start && window && !on ? start : in;
  int64_t c = origin + i + (int64_t)j * g->row;
  if (!inside)
    return rraw_t{0, 0, 0, 0, 0, 0, on};
  return rraw_t{from->w[c], from->hu[c], from->hv[c], g->bed[c], g->corner[c], g->active[c], on};
}

/* A loaded cell with its velocities (swe_cell_velocity on a window of one cell). */
__device__ static inline rcell_t row_cell(const swe_consts *k, rraw_t r) {
  ts_real w[1] = {r.w}, hu[1] = {r.hu}, hv[1] = {r.hv}, bed[1] = {r.bed}, u[1], v[1], cs[1];
  swe_arrays one = {};
  one.w = w, one.hu = hu, one.hv = hv, one.bed = bed, one.u = u, one.v = v, one.char_speed = cs;
  swe_cell_velocity(&one, k, 0);
  return rcell_t{r.w, r.hu, r.hv, r.bed, u[0], v[0], cs[0], r.act, r.on};
}

/* What the update of a cell reads of the output arrays and the flood maps, fetched an iteration
 * ahead: the state at the step's start, the surface carry, the friction coefficient, and the
 * maps (depth, speed, arrival, surface, duration, hazard). Fetched at the update instead, the
 * maps cost 11 % at 8192^2 float on an H100 (4.27 against 4.81 Gcells/s, same call). */
struct rkeep_t {
  ts_real w0, hu0, hv0, carry, friction;
  double max_h, max_speed, arrival, max_eta, duration, hazard;
};

__device__ static inline rkeep_t row_fetch_kept(const swe_arrays *out, const swe_maps *m, int64_t c,
                                                int maxima) {
  rkeep_t r = {};
  r.w0 = out->w0[c], r.hu0 = out->hu0[c], r.hv0 = out->hv0[c], r.carry = out->w_carry[c];
  r.friction = out->friction ? out->friction[c] : SWE_R(0);
  if (maxima)
    r.max_h = m->h[c], r.max_speed = m->speed[c], r.arrival = m->arrival[c], r.max_eta = m->eta[c],
    r.duration = m->duration[c], r.hazard = m->hazard[c];
  return r;
}

/* The sides of cell m along an axis, from its neighbours lo and hi (window_reconstruct: an
 * inactive cell gets zero sides). */
__device__ static inline void row_reconstruct(const swe_consts *k, rcell_t lo, rcell_t m,
                                              rcell_t hi, int x_axis, ts_real face_lo,
                                              ts_real face_hi, swe_side *s_lo, swe_side *s_hi) {
  *s_lo = *s_hi = swe_side{0, 0, 0, 0, 0};
  if (!m.act)
    return;
  int act[3] = {lo.act, m.act, hi.act};
  ts_real w[3] = {lo.w, m.w, hi.w}, bed[3] = {lo.bed, m.bed, hi.bed};
  ts_real hu[3] = {lo.hu, m.hu, hi.hu}, hv[3] = {lo.hv, m.hv, hi.hv};
  ts_real u[3] = {lo.u, m.u, hi.u}, v[3] = {lo.v, m.v, hi.v};
  if (x_axis)
    swe_reconstruct_mirrored(act, w, bed, hu, hv, u, v, k, face_lo, face_hi, s_lo, s_hi);
  else
    swe_reconstruct_mirrored(act, w, bed, hv, hu, v, u, k, face_lo, face_hi, s_lo, s_hi);
}

/* The face between a low cell (active act_a, high side hi_a) and a high cell (act_b, sides lo_b
 * and hi_b), as window_faces computes it: its flux, the low cell's pressure correction, and the
 * high cell's source before its own high face's correction. Returns the wave speed. */
__device__ static inline ts_real row_face(const swe_consts *k, int act_a, int act_b, swe_side hi_a,
                                          swe_side lo_b, swe_side hi_b, ts_real f[3],
                                          ts_real *corr_a, ts_real *src_b) {
  ts_real corr_b;
  ts_real speed = swe_face_between(k, act_a, act_b, hi_a, lo_b, f, corr_a, &corr_b);
  *src_b = act_b ? corr_b + swe_bed_source(lo_b, hi_b, k->g) : SWE_R(0);
  return speed;
}

/* Outflow limiter and speed cap of cell m (swe_drain_cell on a window of registers): mass
 * fluxes of its west, east, south and north faces, characteristic speeds of its neighbours. */
__device__ static inline void row_drain(const swe_consts *k, ts_real dt, rcell_t m, ts_real fx_w,
                                        ts_real fx_e, ts_real fy_s, ts_real fy_n, ts_real cs_w,
                                        ts_real cs_e, ts_real cs_s, ts_real cs_n, ts_real *drain,
                                        ts_real *cap) {
  ts_real fx[9] = {}, fy[9] = {}, cs[9] = {}, w[9] = {}, bed[9] = {}, dr[9] = {}, sc[9] = {};
  fx[4] = fx_w, fx[5] = fx_e, fy[4] = fy_s, fy[7] = fy_n;
  cs[1] = cs_s, cs[3] = cs_w, cs[4] = m.cs, cs[5] = cs_e, cs[7] = cs_n;
  w[4] = m.w, bed[4] = m.bed;
  swe_arrays a = {};
  a.fx[0] = fx, a.fy[0] = fy, a.char_speed = cs, a.w = w, a.bed = bed, a.drain = dr;
  a.speed_cap = sc, a.row = 3;
  swe_drain_cell(&a, k, 4, dt);
  *drain = dr[4];
  *cap = sc[4];
}

/* The fluxes, limiters and sources around cell m, for its update (a window of registers laid
 * out like the part's arrays with rows of 3, m at 4). */
struct row_window_t {
  ts_real w[9], hu[9], hv[9], bed[9], drain[9], cap[9], fx[3][9], fy[3][9], src_x[9], src_y[9];
};

/* Update of cell m of the second stage into `out` at c (swe_update_cell, on windows of
 * registers with what `kept` fetched), and its maxima where `maxima`; returns nonzero for a
 * non-finite value. */
__device__ static inline int row_update(const swe_arrays *out, const swe_consts *k,
                                        const swe_maps *m, int64_t c, ts_real dt, int stage,
                                        rcell_t cell, rkeep_t kept, int maxima,
                                        const ts_real fx_w[3], const ts_real fx_e[3],
                                        const ts_real fy_s[3], const ts_real fy_n[3], ts_real src_x,
                                        ts_real src_y, ts_real cap, ts_real d_w, ts_real d_e,
                                        ts_real d_s, ts_real d_n, ts_real d_m) {
  row_window_t r = {};
  r.w[4] = cell.w, r.hu[4] = cell.hu, r.hv[4] = cell.hv, r.bed[4] = cell.bed;
  r.drain[1] = d_s, r.drain[3] = d_w, r.drain[4] = d_m, r.drain[5] = d_e, r.drain[7] = d_n;
  r.cap[4] = cap, r.src_x[4] = src_x, r.src_y[4] = src_y;
  for (int q = 0; q < 3; q++) {
    r.fx[q][4] = fx_w[q], r.fx[q][5] = fx_e[q];
    r.fy[q][4] = fy_s[q], r.fy[q][7] = fy_n[q];
  }
  swe_arrays f = {};
  f.w = r.w, f.hu = r.hu, f.hv = r.hv, f.bed = r.bed, f.drain = r.drain, f.speed_cap = r.cap;
  f.src_x = r.src_x, f.src_y = r.src_y, f.row = 3;
  for (int q = 0; q < 3; q++)
    f.fx[q] = r.fx[q], f.fy[q] = r.fy[q];
  ts_real w[1], hu[1], hv[1], w0[1] = {kept.w0}, hu0[1] = {kept.hu0}, hv0[1] = {kept.hv0};
  ts_real carry[1] = {kept.carry}, fric[1] = {kept.friction};
  swe_arrays a = {};
  a.w = w, a.hu = hu, a.hv = hv, a.w0 = w0, a.hu0 = hu0, a.hv0 = hv0, a.w_carry = carry;
  a.friction = out->friction ? fric : NULL, a.start_kept = out->start_kept;
  int bad = swe_update_cell(&a, &f, k, 0, 4, dt, stage);
  out->w[c] = w[0], out->hu[c] = hu[0], out->hv[c] = hv[0], out->w_carry[c] = carry[0];
  if (maxima) {
    double h[1] = {kept.max_h}, sp[1] = {kept.max_speed}, arr[1] = {kept.arrival};
    double eta[1] = {kept.max_eta}, dur[1] = {kept.duration}, haz[1] = {kept.hazard};
    swe_maps one = *m;
    one.h = h, one.speed = sp, one.arrival = arr, one.eta = eta, one.duration = dur;
    one.hazard = haz;
    swe_record_cell(&one, 0, w[0], cell.bed, hu[0], hv[0]);
    if (dur[0] != kept.duration)
      m->duration[c] = dur[0];
    if (haz[0] != kept.hazard)
      m->hazard[c] = haz[0];
    if (h[0] != kept.max_h)
      m->h[c] = h[0];
    if (sp[0] != kept.max_speed)
      m->speed[c] = sp[0];
    if (!(arr[0] == kept.arrival) && !(isnan(arr[0]) && isnan(kept.arrival)))
      m->arrival[c] = arr[0];
    if (!(eta[0] == kept.max_eta) && !(isnan(eta[0]) && isnan(kept.max_eta)))
      m->eta[c] = eta[0];
  }
  return bad;
}

/* Whether an early-exit tile under cells [i0, i1) x [j0, j1) is computed (the whole warp). */
__device__ static int row_any_on(tiles_t tiles, int i0, int i1, int j0, int j1) {
  int tx0 = i0 / tiles.size, tx1 = (i1 - 1) / tiles.size;
  int ty0 = j0 / tiles.size, ty1 = (j1 - 1) / tiles.size;
  int n_x = tx1 - tx0 + 1, n = n_x * (ty1 - ty0 + 1), on = 0;
  for (int e = (int)threadIdx.x; e < n && !on; e += 32)
    on = tiles.on[tx0 + e % n_x + (ty0 + e / n_x) * tiles.nx];
  return __any_sync(0xffffffffu, on);
}

__device__ static inline int within(int x, int lo, int hi) { return x >= lo && x < hi; }

/* A stage on the cells of region r, SEG rows per warp. FUSED: the second stage whole (fluxes,
 * limiters, update from state `in` into `out`, maxima; k_stage's work). Otherwise the first
 * stage's fluxes, sources and characteristic speeds, stored, and its wave speeds (k_fluxes's
 * work). */
template <bool FUSED>
static __global__ void __launch_bounds__(32 * ROW_WARPS, ROW_MIN_BLOCKS)
    k_rows(swe_arrays in, swe_arrays out, swe_consts k, region_t r, region_t own, int64_t origin,
           int nx, int ny, swe_clock *clock, int stage, inflow_t inflow, tiles_t tiles,
           swe_maps maxima, swe_bits *amax, int seg) {
  int io0 = r.i0 + (int)(blockIdx.x * ROW_WARPS + threadIdx.y) * ROW_OUT;
  int jo0 = r.j0 + (int)blockIdx.y * seg;
  if (clock->idle || io0 >= r.i1)
    return;
  int io1 = min(io0 + ROW_OUT, r.i1), jo1 = min(jo0 + seg, r.j1);
  if (!row_any_on(tiles, io0, io1, jo0, jo1))
    return;
  int lane = (int)threadIdx.x, i = io0 - RING + lane;
  int tx = i >= 0 && i < nx ? i / tiles.size : 0;
  int mine = lane >= RING && i < io1; /* an output column */
  ts_real dt = FUSED ? (ts_real)clock->dt : SWE_R(0);
  maxima.t = clock->t_after;
  maxima.dt = clock->dt;
  const swe_arrays *start = FUSED && stage == 1 ? &out : NULL;
  ts_real q_in[4];
  for (int side = 0; side < 4; side++)
    q_in[side] = (ts_real)clock->qunit[stage][side];
  /* faces whose wave speeds count (k_fluxes's rule) */
  int cx0 = max(r.i0, own.i0), cx1 = min(r.i1, own.i1), cy0 = max(r.j0, own.j0);
  int cy1 = min(r.j1, own.j1);
  /* rows t - 1, t - 2, t - 3 and what the lane keeps of them */
  const rcell_t none = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  rcell_t c1 = none, c2 = none, c3 = none;
  ts_real corner1 = 0, corner2 = 0, ybed1 = 0;
  swe_side yh2 = {0, 0, 0, 0, 0};
  ts_real srcy_part2 = 0, srcy3 = 0, srcx3 = 0, d3 = 1, d4 = 1, cap3 = 0;
  ts_real fy2[3] = {0, 0, 0}, fy3[3] = {0, 0, 0}, fx3[3] = {0, 0, 0};
  ts_real ax = 0, ay = 0;
  int bad = 0;
  rraw_t next = row_fetch(&in, &in, start, tiles, origin, nx, ny, i, jo0 - RING, tx);
  rkeep_t kept3 = {}, kept2 = {};
  for (int t = jo0 - RING; t < jo1 + RING; t++) {
    rcell_t c0 = row_cell(&k, next);
    ts_real corner0 = next.corner;
    if (t + 1 < jo1 + RING) /* the next row's loads are in flight during this one */
      next = row_fetch(&in, &in, start, tiles, origin, nx, ny, i, t + 1, tx);
    /* row t - 1 along y and its low face (face t - 1, between rows t - 2 and t - 1) */
    ts_real ybed0 = swe_corner_mean(corner0, from_right(corner0));
    swe_side yl1, yh1;
    row_reconstruct(&k, c2, c1, c0, 0, ybed1, ybed0, &yl1, &yh1);
    ts_real fy1[3], corr_y, srcy_part1;
    ts_real sy = row_face(&k, c2.act, c1.act, yh2, yl1, yh1, fy1, &corr_y, &srcy_part1);
    ts_real srcy2 = srcy_part2 - corr_y;
    /* row t - 2 along x and the low faces of its cells */
    ts_real xbed = swe_corner_mean(corner2, corner1);
    rcell_t left2 = rcell_next(c2, -1), right2 = rcell_next(c2, 1);
    swe_side xl2, xh2;
    row_reconstruct(&k, left2, c2, right2, 1, xbed, from_right(xbed), &xl2, &xh2);
    ts_real fx2[3], corr_x, srcx_part2;
    ts_real sx =
        row_face(&k, left2.act, c2.act, side_from_left(xh2), xl2, xh2, fx2, &corr_x, &srcx_part2);
    ts_real srcx2 = srcx_part2 - from_right(corr_x);
    if (FUSED) {
      /* inflow sides: their boundary faces carry the prescribed discharge */
      int in_x = within(i, 0, nx), row2 = within(t - 2, 0, ny);
      if (inflow.any) {
        if (inflow.on[TS_SOUTH] && t - 1 == 0 && in_x && c1.act)
          fy1[0] = q_in[TS_SOUTH];
        if (inflow.on[TS_NORTH] && t - 1 == ny && in_x && c2.act)
          fy1[0] = -q_in[TS_NORTH];
        if (inflow.on[TS_WEST] && i == 0 && row2 && c2.act)
          fx2[0] = q_in[TS_WEST];
        if (inflow.on[TS_EAST] && i == nx && row2 && left2.act)
          fx2[0] = -q_in[TS_EAST];
      }
      /* limiter and speed cap of row t - 2 (1 outside the window, like the CPU's ghosts); the
       * neighbours' speeds are shuffled again rather than kept from left2 and right2, which
       * would hold two more registers across the faces (28 bytes of spills instead of 16) */
      ts_real fx_e = from_right(fx2[0]), cs_w = from_left(c2.cs), cs_e = from_right(c2.cs);
      ts_real d2 = SWE_R(1), cap2 = SWE_R(0);
      if (in_x && row2)
        row_drain(&k, dt, c2, fx2[0], fx_e, fy2[0], fy1[0], cs_w, cs_e, c3.cs, c1.cs, &d2, &cap2);
      /* update of row t - 3 */
      ts_real d_w = from_left(d3), d_e = from_right(d3);
      ts_real fx3_e[3] = {from_right(fx3[0]), from_right(fx3[1]), from_right(fx3[2])};
      int j = t - 3, own3 = within(i, own.i0, own.i1) && within(j, own.j0, own.j1);
      int updates2 = mine && within(j + 1, jo0, jo1) && c2.act && c2.on;
      int own2 = within(i, own.i0, own.i1) && within(j + 1, own.j0, own.j1);
      if (updates2) /* what the update of row t - 2 reads, in flight during this one */
        kept2 = row_fetch_kept(&out, &maxima, origin + i + (int64_t)(j + 1) * out.row, own2);
      if (mine && within(j, jo0, jo1) && c3.act && c3.on)
        bad |=
            row_update(&out, &k, &maxima, origin + i + (int64_t)j * out.row, dt, stage, c3, kept3,
                       own3, fx3, fx3_e, fy3, fy2, srcx3, srcy3, cap3, d_w, d_e, d4, d2, d3);
      d4 = d3, d3 = d2, cap3 = cap2, kept3 = kept2;
    } else {
      /* characteristic speeds of the strip and its first ring (for k_limit) */
      int j = t - 2;
      if (lane >= RING - 1 && i <= io1 && within(j, jo0 - 1, jo1 + 1) && within(i, 0, nx) &&
          within(j, 0, ny))
        out.char_speed[origin + i + (int64_t)j * out.row] = c2.cs;
      /* the x faces of the cells of row t - 2, their sources, their wave speeds */
      if (mine || (lane >= RING && i == io1)) {
        if (within(j, jo0, jo1)) {
          int64_t c = origin + i + (int64_t)j * out.row;
          out.fx[0][c] = fx2[0], out.fx[1][c] = fx2[1], out.fx[2][c] = fx2[2];
          if (i < io1)
            out.src_x[c] = srcx2;
          int counted = (i < r.i1 && c2.on) || (i > r.i0 && left2.on);
          if (counted && i >= cx0 && i <= cx1 && within(j, cy0, cy1))
            ax = swe_max(ax, sx);
        }
      }
      /* the y faces of row t - 1 (the low faces of its cells and the high face of the last),
       * and the y sources of row t - 2 */
      if (mine) {
        int f = t - 1;
        if (f >= jo0 && f <= jo1) {
          int64_t c = origin + i + (int64_t)f * out.row;
          out.fy[0][c] = fy1[0], out.fy[1][c] = fy1[1], out.fy[2][c] = fy1[2];
          int counted = (f < r.j1 && c1.on) || (f > r.j0 && c2.on);
          if (counted && f >= cy0 && f <= cy1 && within(i, cx0, cx1))
            ay = swe_max(ay, sy);
        }
        if (within(j, jo0, jo1))
          out.src_y[origin + i + (int64_t)j * out.row] = srcy2;
      }
    }
    c3 = c2, c2 = c1, c1 = c0;
    corner2 = corner1, corner1 = corner0, ybed1 = ybed0;
    yh2 = yh1, srcy_part2 = srcy_part1, srcy3 = srcy2, srcx3 = srcx2;
    for (int q = 0; q < 3; q++)
      fy3[q] = fy2[q], fy2[q] = fy1[q], fx3[q] = fx2[q];
  }
  if (FUSED) {
    if (__any_sync(0xffffffffu, bad) && lane == 0)
      clock->bad = 1;
  } else {
    block_max(ax, amax);
    block_max(ay, amax + 1);
  }
}

/* Blocks of k_rows over region r, and the rows per warp: the most (128 to 16) that still give
 * 64 warps per multiprocessor (measured on an H100 at 2048^2: 16 rows 3.80 Gcells/s, 32 rows
 * 3.63; fewer rows per warp add the ring rows to more segments, fewer warps hide less latency). */
static dim3 rows_for(region_t r, int sms, int *seg) {
  int w = r.i1 - r.i0, h = r.j1 - r.j0, strips = (w + ROW_OUT - 1) / ROW_OUT;
  *seg = 128;
  while (*seg > 16 && (int64_t)strips * ((h + *seg - 1) / *seg) < 64 * (int64_t)sms)
    *seg /= 2;
  return dim3((unsigned)((strips + ROW_WARPS - 1) / ROW_WARPS), (unsigned)((h + *seg - 1) / *seg));
}

void SWE_ROWS_STAGE(int fused, swe_arrays in, swe_arrays out, swe_consts k, region_t r,
                    region_t own, int64_t origin, int nx, int ny, swe_clock *clock, int stage,
                    inflow_t inflow, tiles_t tiles, swe_maps maxima, swe_bits *amax, int sms,
                    cudaStream_t stream) {
  int seg;
  dim3 blocks = rows_for(r, sms, &seg);
  if (fused)
    k_rows<true><<<blocks, row_threads, 0, stream>>>(in, out, k, r, own, origin, nx, ny, clock,
                                                     stage, inflow, tiles, maxima, amax, seg);
  else
    k_rows<false><<<blocks, row_threads, 0, stream>>>(in, out, k, r, own, origin, nx, ny, clock,
                                                      stage, inflow, tiles, maxima, amax, seg);
}
