/* The lattice Boltzmann solver: checks the parameters, splits the cells into subdomains, builds
 * each part's nodes (kinds from the faces and the solid mask), its halo plans (populations
 * crossing each face, and those pushed back after an odd step) and periodic images, runs the
 * AA-pattern steps (lbm_internal.h) and gathers macroscopic fields. */
#define _DEFAULT_SOURCE /* madvise */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "physics/lbm/lbm_internal.h"
#include "tessera/cpu.h"
#include "tessera/gpu.h"
#include "tessera/transport.h"

void ts_lbm_params_default(ts_lbm_params *p) {
  memset(p, 0, sizeof *p);
  p->lattice = TS_LBM_D2Q9;
  p->collision = TS_LBM_SRT;
  p->storage = TS_LBM_FP32;
  p->n[0] = p->n[1] = 64;
  p->n[2] = 1;
  p->tau = 0.6;
  p->magic = 3.0 / 16.0;
  for (int f = 0; f < 6; f++)
    p->face[f].rho = 1;
  p->decomposition = TS_DECOMP_AUTO;
}

static const char *const face_names[6] = {"west", "east", "south", "north", "bottom", "top"};

static ts_status check_params(const ts_lbm_params *p, int dim) {
  if (!(p->tau > 0.5))
    return ts_error(TS_ERR_INPUT,
                    "lbm: relaxation time tau = %g is unstable: it must exceed 1/2 "
                    "(viscosity (tau - 1/2) / 3 > 0)",
                    p->tau);
  if (p->collision == TS_LBM_TRT && !(p->magic > 0))
    return ts_error(TS_ERR_INPUT, "lbm: the TRT magic parameter must be positive (got %g)",
                    p->magic);
  if (!(p->smagorinsky >= 0))
    return ts_error(TS_ERR_INPUT, "lbm: the Smagorinsky constant must be >= 0");
  for (int a = 0; a < 3; a++) {
    if (p->n[a] < 1 || (a < dim && p->n[a] < 2))
      return ts_error(TS_ERR_INPUT, "lbm: %d cells along axis %d: at least 2 needed", p->n[a], a);
    if (a >= dim && p->n[a] != 1)
      return ts_error(TS_ERR_INPUT, "lbm: a 2D lattice has one cell along z (got %d)", p->n[a]);
  }
  for (int a = 0; a < dim; a++) {
    int lo = p->face[2 * a].type == TS_LBM_PERIODIC,
        hi = p->face[2 * a + 1].type == TS_LBM_PERIODIC;
    if (lo != hi)
      return ts_error(TS_ERR_INPUT, "lbm: the %s face is periodic but the %s face is not",
                      face_names[lo ? 2 * a : 2 * a + 1], face_names[lo ? 2 * a + 1 : 2 * a]);
  }
  for (int f = 0; f < 2 * dim; f++)
    if (p->face[f].type == TS_LBM_PRESSURE && !(p->face[f].rho > 0))
      return ts_error(TS_ERR_INPUT, "lbm: the %s outlet's density must be positive", face_names[f]);
  return TS_OK;
}

/* ------------------------------------------------------------------ node kinds */

static int periodic_axis(const ts_lbm *s, int a) {
  return a < s->dim && s->p.face[2 * a].type == TS_LBM_PERIODIC;
}

/* The frame faces node (x, y, z) lies on (bit f for face f); -1 outside the nodes. */
static int frame_faces(const ts_lbm *s, const int c[3]) {
  int faces = 0;
  for (int a = 0; a < 3; a++) {
    if (c[a] < 0 || c[a] >= s->nodes[a])
      return -1;
    if (a < s->dim && c[a] == 0)
      faces |= 1 << (2 * a);
    if (a < s->dim && c[a] == s->nodes[a] - 1)
      faces |= 1 << (2 * a + 1);
  }
  return faces;
}

/* Whether node c lies on the frame of a periodic axis that the split cuts (split 1: a halo
 * node) or of one that it does not cut (split 0: an image). */
static int on_periodic_frame(const ts_lbm *s, const int c[3], int split) {
  for (int a = 0; a < s->dim; a++)
    if (periodic_axis(s, a) && s->split_periodic[a] == split &&
        (c[a] == 0 || c[a] == s->nodes[a] - 1))
      return 1;
  return 0;
}

/* The interior node a periodic frame node images: wrapped along its frame axes. */
static void periodic_partner(const ts_lbm *s, const int c[3], int partner[3]) {
  for (int a = 0; a < 3; a++) {
    partner[a] = c[a];
    if (a < s->dim && c[a] == 0)
      partner[a] = s->p.n[a];
    else if (a < s->dim && c[a] == s->nodes[a] - 1)
      partner[a] = 1;
  }
}

static unsigned char cell_type(const ts_lbm *s, const int c[3]) {
  int cell[3] = {c[0] - 1, c[1] - 1, s->dim == 3 ? c[2] - 1 : 0};
  if (s->p.solid &&
      s->p.solid[cell[0] + (int64_t)s->p.n[0] * (cell[1] + (int64_t)s->p.n[1] * cell[2])])
    return LBM_SOLID;
  return LBM_FLUID;
}

/* Kind and face of node c: outside the nodes solid; on the frame the strongest of its faces
 * that are not periodic (wall, moving wall, inlet, outlet), or the image of a periodic
 * partner (solid partners image as solid); inside fluid or solid from the mask. */
static unsigned char node_type(const ts_lbm *s, const int c[3]) {
  int faces = frame_faces(s, c);
  if (faces < 0)
    return LBM_SOLID;
  if (faces == 0)
    return cell_type(s, c);
  static const int strength[5] = {[TS_LBM_WALL] = 4,
                                  [TS_LBM_MOVING] = 3,
                                  [TS_LBM_VELOCITY] = 2,
                                  [TS_LBM_PRESSURE] = 1,
                                  [TS_LBM_PERIODIC] = 0};
  int best = -1;
  for (int f = 0; f < 6; f++)
    if (faces >> f & 1 &&
        (best < 0 || strength[s->p.face[f].type] > strength[s->p.face[best].type]))
      best = f;
  unsigned char face = (unsigned char)(best << 4);
  switch (s->p.face[best].type) {
  case TS_LBM_WALL: return LBM_SOLID | face;
  case TS_LBM_MOVING: return LBM_MOVING | face;
  case TS_LBM_VELOCITY: return LBM_INLET | face;
  case TS_LBM_PRESSURE: return LBM_OUTLET | face;
  case TS_LBM_PERIODIC: break;
  }
  int partner[3];
  periodic_partner(s, c, partner);
  unsigned char t = cell_type(s, partner);
  return lbm_computed(t) ? LBM_PERIODIC : t;
}

/* ------------------------------------------------------------------ parts */

