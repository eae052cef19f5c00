/* Lattice Boltzmann solver (D2Q9 and D3Q19) in lattice units: SRT (BGK) or TRT collision, Guo
 * body force, optional Smagorinsky subgrid model, streaming in place with the AA pattern (one
 * copy of the populations, stored as their deviation from the rest weights in FP32 or FP16),
 * bounce-back walls, moving walls, velocity inlets and pressure outlets (equilibrium nodes),
 * periodic faces, and solid nodes from a mask. The box is split into subdomains over threads
 * and MPI ranks; halos carry only the populations that cross each face (5 of 19 for D3Q19), and
 * every split gives the same bits as one subdomain. */
#ifndef TESSERA_LBM_H
#define TESSERA_LBM_H

#include <stdint.h>
#include <stdio.h>

#include "tessera/comm.h"
#include "tessera/decomp.h"
#include "tessera/error.h"
#include "tessera/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ts_lbm_lattice { TS_LBM_D2Q9 = 0, TS_LBM_D3Q19 } ts_lbm_lattice;
typedef enum ts_lbm_collision { TS_LBM_SRT = 0, TS_LBM_TRT } ts_lbm_collision;
typedef enum ts_lbm_storage { TS_LBM_FP32 = 0, TS_LBM_FP16 } ts_lbm_storage;

/* Faces of the box: west (x = 0), east, south (y = 0), north, bottom (z = 0), top. */
enum { TS_LBM_WEST = 0, TS_LBM_EAST, TS_LBM_SOUTH, TS_LBM_NORTH, TS_LBM_BOTTOM, TS_LBM_TOP };

typedef enum ts_lbm_face_type {
  TS_LBM_WALL = 0, /* no-slip, half-way bounce-back */
  TS_LBM_MOVING,   /* a wall moving tangentially with velocity u (bounce-back with momentum) */
  TS_LBM_PERIODIC, /* wraps to the opposite face (which must be periodic too) */
  TS_LBM_VELOCITY, /* inlet: equilibrium nodes with velocity u and the density of the flow */
  TS_LBM_PRESSURE  /* outlet: equilibrium nodes with density rho and the velocity of the flow */
} ts_lbm_face_type;

typedef struct ts_lbm_face {
  ts_lbm_face_type type;
  double u[3]; /* moving wall, velocity inlet (lattice units) */
  double rho;  /* pressure outlet */
} ts_lbm_face;

typedef struct ts_lbm_params {
  ts_lbm_lattice lattice;
  ts_lbm_collision collision;
  ts_lbm_storage storage;
  int n[3];           /* cells per axis (n[2] = 1 for D2Q9) */
  double tau;         /* relaxation time (> 0.5); viscosity (tau - 1/2) / 3 */
  double magic;       /* TRT: the magic parameter Lambda (3/16 puts walls half-way exactly) */
  double force[3];    /* body force density (Guo) */
  double smagorinsky; /* Smagorinsky constant C_s, 0: off */
  ts_lbm_face face[6];
  /* NULL, or n[0] * n[1] * n[2] flags (index i + n0 * (j + n1 * k)), nonzero = solid. */
  const unsigned char *solid;
  /* Initial velocity per cell, or NULL for rest: called once per cell (lattice units). */
  void (*initial)(void *arg, int i, int j, int k, double *rho, double u[3]);
  void *initial_arg;
  /* Where the parts run: the CPU, or NVIDIA GPUs (cuda: subdomains take devices[] in turn, or
   * all GPUs of the process when ndevices is 0). */
  int cuda;
  int ndevices;
  int devices[16];
  ts_transport_kind transport; /* halos between ranks on GPUs (auto: NCCL, else ...) */
  /* Split: subdomains over all ranks (0: one per rank), decomposition and tile counts. */
  int subdomains;
  ts_decomp_kind decomposition;
  int parts[3];
} ts_lbm_params;

void ts_lbm_params_default(ts_lbm_params *p);

typedef struct ts_lbm ts_lbm;

/* Collective over the ranks of `comm`. Fails with TS_ERR_INPUT on impossible settings (tau <=
 * 1/2, a periodic face without its partner, a split across a periodic axis, ...). */
ts_status ts_lbm_create(ts_lbm **out, const ts_lbm_params *p, const ts_comm *comm);
void ts_lbm_destroy(ts_lbm *s);

/* Collective. Advances n time steps. */
ts_status ts_lbm_step(ts_lbm *s, int n);
int64_t ts_lbm_steps(const ts_lbm *s);
int64_t ts_lbm_fluid_cells(const ts_lbm *s); /* cells updated per step (fluid) */

typedef enum ts_lbm_var {
  TS_LBM_RHO = 0,
  TS_LBM_UX,
  TS_LBM_UY,
  TS_LBM_UZ,
  TS_LBM_SPEED,    /* |u| */
  TS_LBM_VORTICITY /* |curl u| (central differences, one-sided at walls) */
} ts_lbm_var;

/* Collective. The variable on every cell, out[i + n0 * (j + n1 * k)] on rank 0 (NULL
 * elsewhere is fine); solid cells are NaN. Macroscopic values of the current step. */
ts_status ts_lbm_get(ts_lbm *s, ts_lbm_var var, double *out);

/* Collective. The largest |u| change per cell since the previous call (0 at the first): the
 * steady-state measure of the case driver; every rank gets it. */
ts_status ts_lbm_change(ts_lbm *s, double *max_change);

/* Checkpoints. The state is the step count, the populations of every node (the frame's
 * included, in global node order) and the velocities ts_lbm_change compares with, so that a
 * solver that loads it continues with the same bits, whatever its split and ranks. The bytes of
 * the state (native byte order) for this lattice, storage and size: */
int64_t ts_lbm_state_bytes(const ts_lbm *s);
/* Collective. Writes the state to f on rank 0 (f is not used elsewhere), from its position. */
ts_status ts_lbm_save(ts_lbm *s, FILE *f);
/* Collective. Reads the state written by ts_lbm_save from f, open on every rank at the state's
 * first byte (each rank reads its own nodes); TS_ERR_INPUT naming path when it is short. The
 * caller checks that the lattice, storage and size are this solver's. */
ts_status ts_lbm_load(ts_lbm *s, FILE *f, const char *path);

/* Subdomains, and this rank's share of the split. */
const ts_decomp *ts_lbm_decomp(const ts_lbm *s);
/* Bytes one cell update moves: 2 x Q x population size (read and written in place) and the
 * node's kind byte: 153 for D3Q19 in fp32, 77 in fp16. */
double ts_lbm_bytes_per_cell(const ts_lbm *s);

#ifdef __cplusplus
}
#endif
#endif
