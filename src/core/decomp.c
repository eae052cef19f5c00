/* Domain decomposition into boxes: the initial split, its weighting, ownership lookup, rank
 * mapping and moving the boundary between two neighbours. */
#include "tessera/decomp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t ts_box_cells(const ts_box *b) {
  int64_t n = 1;
  for (int a = 0; a < 3; a++)
    n *= b->hi[a] > b->lo[a] ? b->hi[a] - b->lo[a] : 0;
  return n;
}

int ts_box_intersect(const ts_box *a, const ts_box *b, ts_box *out) {
  ts_box r;
  for (int k = 0; k < 3; k++) {
    r.lo[k] = a->lo[k] > b->lo[k] ? a->lo[k] : b->lo[k];
    r.hi[k] = a->hi[k] < b->hi[k] ? a->hi[k] : b->hi[k];
    if (r.hi[k] <= r.lo[k])
      return 0;
  }
  *out = r;
  return 1;
}

int ts_box_contains(const ts_box *b, const int c[3]) {
  for (int a = 0; a < 3; a++)
    if (c[a] < b->lo[a] || c[a] >= b->hi[a])
      return 0;
  return 1;
}

const char *ts_decomp_kind_name(ts_decomp_kind k) {
  switch (k) {
  case TS_DECOMP_ROWS: return "rows";
  case TS_DECOMP_COLUMNS: return "columns";
  case TS_DECOMP_TILES: return "tiles";
  default: return "auto";
  }
}

/* Cut faces of a px x py x pz split: the cost that `auto` minimises. */
static double split_cost(const int n[3], const int p[3]) {
  double cost = 0;
  for (int a = 0; a < 3; a++) {
    double face = 1;
    for (int b = 0; b < 3; b++)
      if (b != a)
        face *= n[b];
    cost += (p[a] - 1) * face;
  }
  return cost;
}

/* Best factorisation of count over the axes whose `fixed` entry is 0 (fixed entries kept). */
static int best_split(const int n[3], int dim, int count, const int fixed[3], int out[3]) {
  double best = -1;
  int p[3];
  for (p[0] = 1; p[0] <= count; p[0]++) {
    for (p[1] = 1; p[1] <= count / p[0]; p[1]++) {
      if (count % (p[0] * p[1]))
        continue;
      p[2] = count / (p[0] * p[1]);
      int ok = 1;
      for (int a = 0; a < 3; a++)
        ok &= (a < dim || p[a] == 1) && p[a] <= n[a] && (!fixed[a] || fixed[a] == p[a]);
      if (!ok)
        continue;
      double c = split_cost(n, p);
      if (best < 0 || c < best) {
        best = c;
        memcpy(out, p, sizeof p);
      }
    }
  }
  return best >= 0;
}

ts_status ts_decomp_create(ts_decomp *d, int dim, const int n[3], int count, ts_decomp_kind kind,
                           const int *parts) {
  memset(d, 0, sizeof *d);
  if (count < 1)
    return ts_error(TS_ERR_INPUT, "decomposition: the number of subdomains must be >= 1 (got %d)",
                    count);
  d->dim = dim;
  d->count = count;
  for (int a = 0; a < 3; a++)
    d->n[a] = a < dim ? n[a] : 1;
  int fixed[3] = {1, 1, 1}, p[3] = {1, 1, 1};
  int last = dim - 1;
  switch (kind) {
  case TS_DECOMP_ROWS: fixed[last] = 0; break;
  case TS_DECOMP_COLUMNS: fixed[0] = 0; break;
  case TS_DECOMP_TILES:
    for (int a = 0; a < dim; a++)
      fixed[a] = parts ? parts[a] : 0;
    break;
  default:
    for (int a = 0; a < dim; a++)
      fixed[a] = 0;
    break;
  }
  if (!best_split(d->n, dim, count, fixed, p))
    return ts_error(TS_ERR_INPUT,
                    "decomposition: %d subdomains cannot be split as %s on a %d x %d x %d grid "
                    "(every subdomain needs at least one cell per axis)",
                    count, ts_decomp_kind_name(kind), d->n[0], d->n[1], d->n[2]);
  memcpy(d->parts, p, sizeof p);
  d->boxes = calloc((size_t)count, sizeof *d->boxes);
  if (!d->boxes)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  /* Subdomain numbering: x fastest. Extents differ by at most one cell. */
  for (int s = 0; s < count; s++) {
    int idx[3] = {s % p[0], (s / p[0]) % p[1], s / (p[0] * p[1])};
    for (int a = 0; a < 3; a++) {
      d->boxes[s].lo[a] = (int)((int64_t)idx[a] * d->n[a] / p[a]);
      d->boxes[s].hi[a] = (int)((int64_t)(idx[a] + 1) * d->n[a] / p[a]);
    }
  }
  return TS_OK;
}