/* The nodes of a subdomain's cells and the frame nodes next to them. */
static ts_box owned_nodes(const ts_lbm *s, const ts_box *cells) {
  ts_box b = {{0, 0, 0}, {1, 1, 1}};
  for (int a = 0; a < s->dim; a++) {
    b.lo[a] = cells->lo[a] == 0 ? 0 : cells->lo[a] + 1;
    b.hi[a] = cells->hi[a] == s->p.n[a] ? s->nodes[a] : cells->hi[a] + 1;
  }
  return b;
}

/* Owned nodes less the frame nodes of split periodic axes. */
static ts_box core_nodes(const ts_lbm *s, const ts_box *own) {
  ts_box c = *own;
  for (int a = 0; a < s->dim; a++)
    if (s->split_periodic[a]) {
      c.lo[a] = c.lo[a] > 1 ? c.lo[a] : 1;
      c.hi[a] = c.hi[a] < s->nodes[a] - 1 ? c.hi[a] : s->nodes[a] - 1;
    }
  return c;
}

static ts_box grown(const ts_lbm *s, const ts_box *own) {
  ts_box w = *own;
  for (int a = 0; a < s->dim; a++) {
    w.lo[a] = own->lo[a] > 0 ? own->lo[a] - 1 : 0;
    w.hi[a] = own->hi[a] < s->nodes[a] ? own->hi[a] + 1 : s->nodes[a];
  }
  return w;
}

/* Whether node c of a part's array is computed, or is a halo node on the frame of split
 * periodic axes that images a computed node (one on the frame of an unsplit periodic axis as
 * well images an image). */
static int computed_or_image(const ts_lbm *s, const lbm_part *p, const int c[3]) {
  unsigned char t = p->type[lbm_local(p, c[0], c[1], c[2])];
  if (lbm_computed(t))
    return 1;
  return lbm_kind(t) == LBM_PERIODIC && on_periodic_frame(s, c, 1) && !on_periodic_frame(s, c, 0);
}

/* Periodic images and wall slots at subdomain borders of a part (see lbm_part). */
static ts_status part_lists(ts_lbm *s, lbm_part *p) {
  const lbm_kernels *k = s->k;
  ts_box deep = p->core;
  for (int a = 0; a < s->dim; a++) {
    deep.lo[a]++;
    deep.hi[a]--;
  }
  int64_t nper = 0, nkeep = 0;
  for (int pass = 0; pass < 2; pass++) {
    nper = nkeep = 0;
    for (int z = p->own.lo[2]; z < p->own.hi[2]; z++)
      for (int y = p->own.lo[1]; y < p->own.hi[1]; y++)
        for (int x = p->own.lo[0]; x < p->own.hi[0]; x++) {
          int c[3] = {x, y, z};
          int64_t n = lbm_local(p, x, y, z);
          unsigned char t = p->type[n];
          if (lbm_kind(t) == LBM_PERIODIC && !on_periodic_frame(s, c, 1)) {
            if (pass) {
              int partner[3];
              periodic_partner(s, c, partner);
              /* slots that computed nodes, here or in the halo, push into the image (from
               * c - c_q) or pull from it (at c + c_q, the slot opposite to q); a halo node on
               * the frame of a split periodic axis stands for the computed node it images */
              uint32_t pushed = 0, pulled = 0;
              for (int q = 0; q < k->q; q++) {
                int from[3], to[3];
                for (int a = 0; a < 3; a++) {
                  from[a] = c[a] - k->velocity(q, a);
                  to[a] = c[a] + k->velocity(q, a);
                }
                if (computed_or_image(s, p, from))
                  pushed |= 1u << q;
                if (computed_or_image(s, p, to))
                  pulled |= 1u << k->opposite(q);
              }
              p->periodic_node[nper] = n;
              p->periodic_partner[nper] = lbm_local(p, partner[0], partner[1], partner[2]);
              p->periodic_pushed[nper] = pushed;
              p->periodic_pulled[nper] = pulled;
            }
            nper++;
          }
          if (!lbm_computed(t) || ts_box_contains(&deep, c))
            continue; /* every neighbour of a node deep in the core is in the core */
          for (int q = 0; q < k->q; q++) {
            int from[3];
            for (int a = 0; a < 3; a++)
              from[a] = c[a] - k->velocity(q, a);
            if (ts_box_contains(&p->core, from))
              continue;
            int64_t fn = lbm_local(p, from[0], from[1], from[2]);
            if (lbm_streams(p->type[fn]))
              continue;
            if (pass)
              p->keep_slot[nkeep] = (int64_t)q * p->plane + n;
            nkeep++;
          }
        }
    if (pass == 0) {
      p->periodic_node = malloc(sizeof(int64_t) * (size_t)(nper + 1));
      p->periodic_partner = malloc(sizeof(int64_t) * (size_t)(nper + 1));
      p->periodic_pushed = malloc(sizeof(uint32_t) * (size_t)(nper + 1));
      p->periodic_pulled = malloc(sizeof(uint32_t) * (size_t)(nper + 1));
      p->keep_slot = malloc(sizeof(int64_t) * (size_t)(nkeep + 1));
      p->keep_value = malloc(k->elem * (size_t)(nkeep + 1));
      if (!p->periodic_node || !p->periodic_partner || !p->periodic_pushed || !p->periodic_pulled ||
          !p->keep_slot || !p->keep_value)
        return ts_error(TS_ERR_NOMEM, "out of memory");
    }
  }
  p->nperiodic = (int)nper;
  p->nkeep = (int)nkeep;
  return TS_OK;
}

/* Bulk nodes: owned fluid nodes whose neighbours all stream. */
static void mark_bulk(const ts_lbm *s, lbm_part *p) {
  int64_t off[32]; /* local index offset of the neighbour along each direction */
  for (int q = 0; q < s->k->q; q++)
    off[q] = lbm_local(p, s->k->velocity(q, 0), s->k->velocity(q, 1), s->k->velocity(q, 2)) -
             lbm_local(p, 0, 0, 0);
  for (int z = p->own.lo[2]; z < p->own.hi[2]; z++)
    for (int y = p->own.lo[1]; y < p->own.hi[1]; y++)
      for (int x = p->own.lo[0]; x < p->own.hi[0]; x++) {
        int64_t n = lbm_local(p, x, y, z);
        int bulk = lbm_kind(p->type[n]) == LBM_FLUID;
        for (int q = 1; q < s->k->q && bulk; q++)
          bulk = lbm_streams(p->type[n + off[q]]);
        if (bulk)
          p->type[n] |= LBM_BULK;
      }
}

/* Zeroed memory for a part's populations, starting at a cache line. Large arrays are aligned
 * to 2 MiB and asked to be backed by huge pages (where the kernel allows it on request): a step
 * streams through each of the Q planes at once, and 4 KiB pages cost a TLB miss, and stop the
 * hardware prefetchers, every few rows of every plane. */
