/* Halo exchange plans: transfers from box intersections (or named outright as links), direct
 * copies between subdomains of one process, packed MPI messages (persistent requests) between
 * processes. */
#include "tessera/halo.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#if TESSERA_HAVE_MPI
#include <mpi.h>
#endif

typedef struct halo_xfer {
  int src, dst; /* subdomains */
  ts_box box;   /* the receiver's cells */
  int shift[3]; /* the sender's cells are box - shift (periodic axes) */
  int dir;
  size_t bytes;  /* packed size (all fields) */
  size_t offset; /* in the send or receive buffer */
  double seconds;
} halo_xfer;

struct ts_halo_plan {
  const ts_comm *comm;
  int nsub, rank, nfields;
  ts_halo_field layout[8];
  halo_xfer *local; /* both ends on this rank */
  halo_xfer *sends; /* this rank's subdomains to other ranks */
  halo_xfer *recvs; /* other ranks to this rank's subdomains */
  int nlocal, nsends, nrecvs;
  char *sendbuf, *recvbuf;
  size_t send_bytes, recv_bytes;
  const ts_halo_transport *transport; /* NULL: host buffers and MPI */
  ts_halo_message *messages;          /* with a transport: receives first, then sends */
  int *sub_rank;
  ts_halo_times *times;  /* per subdomain */
  int active;            /* started, not finished */
  ts_halo_copier copier; /* in-process copies, NULL: host memcpy */
#if TESSERA_HAVE_MPI
  MPI_Request *requests; /* receives first, then sends */
#endif
};

static int box_dir(const ts_box *box, const ts_box *own) {
  int d[3];
  for (int a = 0; a < 3; a++)
    d[a] = box->hi[a] <= own->lo[a] ? -1 : (box->lo[a] >= own->hi[a] ? 1 : 0);
  return ts_halo_dir(d[0], d[1], d[2]);
}

static uint32_t comp_mask(const ts_halo_field *f, int dir) {
  uint32_t all = f->ncomp >= 32 ? 0xffffffffu : ((1u << f->ncomp) - 1);
  if (!f->dir_mask || dir == ts_halo_dir(0, 0, 0))
    return all;
  return f->dir_mask[dir] & all;
}

static size_t xfer_bytes(const ts_halo_plan *p, const ts_box *box, int dir) {
  size_t bytes = 0, cells = (size_t)ts_box_cells(box);
  for (int f = 0; f < p->nfields; f++)
    bytes += (size_t)__builtin_popcount(comp_mask(&p->layout[f], dir)) * p->layout[f].elem * cells;
  return bytes;
}

/* Box b moved by shift (sign -1: back). */
static ts_box shifted_box(const ts_box *b, const int shift[3], int sign) {
  ts_box r = *b;
  for (int a = 0; a < 3; a++) {
    r.lo[a] += sign * shift[a];
    r.hi[a] += sign * shift[a];
  }
  return r;
}

/* The sending subdomain's fields of a transfer as seen in the receiver's coordinates (their
 * origin moved by the transfer's shift), in out (nfields entries); the fields themselves where
 * there is no shift. */
static const ts_halo_field *source_fields(const halo_xfer *x, int nfields,
                                          const ts_halo_field *fields, ts_halo_field out[8]) {
  if (!x->shift[0] && !x->shift[1] && !x->shift[2])
    return fields;
  for (int f = 0; f < nfields; f++) {
    out[f] = fields[f];
    for (int a = 0; a < 3; a++)
      out[f].lo[a] += x->shift[a];
  }
  return out;
}

static int append(halo_xfer **list, int *n, halo_xfer x) {
  halo_xfer *l = realloc(*list, sizeof *l * (size_t)(*n + 1));
  if (!l)
    return 0;
  l[(*n)++] = x;
  *list = l;
  return 1;
}

/* Files transfer x (this rank at one end at least) as a local copy, a send or a receive, with
 * its place in the send or receive buffer; one that moves nothing is dropped. 0: no memory. */