void ts_decomp_destroy(ts_decomp *d) {
  free(d->boxes);
  d->boxes = NULL;
}

ts_status ts_decomp_copy(ts_decomp *dst, const ts_decomp *src) {
  *dst = *src;
  dst->boxes = malloc(sizeof *dst->boxes * (size_t)src->count);
  if (!dst->boxes)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  memcpy(dst->boxes, src->boxes, sizeof *dst->boxes * (size_t)src->count);
  return TS_OK;
}

int ts_decomp_owner(const ts_decomp *d, const int c[3]) {
  for (int s = 0; s < d->count; s++)
    if (ts_box_contains(&d->boxes[s], c))
      return s;
  return -1;
}

int ts_decomp_rank(int sub, int count, int ranks) {
  /* Rank r runs subdomains [r * count / ranks, (r + 1) * count / ranks). */
  for (int r = ranks - 1; r > 0; r--)
    if ((int64_t)r * count / ranks <= sub)
      return r;
  return 0;
}

ts_status ts_decomp_weigh(ts_decomp *d, const double *weights) {
  for (int s = 0; s < d->count; s++)
    if (!(weights[s] > 0 && isfinite(weights[s])))
      return ts_error(TS_ERR_INPUT, "decomposition: weight %d is %g; weights must be positive",
                      s + 1, weights[s]);
  for (int a = 0; a < d->dim; a++) {
    int p = d->parts[a], stride = a == 0 ? 1 : (a == 1 ? d->parts[0] : d->parts[0] * d->parts[1]);
    if (p == 1)
      continue;
    double *slab = calloc((size_t)p, sizeof *slab), total = 0;
    int *cut = malloc(sizeof(int) * (size_t)(p + 1));
    if (!slab || !cut) {
      free(slab);
      free(cut);
      return ts_error(TS_ERR_NOMEM, "out of memory");
    }
    for (int s = 0; s < d->count; s++) {
      slab[(s / stride) % p] += weights[s];
      total += weights[s];
    }
    double before = 0;
    cut[0] = 0;
    cut[p] = d->n[a];
    for (int k = 1; k < p; k++) {
      before += slab[k - 1];
      int at = (int)llround(d->n[a] * (before / total));
      int lo = cut[k - 1] + 1, hi = d->n[a] - (p - k);
      cut[k] = at < lo ? lo : (at > hi ? hi : at);
    }
    for (int s = 0; s < d->count; s++) {
      int k = (s / stride) % p;
      d->boxes[s].lo[a] = cut[k];
      d->boxes[s].hi[a] = cut[k + 1];
    }
    free(slab);
    free(cut);
  }
  return TS_OK;
}

ts_status ts_decomp_move_boundary(ts_decomp *d, int a, int b, int delta) {
  if (a < 0 || b < 0 || a >= d->count || b >= d->count || a == b)
    return ts_error(TS_ERR_INPUT, "move boundary: no subdomains %d and %d", a, b);
  ts_box *A = &d->boxes[a], *B = &d->boxes[b];
  for (int axis = 0; axis < 3; axis++) {
    int same_face = 1;
    for (int o = 0; o < 3; o++)
      if (o != axis)
        same_face &= A->lo[o] == B->lo[o] && A->hi[o] == B->hi[o];
    if (!same_face)
      continue;
    /* a below b: the shared face is A.hi = B.lo and moves by +delta; a above b: by -delta. */
    int *fa = NULL, *fb = NULL, shift = 0;
    if (A->hi[axis] == B->lo[axis])
      fa = &A->hi[axis], fb = &B->lo[axis], shift = delta;
    else if (B->hi[axis] == A->lo[axis])
      fa = &A->lo[axis], fb = &B->hi[axis], shift = -delta;
    if (!fa)
      continue;
    int pos = *fa + shift;
    int lo = (fa == &A->hi[axis] ? A->lo[axis] : B->lo[axis]) + 1;
    int hi = (fa == &A->hi[axis] ? B->hi[axis] : A->hi[axis]) - 1;
    if (pos < lo || pos > hi)
      return ts_error(TS_ERR_INPUT,
                      "move boundary: moving by %d cells leaves subdomain %d or %d "
                      "without cells",
                      delta, a, b);
    *fa = *fb = pos;
    return TS_OK;
  }
  return ts_error(TS_ERR_INPUT, "move boundary: subdomains %d and %d do not share a whole face", a,
                  b);
}