static void *populations_alloc(size_t bytes) {
  size_t huge = (size_t)2 << 20, align = bytes < 4 * huge ? 64 : huge;
  bytes = (bytes + align - 1) / align * align;
  void *f = aligned_alloc(align, bytes);
  if (!f)
    return NULL;
#ifdef MADV_HUGEPAGE
  if (align == huge)
    madvise(f, bytes, MADV_HUGEPAGE);
#endif
  memset(f, 0, bytes);
  return f;
}

static ts_status part_create(ts_lbm *s, lbm_part *p, int sub, int device) {
  p->sub = sub;
  p->device = -1;
  p->own = s->own[sub];
  p->core = s->core[sub];
  p->inner = p->core; /* less a layer where a halo begins */
  for (int a = 0; a < s->dim; a++) {
    p->inner.lo[a] += s->window[sub].lo[a] < p->core.lo[a];
    p->inner.hi[a] -= s->window[sub].hi[a] > p->core.hi[a];
  }
  p->cells = p->own;
  for (int a = 0; a < 3; a++) {
    p->lo[a] = a < s->dim ? p->own.lo[a] - 1 : 0;
    p->len[a] = a < s->dim ? p->own.hi[a] - p->own.lo[a] + 2 : 1;
    if (a < s->dim) {
      p->cells.lo[a] = p->own.lo[a] > 1 ? p->own.lo[a] : 1;
      p->cells.hi[a] = p->own.hi[a] < s->nodes[a] - 1 ? p->own.hi[a] : s->nodes[a] - 1;
    }
  }
  int align = lbm_row_align(s->k->elem);
  p->len[0] = (p->len[0] + align - 1) / align * align;
  p->plane = (int64_t)p->len[0] * p->len[1] * p->len[2];
  p->lead = lbm_lead(p, s->k->elem);
  char *block =
      populations_alloc(((size_t)p->plane * (size_t)s->k->q + (size_t)p->lead) * s->k->elem);
  p->f = block ? block + (size_t)p->lead * s->k->elem : NULL;
  p->type = malloc((size_t)p->plane);
  if (!p->f || !p->type)
    return ts_error(TS_ERR_NOMEM, "lbm: out of memory for a subdomain of %lld nodes",
                    (long long)p->plane);
  for (int z = 0; z < p->len[2]; z++)
    for (int y = 0; y < p->len[1]; y++)
      for (int x = 0; x < p->len[0]; x++) {
        int c[3] = {p->lo[0] + x, p->lo[1] + y, p->lo[2] + z};
        p->type[lbm_local(p, c[0], c[1], c[2])] = node_type(s, c);
      }
  mark_bulk(s, p);
  TS_CALL(part_lists(s, p));
  for (int a = 0; a < 3; a++) /* across the periodic axes the split does not cut */
    p->wrap[a] = s->k->wraps && periodic_axis(s, a) && !s->split_periodic[a] ? s->p.n[a] : 0;
  TS_CALL(s->k->init(p, &s->p, &s->consts));
  return s->k->attach ? s->k->attach(p, device) : TS_OK;
}

static void part_destroy(const ts_lbm *s, lbm_part *p) {
  if (p->f)
    free((char *)p->f - (size_t)p->lead * s->k->elem);
  free(p->type);
  free(p->u_prev);
  free(p->periodic_node);
  free(p->periodic_partner);
  free(p->periodic_pushed);
  free(p->periodic_pulled);
  free(p->keep_slot);
  free(p->keep_value);
}

/* ------------------------------------------------------------------ halos */

/* Populations crossing into a halo box in direction d: those whose velocity has d's sign on
 * every axis where d is not 0 (read from there by the owned nodes after the forward exchange,
 * pushed there by them in an odd step). */
static void build_masks(ts_lbm *s) {
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        int d[3] = {dx, dy, dz}, dir = ts_halo_dir(dx, dy, dz), axes = 0;
        uint32_t mask = 0;
        for (int a = 0; a < 3; a++)
          axes += d[a] != 0;
        for (int q = 0; q < s->k->q && axes; q++) {
          int all = 1;
          for (int a = 0; a < 3; a++)
            if (d[a] && s->k->velocity(q, a) != d[a])
              all = 0;
          if (all)
            mask |= 1u << q;
        }
        s->mask_forward[dir] = mask;
        s->mask_faces[dir] = axes == 1 ? mask : 0;
        s->mask_diagonal[dir] = axes > 1 ? mask : 0;
      }
}

static ts_halo_field field_of(const ts_lbm *s, const lbm_part *p) {
  ts_halo_field f;
  memset(&f, 0, sizeof f);
  f.ncomp = s->k->q;
  f.elem = s->k->elem;
  for (int q = 0; q < s->k->q; q++)
    f.comp[q] = (char *)(p->dev_f ? p->dev_f : p->f) + (size_t)q * (size_t)p->plane * s->k->elem;
  f.stride[0] = 1;
  f.stride[1] = p->len[0];
  f.stride[2] = (int64_t)p->len[0] * p->len[1];
  for (int a = 0; a < 3; a++)
    f.lo[a] = p->lo[a];
  return f;
}

static ts_status make_plan(ts_lbm *s, ts_halo_plan **plan, const uint32_t *masks, int back) {
  ts_halo_field layout = s->fields[s->parts[0].sub];
  layout.dir_mask = masks;
  ts_halo_spec spec = {.nsub = s->decomp.count,
                       .sub_rank = s->sub_rank,
                       .src = back ? s->window : s->core,
                       .dst = back ? s->core : s->window,
                       .dst_owned = s->core,
                       .src_owned = back ? s->core : NULL,
                       .nfields = 1,
                       .layout = &layout};
  for (int a = 0; a < s->dim; a++) /* frame node 0 images node n, node n + 1 node 1 */
    spec.period[a] = s->split_periodic[a] ? s->p.n[a] : 0;
  return ts_halo_plan_create(plan, s->comm, &spec);
}

/* An exchange starts once the parts' queued work is done (GPU halos are read outside their
 * streams) and finishes when the copies between devices have landed. A plan that moves nothing
 * on this rank (one part, no neighbours) costs nothing: the GPU's queue keeps running. While a
 * graph is recorded both waits are queued on the devices instead: the copies to each device
 * wait for every part's work, and every part waits for the copies to every device (those to the
 * others read its cells, which its next passes overwrite). */
static ts_status exchange_start(ts_lbm *s, ts_halo_plan *plan) {
  if (!ts_halo_moves(plan))
    return TS_OK;
  for (int k = 0; k < s->nparts && s->k->sync && !s->recording; k++)
    s->k->sync(&s->parts[k]);
#if TESSERA_HAVE_CUDA
  for (int k = 0; k < s->nparts && s->recording; k++) {
    for (int q = 0; q < s->nparts; q++)
      s->k->stream_after(&s->parts[q], ts_gpu_halo_stream(s->parts[k].device));
    if (s->rank_stream)
      s->k->stream_after(&s->parts[k], s->rank_stream);
  }
#endif
  return ts_halo_start(plan, s->fields, s->fields);
}

