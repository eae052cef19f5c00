/* The passes over a window of cells in shared memory that the tile engine (swe_tiles.cu) and
 * the quadtree's plain leaves (swe_buq.cu) share: each cell reconstructed once per axis, then
 * the flux of every face between two cells with its pressure corrections and bed sources, with
 * the stage functions of swe_stage.h (the CPU sweep's passes). Included after swe_gpu.cuh. */
#ifndef TESSERA_SWE_WINDOW_CUH
#define TESSERA_SWE_WINDOW_CUH

/* A window's arrays (rows of a.row cells), the reconstructed sides of its cells along the axis
 * being computed, and the low cells' pressure corrections of its faces. */
struct window_t {
  swe_arrays a;
  ts_real *corr;
  side_t *lo, *hi;
};

/* A loop of the block's threads (1D or 2D blocks) over n items. */
#define WINDOW_FOR(e, n)                                                                           \
  for (int e = (int)(threadIdx.x + threadIdx.y * blockDim.x); e < (n);                             \
       e += (int)(blockDim.x * blockDim.y))

/* Reconstructs, along one axis, ALONG x LINES cells of a window with rows of ROW cells from cell
 * (lo_cell, lo_line) (along, across the axis); inactive cells get zero sides (faces ignore
 * them). */
template <int ALONG, int LINES, int ROW>
__device__ static void window_reconstruct(const window_t *t, const swe_consts *k, int x_axis,
                                          int lo_cell, int lo_line) {
  int step = x_axis ? 1 : ROW, corner_step = x_axis ? ROW : 1;
  WINDOW_FOR(n, ALONG * LINES) {
    int a = lo_cell + n % ALONG, b = lo_line + n / ALONG;
    int c = x_axis ? a + b * ROW : b + a * ROW;
    swe_side lo = {0, 0, 0, 0, 0}, hi = lo;
    if (t->a.active[c])
      swe_reconstruct_cell(&t->a, k, c, step, x_axis,
                           swe_face_bed(&t->a, c - step, step, corner_step),
                           swe_face_bed(&t->a, c, step, corner_step), &lo, &hi);
    t->lo[c] = side_pack(lo);
    t->hi[c] = side_pack(hi);
  }
}

/* The faces of one axis, ALONG x LINES from face (lo_face, lo_line), the face at c lying between
 * c - step and c: its flux, the low cell's pressure correction (corr), and the high cell's
 * correction plus its bed source (src; less the correction of its high face later, as the CPU
 * sweep). Returns the largest wave speed of the faces that counts(a, b, c, step) accepts. */
template <int ALONG, int LINES, int ROW, typename Counts>
__device__ static ts_real window_faces(const window_t *t, const swe_consts *k, int x_axis,
                                       int lo_face, int lo_line, Counts counts) {
  int step = x_axis ? 1 : ROW;
  ts_real *const *flux = x_axis ? t->a.fx : t->a.fy, *src = x_axis ? t->a.src_x : t->a.src_y;
  ts_real amax = 0;
  WINDOW_FOR(n, ALONG * LINES) {
    int a = lo_face + n % ALONG, b = lo_line + n / ALONG;
    int c = x_axis ? a + b * ROW : b + a * ROW, cl = c - step;
    int act_l = t->a.active[cl], act_h = t->a.active[c];
    swe_side lo_h = side_unpack(t->lo[c]);
    ts_real f[3], corr_l, corr_h;
    ts_real speed =
        swe_face_between(k, act_l, act_h, side_unpack(t->hi[cl]), lo_h, f, &corr_l, &corr_h);
    flux[0][c] = f[0], flux[1][c] = f[1], flux[2][c] = f[2];
    t->corr[c] = corr_l;
    src[c] = act_h ? corr_h + swe_bed_source(lo_h, side_unpack(t->hi[c]), k->g) : SWE_R(0);
    if (counts(a, b, c, step))
      amax = swe_max(amax, speed);
  }
  return amax;
}

#endif
