/* The core of the schema: the case-file keys every model shares ([model], [time], [output],
 * [parallel]), with unit, default and meaning. Each physics module adds its own sections (its
 * entry in the table of modules, physics/model.h); the loader rejects keys in neither, and
 * docs/config.md documents them all. */
#include "tessera/config.h"

static const ts_config_key schema[] = {
    {"model", "type", "", "(required)",
     "the model to run: one of the physics modules (tessera info lists them)"},
    {"time", "end", "s", "(required for swe)", "simulated time at which the run stops"},
    {"time", "cfl", "", "0.25", "Courant number, in (0, 0.5]"},
    {"time", "integrator", "", "rk2", "rk2 (second-order SSP Runge-Kutta) or euler"},
    {"time", "max_steps", "", "0", "stop after this many steps (0: no limit)"},
    {"time", "start", "", "(none)",
     "swe: calendar date and time (UTC) of t = 0, as 2026-01-15T06:00:00 or 2026-01-15: the "
     "NetCDF files' time axis is then in seconds since it (else in seconds)"},
    {"time", "steps", "", "(required for lbm)", "lbm: stop after this many steps at the latest"},
    {"time", "steady_tolerance", "", "1e-5 (fp32), 1e-3 (fp16)",
     "lbm: stop when no cell's velocity changed by more than this (in units of lid_velocity) "
     "over check_interval steps (0: off)"},
    {"time", "check_interval", "steps", "1000", "lbm: steps between steady-state checks"},
    {"output", "dir", "", "out", "output directory (relative to the case file; --out overrides)"},
    {"output", "times", "s", "(none)", "comma-separated output times"},
    {"output", "interval", "s", "(none)", "output every interval seconds"},
    {"output", "formats", "", "asc, png (swe), vtk, png (lbm), vtk (rmcrt)",
     "any of asc, netcdf, vtk, png, geotiff (lbm: vtk, netcdf, png; rmcrt: vtk, netcdf)"},
    {"output", "lines", "m (swe, rmcrt), L (lbm)", "(none)",
     "profiles of every field along lines x0,y0[,z0],x1,y1[,z1],n; ... (n points): swe in map "
     "coordinates at each output time (line_K_<T>.csv), lbm in units of L at the end "
     "(line_K.csv, velocities in units of lid_velocity), rmcrt in metres at the end "
     "(line_K.csv: x,y,z,divq of the cell holding each point)"},
    {"output", "gauges", "", "(none)", "CSV file id,x,y of gauge points"},
    {"output", "gauge_interval", "s", "0", "time between gauge records (0: every step)"},
    {"output", "maxima", "", "on", "write max_h, max_speed, max_eta and arrival grids: on or off"},
    {"output", "netcdf_per_snapshot", "", "off",
     "swe, with the netcdf format: also one NetCDF file per output time (swe_T.nc, and "
     "swe_blocks_T.nc on a quadtree grid) besides the run's swe.nc: on or off"},
    {"output", "checkpoint_interval", "s", "0",
     "write a checkpoint every interval seconds (0: none)"},
    {"parallel", "backend", "", "cpu",
     "cpu (OpenMP), cuda (NVIDIA GPUs), or auto (cuda when a GPU is found)"},
    {"parallel", "devices", "", "all",
     "GPUs to use: all, or device numbers such as 0,1 (subdomains take them in turn); swe: cpu "
     "in the list (0,cpu) adds the host's cores beside the GPUs, in one process"},
    {"parallel", "subdomains", "", "auto",
     "subdomains over all ranks (auto: one per rank); several per rank share its threads"},
    {"parallel", "decomposition", "", "auto",
     "auto (fewest cut faces), rows, columns, tiles, or PXxPY such as 2x3 (PXxPYxPZ in 3D)"},
    {"parallel", "ghost_expansion", "steps", "1",
     "steps between halo exchanges (1..8, halo of 6 cells per step with rk2), or auto"},
    {"parallel", "early_exit", "", "on",
     "skip dry tiles with dry neighbours: on, off, or auto (both timed over 8 steps after the "
     "first, the faster kept)"},
    {"parallel", "overlap", "", "on",
     "hide the halo exchange behind interior computation: on or off"},
    {"parallel", "transport", "", "auto",
     "halos between MPI ranks on GPUs: auto (nccl, else cuda-mpi, else host), host, cuda-mpi, "
     "nccl"},
    {"parallel", "weights", "", "(equal)",
     "swe: relative sizes of the subdomains, one positive number per subdomain (e.g. 3,1 for a "
     "device three times as fast as the other): static balance by hand"},
    {"parallel", "balance", "", "auto",
     "swe, rows or columns, CPU and GPU subdomains: off; static (once: a few steps timed with "
     "every cell computed give each device its speed, and the bands are sized by it); dynamic "
     "(the same, then every rebalance_interval steps by where the work is, when the gain beats "
     "the cost of moving); auto (dynamic with more than one band, else off)"},
    {"parallel", "rebalance_interval", "steps", "auto (100)",
     "steps between the load balancer's measurements (auto: 500 where the GPU subdomains of one "
     "process take their steps on the devices, the last 2 of each interval timed)"},
    {"parallel", "gpu_kernels", "", "auto",
     "CUDA stage kernels of shallow water: auto (rows on subdomains of 4 Mi cells or more when "
     "early_exit is off or auto on a wet grid, else tiles), tiles, rows; same results"},
    {"output", "png_depth_max", "m", "0",
     "top of the PNG colour bar (0: the largest depth at t = 0, or 1 m if dry)"},
};

const ts_config_key *ts_config_core_schema(int *n) {
  *n = (int)(sizeof schema / sizeof schema[0]);
  return schema;
}