static ts_status exchange_finish(ts_lbm *s, ts_halo_plan *plan) {
  if (!ts_halo_moves(plan))
    return TS_OK;
  TS_CALL(ts_halo_finish(plan, s->fields));
#if TESSERA_HAVE_CUDA
  int devices[64], ndevices = 0; /* the parts' devices, each once (CUDA numbers them < 64) */
  for (int k = 0; k < s->nparts && s->recording; k++) {
    int d = s->parts[k].device, seen = 0;
    for (int q = 0; q < ndevices; q++)
      seen |= devices[q] == d;
    if (!seen && ndevices < 64)
      devices[ndevices++] = d;
  }
  for (int k = 0; k < s->nparts && s->recording; k++) {
    ts_gpu_after_halos(s->k->stream(&s->parts[k]), devices, ndevices);
    if (s->rank_stream)
      s->k->after_stream(&s->parts[k], s->rank_stream);
  }
  if (s->p.cuda && !s->recording)
    ts_gpu_halo_wait();
#endif
  return TS_OK;
}

static ts_status exchange(ts_lbm *s, ts_halo_plan *plan) {
  TS_CALL(exchange_start(s, plan));
  return exchange_finish(s, plan);
}

/* Periodic images: before an odd step the partner's slots that nodes will pull from the image
 * (forward); after it, what nodes pushed into the images goes on to their partners. Plane by
 * plane, so that the copies walk each plane in order (the images of an x face are a node
 * apart in every row: node by node, each copy was a cache miss of its own). */
static void periodic_images(const ts_lbm *s, lbm_part *p, int forward) {
  if (s->k->periodic) {
    s->k->periodic(p, forward);
    return;
  }
  const uint32_t *mask = forward ? p->periodic_pulled : p->periodic_pushed;
  const int64_t *to = forward ? p->periodic_node : p->periodic_partner;
  const int64_t *from = forward ? p->periodic_partner : p->periodic_node;
  for (int q = 0; q < s->k->q; q++) {
    int64_t slot = (int64_t)q * p->plane;
    if (s->k->elem == 2) { /* binary16 populations */
      uint16_t *f = (uint16_t *)p->f + slot;
      for (int k = 0; k < p->nperiodic; k++)
        if (mask[k] >> q & 1)
          f[to[k]] = f[from[k]];
    } else {
      uint32_t *f = (uint32_t *)p->f + slot; /* (float bits) */
      for (int k = 0; k < p->nperiodic; k++)
        if (mask[k] >> q & 1)
          f[to[k]] = f[from[k]];
    }
  }
}

/* Whether the part's odd steps wrap across its periodic axes: its images are then refreshed
 * only for host code (moments and checkpoints). */
static int wraps(const lbm_part *p) { return p->wrap[0] || p->wrap[1] || p->wrap[2]; }

static void keep_walls(const ts_lbm *s, lbm_part *p, int restore) {
  if (s->k->keep) {
    s->k->keep(p, restore);
    return;
  }
  size_t e = s->k->elem;
  for (int k = 0; k < p->nkeep; k++) {
    char *slot = (char *)p->f + e * (size_t)p->keep_slot[k], *kept = p->keep_value + e * (size_t)k;
    memcpy(restore ? slot : kept, restore ? kept : slot, e);
  }
}

/* The halos and images that an odd step (or the moments before one) reads. */
static ts_status before_odd(ts_lbm *s) {
  for (int k = 0; k < s->nparts; k++)
    periodic_images(s, &s->parts[k], 1);
  return exchange(s, s->forward);
}

/* ------------------------------------------------------------------ the solver */

static const lbm_kernels *kernels_for(const ts_lbm_params *p) {
#if TESSERA_HAVE_CUDA
  if (p->cuda && p->lattice == TS_LBM_D3Q19)
    return p->storage == TS_LBM_FP16 ? &lbm_kernels_cuda_d3q19_fp16 : &lbm_kernels_cuda_d3q19_fp32;
  if (p->cuda)
    return p->storage == TS_LBM_FP16 ? &lbm_kernels_cuda_d2q9_fp16 : &lbm_kernels_cuda_d2q9_fp32;
#endif
  if (p->lattice == TS_LBM_D3Q19)
    return p->storage == TS_LBM_FP16 ? TS_CPU_KERNELS(lbm_kernels_d3q19_fp16)
                                     : TS_CPU_KERNELS(lbm_kernels_d3q19_fp32);
  return p->storage == TS_LBM_FP16 ? TS_CPU_KERNELS(lbm_kernels_d2q9_fp16)
                                   : TS_CPU_KERNELS(lbm_kernels_d2q9_fp32);
}

static void set_consts(ts_lbm *s) {
  const ts_lbm_params *p = &s->p;
  lbm_consts *k = &s->consts;
  memset(k, 0, sizeof *k);
  k->tau = (float)p->tau;
  k->omega = (float)(1.0 / p->tau);
  k->trt = p->collision == TS_LBM_TRT;
  /* Lambda = (tau+ - 1/2)(tau- - 1/2) */
  k->omega_minus = k->trt ? (float)(1.0 / (p->magic / (p->tau - 0.5) + 0.5)) : k->omega;
  k->smag18 = (float)(18.0 * sqrt(2.0) * p->smagorinsky * p->smagorinsky);
  for (int a = 0; a < 3; a++)
    k->force[a] = a < s->dim ? (float)p->force[a] : 0.0f;
  for (int f = 0; f < 6; f++) {
    for (int a = 0; a < 3; a++)
      k->wall_u[f][a] = a < s->dim ? (float)p->face[f].u[a] : 0.0f;
    k->face_rho[f] = (float)p->face[f].rho;
  }
}

/* The periodic axes that the split cuts: their frame nodes become halos. Inlet and outlet
 * nodes on such a frame (where it meets an inlet or outlet face) are computed nodes of their
 * own, which a halo cannot stand for: that split is refused. */
static ts_status find_split_periodic(ts_lbm *s) {
  for (int a = 0; a < 3; a++) {
    s->split_periodic[a] = 0;
    for (int b = 0; b < s->decomp.count && periodic_axis(s, a); b++)
      if (s->decomp.boxes[b].lo[a] != 0 || s->decomp.boxes[b].hi[a] != s->p.n[a])
        s->split_periodic[a] = 1;
    for (int f = 0; f < 2 * s->dim && s->split_periodic[a]; f++) {
      ts_lbm_face_type type = s->p.face[f].type;
      if (type == TS_LBM_VELOCITY || type == TS_LBM_PRESSURE)
        return ts_error(TS_ERR_INPUT,
                        "lbm: the split cuts the periodic %c axis, whose frame meets the %s %s: "
                        "choose a decomposition along the other axes",
                        "xyz"[a], face_names[f], type == TS_LBM_VELOCITY ? "inlet" : "outlet");
    }
  }
  return TS_OK;
}