static int add_xfer(ts_halo_plan *p, const ts_halo_spec *spec, halo_xfer x, size_t *send_bytes,
                    size_t *recv_bytes) {
  int rs = spec->sub_rank[x.src], rd = spec->sub_rank[x.dst];
  if (rs != p->rank && rd != p->rank)
    return 1;
  x.bytes = xfer_bytes(p, &x.box, x.dir);
  if (x.bytes == 0)
    return 1;
  if (rs == rd)
    return append(&p->local, &p->nlocal, x);
  if (rs == p->rank) {
    x.offset = *send_bytes;
    *send_bytes += x.bytes;
    return append(&p->sends, &p->nsends, x);
  }
  x.offset = *recv_bytes;
  *recv_bytes += x.bytes;
  return append(&p->recvs, &p->nrecvs, x);
}

ts_status ts_halo_plan_create(ts_halo_plan **out, const ts_comm *c, const ts_halo_spec *spec) {
  *out = NULL;
  if (spec->nfields < 1 || spec->nfields > 8)
    return ts_error(TS_ERR_INTERNAL, "halo: 1 to 8 fields per plan");
  ts_halo_plan *p = calloc(1, sizeof *p);
  if (!p)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  p->comm = c;
  p->nsub = spec->nsub;
  p->rank = ts_comm_rank(c);
  p->nfields = spec->nfields;
  memcpy(p->layout, spec->layout, sizeof *spec->layout * (size_t)spec->nfields);
  p->sub_rank = malloc(sizeof(int) * (size_t)spec->nsub);
  p->times = calloc((size_t)spec->nsub, sizeof *p->times);
  int ok = p->sub_rank && p->times;
  if (ok)
    memcpy(p->sub_rank, spec->sub_rank, sizeof(int) * (size_t)spec->nsub);
  size_t send_bytes = 0, recv_bytes = 0;
  /* Ordered by (receiver, sender) on every rank, so the messages between two ranks are posted
   * in the same order at both ends (MPI keeps that order for one tag). */
  int shifts = 1; /* combinations of -period, 0, +period over the periodic axes */
  for (int a = 0; a < 3; a++)
    shifts *= spec->period[a] > 0 ? 3 : 1;
  for (int l = 0; l < spec->nlinks && ok; l++) {
    const ts_halo_link *link = &spec->links[l];
    halo_xfer x = {.src = link->src, .dst = link->dst, .box = link->box};
    memcpy(x.shift, link->shift, sizeof x.shift);
    x.dir = ts_halo_dir(0, 0, 0);
    ok = add_xfer(p, spec, x, &send_bytes, &recv_bytes);
  }
  for (int d = 0; d < spec->nsub && ok && spec->nlinks == 0; d++) {
    for (int s = 0; s < spec->nsub && ok; s++) {
      if (spec->sub_rank[s] != p->rank && spec->sub_rank[d] != p->rank)
        continue;
      for (int k = 0; k < shifts && ok; k++) {
        halo_xfer x = {.src = s, .dst = d};
        for (int a = 0, rest = k; a < 3; a++)
          if (spec->period[a] > 0) {
            x.shift[a] = (rest % 3 - 1) * spec->period[a];
            rest /= 3;
          }
        int unshifted = !x.shift[0] && !x.shift[1] && !x.shift[2];
        if (s == d && unshifted && !spec->include_self)
          continue;
        ts_box from = shifted_box(&spec->src[s], x.shift, 1);
        if (!ts_box_intersect(&from, &spec->dst[d], &x.box))
          continue;
        if (spec->src_owned) {
          ts_box seen = shifted_box(&x.box, x.shift, -1); /* in the sender's coordinates */
          x.dir = box_dir(&seen, &spec->src_owned[s]);
        } else {
          x.dir = box_dir(&x.box, spec->dst_owned ? &spec->dst_owned[d] : &spec->dst[d]);
        }
        ok = add_xfer(p, spec, x, &send_bytes, &recv_bytes);
      }
    }
  }
  p->send_bytes = send_bytes;
  p->recv_bytes = recv_bytes;
  if (ok && (send_bytes || recv_bytes)) {
    p->sendbuf = malloc(send_bytes ? send_bytes : 1);
    p->recvbuf = malloc(recv_bytes ? recv_bytes : 1);
    ok = p->sendbuf && p->recvbuf;
  }
  if (!ok) {
    ts_halo_plan_destroy(p);
    return ts_error(TS_ERR_NOMEM, "out of memory for a halo exchange plan");
  }
#if TESSERA_HAVE_MPI
  if (p->nsends + p->nrecvs > 0) {
    int *tag_ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (flag && spec->nsub > *tag_ub) {
      ts_halo_plan_destroy(p);
      return ts_error(TS_ERR_INPUT, "halo: %d subdomains exceed the MPI tag limit %d", spec->nsub,
                      *tag_ub);
    }
    p->requests = malloc(sizeof *p->requests * (size_t)(p->nsends + p->nrecvs));
    if (!p->requests) {
      ts_halo_plan_destroy(p);
      return ts_error(TS_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < p->nrecvs; k++) {
      halo_xfer *x = &p->recvs[k];
      MPI_Recv_init(p->recvbuf + x->offset, (int)x->bytes, MPI_BYTE, spec->sub_rank[x->src], x->dst,
                    MPI_COMM_WORLD, &p->requests[k]);
    }
    for (int k = 0; k < p->nsends; k++) {
      halo_xfer *x = &p->sends[k];
      MPI_Send_init(p->sendbuf + x->offset, (int)x->bytes, MPI_BYTE, spec->sub_rank[x->dst], x->dst,
                    MPI_COMM_WORLD, &p->requests[p->nrecvs + k]);
    }
  }
#else
  if (p->nsends + p->nrecvs > 0) {
    ts_halo_plan_destroy(p);
    return ts_error(TS_ERR_INTERNAL, "halo: subdomains on other ranks need MPI");
  }
#endif
  *out = p;
  return TS_OK;
}

void ts_halo_plan_destroy(ts_halo_plan *p) {
  if (!p)
    return;
#if TESSERA_HAVE_MPI
  if (p->requests) {
    if (p->active)
      MPI_Waitall(p->nsends + p->nrecvs, p->requests, MPI_STATUSES_IGNORE);
    for (int k = 0; k < p->nsends + p->nrecvs; k++)
      MPI_Request_free(&p->requests[k]);
    free(p->requests);
  }
#endif
  free(p->local);
  free(p->sends);
  free(p->recvs);
  if (p->transport) {
    if (p->active && p->transport->wait() == TS_OK)
      p->transport->done();
    p->transport->release(p->sendbuf);
    p->transport->release(p->recvbuf);
  } else {
    free(p->sendbuf);
    free(p->recvbuf);
  }
  free(p->messages);
  free(p->sub_rank);
  free(p->times);
  free(p);
}

/* Address of element (x, y, z) of component c of field f. */
static inline char *element(const ts_halo_field *f, int c, int x, int y, int z) {
  int64_t e = f->origin + (int64_t)(x - f->lo[0]) * f->stride[0] +
              (int64_t)(y - f->lo[1]) * f->stride[1] + (int64_t)(z - f->lo[2]) * f->stride[2];
  return (char *)f->comp[c] + (size_t)e * f->elem;
}

/* Copies a run of n bytes; runs of one element (the faces normal to x) by fixed-size copies,
 * which the compiler inlines (a library call per element would cost more than the element). */
static inline void copy_run(char *dst, const char *src, size_t n) {
  switch (n) {
  case 2: memcpy(dst, src, 2); break;
  case 4: memcpy(dst, src, 4); break;
  case 8: memcpy(dst, src, 8); break;
  default: memcpy(dst, src, n); break;
  }
}

/* Packs (to = NULL: from field into buf), unpacks (from = NULL) or copies field to field, run
 * by run along x, the runs shared by the threads when `threaded` (a large copy: a subdomain's
 * cells moving to a new owner in the same process). Returns bytes moved. */
static size_t move_box(const halo_xfer *x, int nfields, const ts_halo_field *from,
                       const ts_halo_field *to, char *buf, const ts_halo_field *layout,
                       int threaded) {
  const ts_box *b = &x->box;
  int ny = b->hi[1] - b->lo[1];
  int64_t runs = (int64_t)ny * (b->hi[2] - b->lo[2]);
  size_t moved = 0;
  for (int f = 0; f < nfields; f++) {
    uint32_t mask = comp_mask(&layout[f], x->dir);
    size_t run = (size_t)(b->hi[0] - b->lo[0]) * layout[f].elem;
    for (int c = 0; c < layout[f].ncomp; c++) {
      if (!(mask >> c & 1u))
        continue;
#pragma omp parallel for schedule(static) if (threaded)
      for (int64_t r = 0; r < runs; r++) {
        int y = b->lo[1] + (int)(r % ny), z = b->lo[2] + (int)(r / ny);
        char *dst = to ? element(&to[f], c, b->lo[0], y, z) : buf + moved + (size_t)r * run;
        const char *src =
            from ? element(&from[f], c, b->lo[0], y, z) : buf + moved + (size_t)r * run;
        copy_run(dst, src, run);
      }
      moved += (size_t)runs * run;
    }
  }
  return moved;
}

/* Packs (the sending subdomains' fields into buf) or unpacks (buf into the receiving ones')
 * the transfers of a list through the transport. */
static void transport_moves(const ts_halo_plan *p, const halo_xfer *list, int n,
                            const ts_halo_field *fields, char *buf, int pack) {
  int nf = p->nfields;
  uint32_t masks[8];
  ts_halo_field moved[8];
  for (int k = 0; k < n; k++) {
    const halo_xfer *x = &list[k];
    for (int f = 0; f < nf; f++)
      masks[f] = comp_mask(&p->layout[f], x->dir);
    const ts_halo_field *own = fields + (size_t)(pack ? x->src : x->dst) * nf;
    p->transport->move(&x->box, nf, masks, pack ? source_fields(x, nf, own, moved) : own,
                       buf + x->offset, pack);
  }
}

/* With a transport: queue the packs, then post every message. */
static ts_status start_transport(ts_halo_plan *p, const ts_halo_field *src) {
  double t0 = omp_get_wtime();
  transport_moves(p, p->sends, p->nsends, src, p->sendbuf, 1);
  double pack = omp_get_wtime() - t0;
  for (int k = 0; k < p->nsends; k++)
    p->times[p->sends[k].src].pack += pack / p->nsends;
  p->active = 1;
  return p->transport->post(p->nrecvs, p->messages, p->nsends, p->messages + p->nrecvs);
}

/* With a transport: wait for the messages, queue the unpacks, wait for them. */
static ts_status finish_transport(ts_halo_plan *p, const ts_halo_field *dst) {
  if (!p->active)
    return TS_OK;
  p->active = 0;
  double t0 = omp_get_wtime();
  TS_CALL(p->transport->wait());
  double t1 = omp_get_wtime();
  transport_moves(p, p->recvs, p->nrecvs, dst, p->recvbuf, 0);
  TS_CALL(p->transport->done());
  double t2 = omp_get_wtime();
  for (int s = 0; s < p->nsub; s++)
    if (p->sub_rank[s] == p->rank) {
      p->times[s].wait += t1 - t0;
      p->times[s].unpack += t2 - t1;
    }
  return TS_OK;
}

ts_status ts_halo_set_transport(ts_halo_plan *p, const ts_halo_transport *t) {
  if (p->nsends + p->nrecvs == 0)
    return TS_OK; /* nothing crosses ranks */
  char *send = t->alloc(p->send_bytes ? p->send_bytes : 1);
  char *recv = t->alloc(p->recv_bytes ? p->recv_bytes : 1);
  ts_halo_message *m = calloc((size_t)(p->nrecvs + p->nsends), sizeof *m);
  if (!send || !recv || !m) {
    if (send)
      t->release(send);
    if (recv)
      t->release(recv);
    free(m);
    return ts_error(TS_ERR_NOMEM, "halo: out of memory for the %s transport's buffers", t->name);
  }
  for (int k = 0; k < p->nrecvs; k++) {
    const halo_xfer *x = &p->recvs[k];
    m[k] = (ts_halo_message){p->sub_rank[x->src], x->dst, recv + x->offset, x->bytes};
  }
  for (int k = 0; k < p->nsends; k++) {
    const halo_xfer *x = &p->sends[k];
    m[p->nrecvs + k] = (ts_halo_message){p->sub_rank[x->dst], x->dst, send + x->offset, x->bytes};
  }
  free(p->sendbuf);
  free(p->recvbuf);
  free(p->messages);
  p->sendbuf = send;
  p->recvbuf = recv;
  p->messages = m;
  p->transport = t;
  return TS_OK;
}

ts_status ts_halo_start(ts_halo_plan *p, const ts_halo_field *src, const ts_halo_field *dst) {
  int nf = p->nfields;
  /* Fewer copies than threads, one of them large (cells changing owner): the threads share
   * each copy's rows instead of taking one copy each. */
  int large = 0;
  for (int k = 0; k < p->nlocal && !p->copier; k++)
    large |= ts_box_cells(&p->local[k].box) >= ((int64_t)1 << 20);
  if (large && p->nlocal < omp_get_max_threads()) {
    for (int k = 0; k < p->nlocal; k++) {
      halo_xfer *x = &p->local[k];
      double t0 = omp_get_wtime();
      ts_halo_field moved[8];
      move_box(x, nf, source_fields(x, nf, src + (size_t)x->src * nf, moved),
               dst + (size_t)x->dst * nf, NULL, p->layout, 1);
      x->seconds = omp_get_wtime() - t0;
    }
  } else {
#pragma omp parallel for schedule(dynamic, 1)
    for (int k = 0; k < p->nlocal; k++) {
      halo_xfer *x = &p->local[k];
      double t0 = omp_get_wtime();
      ts_halo_field moved[8];
      const ts_halo_field *from = source_fields(x, nf, src + (size_t)x->src * nf, moved);
      if (p->copier) {
        uint32_t masks[8];
        for (int f = 0; f < nf; f++)
          masks[f] = comp_mask(&p->layout[f], x->dir);
        p->copier(&x->box, nf, masks, from, dst + (size_t)x->dst * nf);
      } else {
        move_box(x, nf, from, dst + (size_t)x->dst * nf, NULL, p->layout, 0);
      }
      x->seconds = omp_get_wtime() - t0;
    }
  }
  for (int k = 0; k < p->nlocal; k++)
    p->times[p->local[k].dst].pack += p->local[k].seconds;
  if (p->transport && p->nsends + p->nrecvs > 0)
    return start_transport(p, src);
#if TESSERA_HAVE_MPI
  if (p->nsends + p->nrecvs > 0) {
    if (p->nrecvs)
      MPI_Startall(p->nrecvs, p->requests);
#pragma omp parallel for schedule(dynamic, 1)
    for (int k = 0; k < p->nsends; k++) {
      halo_xfer *x = &p->sends[k];
      double t0 = omp_get_wtime();
      ts_halo_field moved[8];
      move_box(x, nf, source_fields(x, nf, src + (size_t)x->src * nf, moved), NULL,
               p->sendbuf + x->offset, p->layout, 0);
      x->seconds = omp_get_wtime() - t0;
    }
    for (int k = 0; k < p->nsends; k++)
      p->times[p->sends[k].src].pack += p->sends[k].seconds;
    if (p->nsends)
      MPI_Startall(p->nsends, p->requests + p->nrecvs);
    p->active = 1;
  }
#endif
  return TS_OK;
}

ts_status ts_halo_finish(ts_halo_plan *p, const ts_halo_field *dst) {
  if (p->transport)
    return finish_transport(p, dst);
#if TESSERA_HAVE_MPI
  if (!p->active)
    return TS_OK;
  double t0 = omp_get_wtime();
  int rc = MPI_Waitall(p->nsends + p->nrecvs, p->requests, MPI_STATUSES_IGNORE);
  double wait = omp_get_wtime() - t0;
  p->active = 0;
  for (int s = 0; s < p->nsub; s++)
    if (p->sub_rank[s] == p->rank)
      p->times[s].wait += wait;
  if (rc != MPI_SUCCESS)
    return ts_error(TS_ERR_INTERNAL, "halo exchange: MPI wait failed");
  int nf = p->nfields;
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < p->nrecvs; k++) {
    halo_xfer *x = &p->recvs[k];
    double t1 = omp_get_wtime();
    move_box(x, nf, NULL, dst + (size_t)x->dst * nf, p->recvbuf + x->offset, p->layout, 0);
    x->seconds = omp_get_wtime() - t1;
  }
  for (int k = 0; k < p->nrecvs; k++)
    p->times[p->recvs[k].dst].unpack += p->recvs[k].seconds;
#else
  (void)p;
  (void)dst;
#endif
  return TS_OK;
}

void ts_halo_set_copier(ts_halo_plan *p, ts_halo_copier copy) { p->copier = copy; }

ts_halo_times ts_halo_times_of(const ts_halo_plan *p, int s) { return p->times[s]; }

int ts_halo_moves(const ts_halo_plan *p) { return p->nlocal + p->nsends + p->nrecvs > 0; }

void ts_halo_volume(const ts_halo_plan *p, int64_t *remote_cells, int64_t *local_cells) {
  *remote_cells = *local_cells = 0;
  for (int k = 0; k < p->nrecvs; k++)
    *remote_cells += ts_box_cells(&p->recvs[k].box);
  for (int k = 0; k < p->nlocal; k++)
    *local_cells += ts_box_cells(&p->local[k].box);
}