/* The device of this rank's k-th part (cuda): the listed (or all) devices in turn, the ranks of
 * a node taking consecutive ones (by subdomain: ranks may hold different numbers of parts). */
static int device_of(const ts_lbm *s, int k) {
  if (!s->p.cuda)
    return -1;
  int n = s->p.ndevices > 0 ? s->p.ndevices : s->gpus, first = 0;
  while (s->sub_rank[first] != s->rank) /* this rank's first subdomain */
    first++;
  int slot = (first + k) % n;
  return s->p.ndevices > 0 ? s->p.devices[slot] : slot;
}

static ts_status create(ts_lbm *s) {
  s->dim = s->p.lattice == TS_LBM_D3Q19 ? 3 : 2;
  TS_CALL(check_params(&s->p, s->dim));
  if (s->p.cuda && !TESSERA_HAVE_CUDA)
    return ts_error(TS_ERR_INPUT, "lbm: this tessera was built without CUDA");
  s->gpus = s->p.cuda ? ts_gpu_count() : 0;
  if (s->p.cuda && s->gpus == 0)
    return ts_error(TS_ERR_INPUT, "lbm: backend cuda, but no GPU is found");
  for (int d = 0; d < s->p.ndevices; d++)
    if (s->p.devices[d] < 0 || s->p.devices[d] >= s->gpus)
      return ts_error(TS_ERR_INPUT, "lbm: device %d does not exist (%d GPUs)", s->p.devices[d],
                      s->gpus);
  s->k = kernels_for(&s->p);
  set_consts(s);
  for (int a = 0; a < 3; a++)
    s->nodes[a] = a < s->dim ? s->p.n[a] + 2 : 1;
  int count = s->p.subdomains ? s->p.subdomains : s->nranks;
  if (count < s->nranks)
    return ts_error(TS_ERR_INPUT, "lbm: %d subdomains for %d ranks: every rank needs one", count,
                    s->nranks);
  TS_CALL(ts_decomp_create(&s->decomp, s->dim, s->p.n, count, s->p.decomposition,
                           s->p.decomposition == TS_DECOMP_TILES ? s->p.parts : NULL));
  TS_CALL(find_split_periodic(s));
  s->own = calloc((size_t)count, sizeof *s->own);
  s->core = calloc((size_t)count, sizeof *s->core);
  s->window = calloc((size_t)count, sizeof *s->window);
  s->sub_rank = calloc((size_t)count, sizeof *s->sub_rank);
  s->fields = calloc((size_t)count, sizeof *s->fields);
  if (!s->own || !s->core || !s->window || !s->sub_rank || !s->fields)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  for (int b = 0; b < count; b++) {
    s->own[b] = owned_nodes(s, &s->decomp.boxes[b]);
    s->core[b] = core_nodes(s, &s->own[b]);
    s->window[b] = grown(s, &s->own[b]);
    s->sub_rank[b] = ts_decomp_rank(b, count, s->nranks);
    s->nparts += s->sub_rank[b] == s->rank;
  }
  s->parts = calloc((size_t)s->nparts, sizeof *s->parts);
  if (!s->parts)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  int64_t fluid = 0;
  ts_status st = TS_OK;
  for (int b = 0, k = 0; b < count; b++) {
    if (s->sub_rank[b] != s->rank)
      continue;
    lbm_part *p = &s->parts[k];
    int device = device_of(s, k);
    k++;
    st = part_create(s, p, b, device);
    if (st != TS_OK)
      break;
    s->fields[b] = field_of(s, p);
    for (int z = p->own.lo[2]; z < p->own.hi[2]; z++)
      for (int y = p->own.lo[1]; y < p->own.hi[1]; y++)
        for (int x = p->own.lo[0]; x < p->own.hi[0]; x++)
          fluid += lbm_kind(p->type[lbm_local(p, x, y, z)]) == LBM_FLUID;
  }
  TS_CALL(ts_comm_agree(s->comm, st)); /* every rank has its parts before the collectives */
  TS_CALL(ts_comm_sum_i64(s->comm, &fluid, 1));
  s->fluid_cells = fluid;
  build_masks(s);
  TS_CALL(make_plan(s, &s->forward, s->mask_forward, 0));
  TS_CALL(make_plan(s, &s->back_faces, s->mask_faces, 1));
  TS_CALL(make_plan(s, &s->back_diagonal, s->mask_diagonal, 1));
#if TESSERA_HAVE_CUDA
  if (s->p.cuda) { /* halos in device memory: copies between devices, a transport between ranks */
    ts_halo_plan *plans[3] = {s->forward, s->back_faces, s->back_diagonal};
    const ts_halo_transport *transport = NULL;
    if (s->nranks > 1) {
      int device = s->parts[0].device;
      for (int k = 1; k < s->nparts; k++)
        device = s->parts[k].device == device ? device : -1;
      ts_transport_kind chosen;
      ts_status opened = ts_transport_open(s->comm, device, s->p.transport, &transport, &chosen);
      s->transport_open = opened == TS_OK; /* closed at destroy even when another rank failed */
      TS_CALL(ts_comm_agree(s->comm, opened));
      if (chosen == TS_TRANSPORT_NCCL) /* on a stream: its messages go in the pairs' graph */
        s->rank_stream = ts_transport_stream();
    }
    for (int i = 0; i < 3; i++) {
      ts_halo_set_copier(plans[i], ts_gpu_copy_box);
      if (transport)
        TS_CALL(ts_halo_set_transport(plans[i], transport));
    }
  }
#endif
  return TS_OK;
}

ts_status ts_lbm_create(ts_lbm **out, const ts_lbm_params *p, const ts_comm *comm) {
  *out = NULL;
  ts_lbm *s = calloc(1, sizeof *s);
  if (!s)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  s->p = *p;
  s->comm = comm;
  s->rank = ts_comm_rank(comm);
  s->nranks = ts_comm_size(comm);
  ts_status st = ts_comm_agree(comm, create(s));
  if (st != TS_OK) {
    ts_lbm_destroy(s);
    return st;
  }
  *out = s;
  return TS_OK;
}

void ts_lbm_destroy(ts_lbm *s) {
  if (!s)
    return;
#if TESSERA_HAVE_CUDA
  ts_gpu_graph_destroy(s->pair_graph);
#endif
  ts_halo_plan_destroy(s->forward);
  ts_halo_plan_destroy(s->back_faces);
  ts_halo_plan_destroy(s->back_diagonal);
  for (int k = 0; k < s->nparts && s->parts; k++) {
    if (s->k && s->k->release)
      s->k->release(&s->parts[k]);
    part_destroy(s, &s->parts[k]);
  }
#if TESSERA_HAVE_CUDA
  if (s->transport_open)
    ts_transport_close();
#endif
  free(s->parts);
  free(s->own);
  free(s->core);
  free(s->window);
  free(s->sub_rank);
  free(s->fields);
  ts_decomp_destroy(&s->decomp);
  free(s);
}

/* An odd step: the nodes that read no halo while the forward exchange is in flight, then the
 * others, then the populations pushed into halos go back to their owners. */
static ts_status odd_step(ts_lbm *s) {
  for (int k = 0; k < s->nparts; k++)
    if (!wraps(&s->parts[k]))
      periodic_images(s, &s->parts[k], 1);
  TS_CALL(exchange_start(s, s->forward));
#pragma omp parallel for schedule(dynamic, 1) if (s->nparts > 1 && !s->recording)
  for (int k = 0; k < s->nparts; k++)
    s->k->odd(&s->parts[k], &s->consts, &s->parts[k].inner, LBM_INNER);
  TS_CALL(exchange_finish(s, s->forward));
#pragma omp parallel for schedule(dynamic, 1) if (s->nparts > 1 && !s->recording)
  for (int k = 0; k < s->nparts; k++) {
    s->k->odd(&s->parts[k], &s->consts, &s->parts[k].inner, LBM_BORDER);
    keep_walls(s, &s->parts[k], 0);
  }
  TS_CALL(exchange(s, s->back_faces));
  TS_CALL(exchange(s, s->back_diagonal));
  for (int k = 0; k < s->nparts; k++) {
    keep_walls(s, &s->parts[k], 1);
    if (!wraps(&s->parts[k]))
      periodic_images(s, &s->parts[k], 0);
  }
  return TS_OK;
}

static ts_status one_step(ts_lbm *s) {
  if (s->steps % 2 == 0) {
#pragma omp parallel for schedule(dynamic, 1) if (s->nparts > 1 && !s->recording)
    for (int k = 0; k < s->nparts; k++)
      s->k->even(&s->parts[k], &s->consts);
  } else {
    TS_CALL(odd_step(s));
  }
  s->steps++;
  return TS_OK;
}

/* Several GPU parts in this process, or GPU parts of ranks that exchange through NCCL, take
 * pairs of steps as one CUDA graph: the same kernels, copies and messages in the same order as
 * the host's steps, with the waits between them queued on the devices. */
#if TESSERA_HAVE_CUDA
static int pairs_on_devices(const ts_lbm *s) {
  return s->p.cuda && s->k->stream && (s->nranks == 1 ? s->nparts > 1 : s->rank_stream != NULL);
}

static ts_status record_pair(ts_lbm *s) {
  lbm_part *lead = &s->parts[0];
  void *stream = s->k->stream(lead);
  ts_gpu_capture_begin(stream);
  s->recording = 1;
  for (int k = 1; k < s->nparts; k++)
    s->k->order(&s->parts[k], lead);
  ts_status st = one_step(s);
  if (st == TS_OK)
    st = one_step(s);
  s->steps -= 2; /* recorded, not run */
  for (int k = 1; k < s->nparts; k++)
    s->k->order(lead, &s->parts[k]);
  s->recording = 0;
  s->pair_graph = ts_gpu_capture_end(stream);
  return st;
}

static ts_status run_pairs(ts_lbm *s, int pairs) {
  if (!s->pair_graph)
    TS_CALL(record_pair(s));
  lbm_part *lead = &s->parts[0];
  for (int k = 1; k < s->nparts; k++) /* the work queued by host-driven steps */
    s->k->order(lead, &s->parts[k]);
  for (int i = 0; i < pairs; i++)
    ts_gpu_graph_launch(s->pair_graph, s->k->stream(lead));
  for (int k = 1; k < s->nparts; k++)
    s->k->order(&s->parts[k], lead);
  s->steps += 2 * (int64_t)pairs;
  return TS_OK;
}
#endif

ts_status ts_lbm_step(ts_lbm *s, int n) {
  for (int i = 0; i < n;) {
#if TESSERA_HAVE_CUDA
    if (s->steps % 2 == 0 && n - i >= 2 && pairs_on_devices(s)) {
      TS_CALL(run_pairs(s, (n - i) / 2));
      i += (n - i) / 2 * 2;
      continue;
    }
#endif
    TS_CALL(one_step(s));
    i++;
  }
  for (int k = 0; k < s->nparts && s->k->sync; k++)
    s->k->sync(&s->parts[k]); /* the steps are done when this returns */
  return TS_OK;
}

int64_t ts_lbm_steps(const ts_lbm *s) { return s->steps; }
int64_t ts_lbm_fluid_cells(const ts_lbm *s) { return s->fluid_cells; }
const ts_decomp *ts_lbm_decomp(const ts_lbm *s) { return &s->decomp; }
double ts_lbm_bytes_per_cell(const ts_lbm *s) {
  return 2.0 * s->k->q * (double)s->k->elem + 1; /* populations in and out, the node's kind */
}

/* ------------------------------------------------------------------ fields */

/* Density and velocity of the owned cells of part p, in cell order of its box (NaN where
 * solid); the moments need the halos when the next step is odd. */
static void part_moments(const ts_lbm *s, const lbm_part *p, float *rho, float (*u)[3]) {
  const ts_box *cells = &s->decomp.boxes[p->sub];
  int64_t m = 0;
  for (int k = cells->lo[2]; k < cells->hi[2]; k++)
    for (int j = cells->lo[1]; j < cells->hi[1]; j++)
      for (int i = cells->lo[0]; i < cells->hi[0]; i++, m++) {
        int64_t n = lbm_local(p, i + 1, j + 1, s->dim == 3 ? k + 1 : 0);
        if (!lbm_computed(p->type[n])) {
          rho[m] = NAN;
          u[m][0] = u[m][1] = u[m][2] = NAN;
          continue;
        }
        s->k->moments(p, &s->consts, (int)(s->steps % 2), n, &rho[m], u[m]);
      }
}

/* rho, ux, uy, uz of every cell on rank 0 (4 doubles per cell, cell order of the box). */
static ts_status gather_moments(ts_lbm *s, double *out) {
  if (s->steps % 2)
    TS_CALL(before_odd(s));
  int count = s->decomp.count;
  size_t *counts = calloc((size_t)s->nranks, sizeof *counts);
  int64_t mine_cells = 0;
  for (int b = 0; b < count; b++) {
    size_t bytes = (size_t)ts_box_cells(&s->decomp.boxes[b]) * 4 * sizeof(double);
    if (counts)
      counts[s->sub_rank[b]] += bytes;
    if (s->sub_rank[b] == s->rank)
      mine_cells += ts_box_cells(&s->decomp.boxes[b]);
  }
  double *mine = malloc(sizeof(double) * 4 * (size_t)(mine_cells + 1));
  int64_t total = (int64_t)s->p.n[0] * s->p.n[1] * s->p.n[2];
  double *all = s->rank == 0 ? malloc(sizeof(double) * 4 * (size_t)total) : NULL;
  ts_status st =
      counts && mine && (s->rank != 0 || all) ? TS_OK : ts_error(TS_ERR_NOMEM, "out of memory");
  double *w = mine;
  for (int k = 0; k < s->nparts && st == TS_OK; k++) {
    int64_t cells = ts_box_cells(&s->decomp.boxes[s->parts[k].sub]);
    float *rho = malloc(sizeof(float) * (size_t)cells);
    float(*u)[3] = malloc(sizeof *u * (size_t)cells);
    if (!rho || !u) {
      st = ts_error(TS_ERR_NOMEM, "out of memory");
    } else {
      if (s->k->to_host)
        s->k->to_host(&s->parts[k]);
      part_moments(s, &s->parts[k], rho, u);
      for (int64_t m = 0; m < cells; m++, w += 4) {
        w[0] = rho[m];
        w[1] = u[m][0], w[2] = u[m][1], w[3] = u[m][2];
      }
    }
    free(rho);
    free(u);
  }
  st = ts_comm_agree(s->comm, st);
  if (st == TS_OK)
    st = ts_comm_gather(s->comm, mine, counts, all, 0);
  if (st == TS_OK && s->rank == 0) {
    const double *r = all;
    for (int rank = 0; rank < s->nranks; rank++)
      for (int b = 0; b < count; b++) {
        if (s->sub_rank[b] != rank)
          continue;
        const ts_box *box = &s->decomp.boxes[b];
        for (int k = box->lo[2]; k < box->hi[2]; k++)
          for (int j = box->lo[1]; j < box->hi[1]; j++)
            for (int i = box->lo[0]; i < box->hi[0]; i++, r += 4)
              memcpy(out + 4 * (i + (int64_t)s->p.n[0] * (j + (int64_t)s->p.n[1] * k)), r,
                     4 * sizeof(double));
      }
  }
  free(counts);
  free(mine);
  free(all);
  return st;
}

/* |curl u| by central differences (one-sided next to solid cells and the box's faces). */
static double vorticity_at(const ts_lbm *s, const double *m, int i, int j, int k) {
  const int *n = s->p.n, c[3] = {i, j, k};
  const int64_t step[3] = {1, n[0], (int64_t)n[0] * n[1]};
  int64_t here = i + n[0] * (j + (int64_t)n[1] * k);
  double grad[3][3] = {{0}}; /* grad[a][b] = d u_b / d x_a */
  for (int a = 0; a < s->dim; a++) {
    int has_lo = c[a] > 0 && !isnan(m[4 * (here - step[a])]);
    int has_hi = c[a] + 1 < n[a] && !isnan(m[4 * (here + step[a])]);
    if (!has_lo && !has_hi)
      continue;
    for (int b = 0; b < 3; b++) {
      double u0 = m[4 * here + 1 + b];
      double ul = has_lo ? m[4 * (here - step[a]) + 1 + b] : u0;
      double uh = has_hi ? m[4 * (here + step[a]) + 1 + b] : u0;
      grad[a][b] = (uh - ul) / (has_lo + has_hi);
    }
  }
  double wx = grad[1][2] - grad[2][1], wy = grad[2][0] - grad[0][2], wz = grad[0][1] - grad[1][0];
  return sqrt(wx * wx + wy * wy + wz * wz);
}

ts_status ts_lbm_get(ts_lbm *s, ts_lbm_var var, double *out) {
  int64_t total = (int64_t)s->p.n[0] * s->p.n[1] * s->p.n[2];
  double *m = s->rank == 0 ? malloc(sizeof(double) * 4 * (size_t)total) : NULL;
  if (s->rank == 0 && !m)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  ts_status st = gather_moments(s, m);
  if (st == TS_OK && s->rank == 0)
    for (int k = 0; k < s->p.n[2]; k++)
      for (int j = 0; j < s->p.n[1]; j++)
        for (int i = 0; i < s->p.n[0]; i++) {
          int64_t c = i + (int64_t)s->p.n[0] * (j + (int64_t)s->p.n[1] * k);
          const double *v = m + 4 * c;
          switch (var) {
          case TS_LBM_RHO: out[c] = v[0]; break;
          case TS_LBM_UX: out[c] = v[1]; break;
          case TS_LBM_UY: out[c] = v[2]; break;
          case TS_LBM_UZ: out[c] = v[3]; break;
          case TS_LBM_SPEED: out[c] = sqrt(v[1] * v[1] + v[2] * v[2] + v[3] * v[3]); break;
          case TS_LBM_VORTICITY: out[c] = isnan(v[0]) ? NAN : vorticity_at(s, m, i, j, k); break;
          }
        }
  free(m);
  return st;
}

ts_status ts_lbm_change(ts_lbm *s, double *max_change) {
  if (s->steps % 2)
    TS_CALL(before_odd(s));
  double change = 0;
  ts_status st = TS_OK;
  for (int k = 0; k < s->nparts && st == TS_OK; k++) {
    lbm_part *p = &s->parts[k];
    int64_t cells = ts_box_cells(&s->decomp.boxes[p->sub]);
    float *rho = malloc(sizeof(float) * (size_t)cells);
    float(*u)[3] = malloc(sizeof *u * (size_t)cells);
    if (!p->u_prev)
      p->u_prev = calloc((size_t)cells * 3, sizeof(float)); /* 0 where solid (checkpoints) */
    if (!rho || !u || !p->u_prev) {
      st = ts_error(TS_ERR_NOMEM, "out of memory");
    } else {
      if (s->k->to_host)
        s->k->to_host(p);
      part_moments(s, p, rho, u);
      for (int64_t m = 0; m < cells; m++) {
        if (isnan(rho[m]))
          continue;
        for (int a = 0; a < 3; a++) {
          if (s->have_change)
            change = fmax(change, fabs((double)u[m][a] - p->u_prev[3 * m + a]));
          p->u_prev[3 * m + a] = u[m][a];
        }
      }
    }
    free(rho);
    free(u);
  }
  st = ts_comm_agree(s->comm, st);
  if (st == TS_OK)
    st = ts_comm_max(s->comm, &change, 1);
  s->have_change = 1;
  *max_change = change;
  return st;
}

/* ------------------------------------------------------------------ checkpoints */

/* The state: the step count and whether ts_lbm_change has its reference (two int64), the
 * populations (Q planes of all nodes, x fastest) and the reference velocities (3 floats per
 * cell, cell order). At a step boundary the owned nodes hold the whole state: the halos,
 * periodic images and kept wall slots are filled from them before they are read again, so a
 * solver of any split continues from it. */
enum { STATE_HEAD = 2 * sizeof(int64_t) };

int64_t ts_lbm_state_bytes(const ts_lbm *s) {
  int64_t nodes = (int64_t)s->nodes[0] * s->nodes[1] * s->nodes[2];
  int64_t cells = (int64_t)s->p.n[0] * s->p.n[1] * s->p.n[2];
  return STATE_HEAD + nodes * s->k->q * (int64_t)s->k->elem + cells * 3 * (int64_t)sizeof(float);
}

/* Subdomain b's share of the state: its owned nodes' populations, its cells' velocities. */
static int64_t share_bytes(const ts_lbm *s, int b) {
  return ts_box_cells(&s->own[b]) * s->k->q * (int64_t)s->k->elem +
         ts_box_cells(&s->decomp.boxes[b]) * 3 * (int64_t)sizeof(float);
}

/* Between subdomain b's packed share (buf: populations by q, z, y rows of its owned nodes, then
 * velocities by k, j rows of its cells) and its rows in the state at `base` of f. */
static int share_io(const ts_lbm *s, int b, char *buf, FILE *f, long base, int writing) {
  const ts_box *o = &s->own[b], *c = &s->decomp.boxes[b];
  int64_t e = (int64_t)s->k->elem, nodes = (int64_t)s->nodes[0] * s->nodes[1] * s->nodes[2];
  size_t row = (size_t)(e * (o->hi[0] - o->lo[0]));
  for (int q = 0; q < s->k->q; q++)
    for (int z = o->lo[2]; z < o->hi[2]; z++)
      for (int y = o->lo[1]; y < o->hi[1]; y++, buf += row) {
        int64_t at = q * nodes + o->lo[0] + s->nodes[0] * (y + (int64_t)s->nodes[1] * z);
        if (fseek(f, base + STATE_HEAD + (long)(at * e), SEEK_SET) != 0 ||
            (writing ? fwrite(buf, row, 1, f) : fread(buf, row, 1, f)) != 1)
          return 0;
      }
  long velocities = base + STATE_HEAD + (long)(nodes * s->k->q * e);
  row = 3 * sizeof(float) * (size_t)(c->hi[0] - c->lo[0]);
  for (int k = c->lo[2]; k < c->hi[2]; k++)
    for (int j = c->lo[1]; j < c->hi[1]; j++, buf += row) {
      int64_t at = c->lo[0] + s->p.n[0] * (j + (int64_t)s->p.n[1] * k);
      if (fseek(f, velocities + (long)(at * 3 * (int64_t)sizeof(float)), SEEK_SET) != 0 ||
          (writing ? fwrite(buf, row, 1, f) : fread(buf, row, 1, f)) != 1)
        return 0;
    }
  return 1;
}

/* Between part p's arrays and its packed share. */
static void share_copy(const ts_lbm *s, lbm_part *p, char *buf, int to_part) {
  const ts_box *o = &p->own;
  size_t e = s->k->elem, row = e * (size_t)(o->hi[0] - o->lo[0]);
  for (int q = 0; q < s->k->q; q++)
    for (int z = o->lo[2]; z < o->hi[2]; z++)
      for (int y = o->lo[1]; y < o->hi[1]; y++, buf += row) {
        char *at = (char *)p->f + e * (size_t)(q * p->plane + lbm_local(p, o->lo[0], y, z));
        memcpy(to_part ? at : buf, to_part ? buf : at, row);
      }
  size_t velocities = sizeof(float) * 3 * (size_t)ts_box_cells(&s->decomp.boxes[p->sub]);
  if (to_part)
    memcpy(p->u_prev, buf, velocities);
  else if (p->u_prev)
    memcpy(buf, p->u_prev, velocities);
  else
    memset(buf, 0, velocities);
}

ts_status ts_lbm_save(ts_lbm *s, FILE *f) {
  size_t *counts = calloc((size_t)s->nranks, sizeof *counts);
  size_t mine_bytes = 0, total = 0;
  for (int b = 0; b < s->decomp.count; b++) {
    size_t bytes = (size_t)share_bytes(s, b);
    total += bytes;
    if (counts)
      counts[s->sub_rank[b]] += bytes;
    if (s->sub_rank[b] == s->rank)
      mine_bytes += bytes;
  }
  char *mine = malloc(mine_bytes + 1), *all = s->rank == 0 ? malloc(total) : NULL;
  ts_status st = counts && mine && (s->rank != 0 || all)
                     ? TS_OK
                     : ts_error(TS_ERR_NOMEM, "out of memory for a checkpoint");
  char *w = mine;
  for (int k = 0; k < s->nparts && st == TS_OK; k++) {
    if (wraps(&s->parts[k]) && s->steps % 2 == 0) /* the images as pushed into: the partners' */
      periodic_images(s, &s->parts[k], 1);
    if (s->k->to_host)
      s->k->to_host(&s->parts[k]);
    share_copy(s, &s->parts[k], w, 0);
    w += share_bytes(s, s->parts[k].sub);
  }
  st = ts_comm_agree(s->comm, st);
  if (st == TS_OK)
    st = ts_comm_gather(s->comm, mine, counts, all, 0);
  if (st == TS_OK && s->rank == 0) {
    long base = ftell(f);
    int64_t head[2] = {s->steps, s->have_change};
    int ok = base >= 0 && fwrite(head, sizeof head, 1, f) == 1;
    const char *r = all;
    for (int rank = 0; rank < s->nranks && ok; rank++)
      for (int b = 0; b < s->decomp.count && ok; b++)
        if (s->sub_rank[b] == rank) {
          ok = share_io(s, b, (char *)r, f, base, 1);
          r += share_bytes(s, b);
        }
    if (!ok || fseek(f, base + (long)ts_lbm_state_bytes(s), SEEK_SET) != 0)
      st = ts_error(TS_ERR_IO, "lbm: cannot write the checkpoint");
  }
  free(counts);
  free(mine);
  free(all);
  return ts_comm_agree(s->comm, st);
}

ts_status ts_lbm_load(ts_lbm *s, FILE *f, const char *path) {
  long base = ftell(f);
  int64_t head[2];
  ts_status st = TS_OK;
  if (base < 0 || fread(head, sizeof head, 1, f) != 1)
    st = ts_error(TS_ERR_INPUT, "%s: checkpoint is truncated", path);
  else if (head[0] < 0 || (head[1] != 0 && head[1] != 1))
    st = ts_error(TS_ERR_INPUT, "%s: checkpoint is corrupt (step count %lld)", path,
                  (long long)head[0]);
  for (int k = 0; k < s->nparts && st == TS_OK; k++) {
    lbm_part *p = &s->parts[k];
    int64_t cells = ts_box_cells(&s->decomp.boxes[p->sub]);
    char *buf = malloc((size_t)share_bytes(s, p->sub));
    if (!p->u_prev)
      p->u_prev = calloc((size_t)cells * 3, sizeof(float));
    if (!buf || !p->u_prev)
      st = ts_error(TS_ERR_NOMEM, "out of memory reading %s", path);
    else if (!share_io(s, p->sub, buf, f, base, 0))
      st = ts_error(TS_ERR_INPUT, "%s: checkpoint is truncated", path);
    if (st == TS_OK) {
      share_copy(s, p, buf, 1);
      if (s->k->to_device)
        s->k->to_device(p);
    }
    free(buf);
  }
  st = ts_comm_agree(s->comm, st);
  if (st == TS_OK) {
    s->steps = head[0];
    s->have_change = (int)head[1];
  }
  return st;
}
