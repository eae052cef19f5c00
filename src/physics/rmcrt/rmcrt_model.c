/* The radiation module's entry in the table of physics modules (model.h): its case-file keys
 * ([rmcrt], and the walls in [boundary]), case driver and benchmark. */
#include "physics/model.h"
#include "physics/rmcrt/rmcrt_bench.h"
#include "physics/rmcrt/rmcrt_case.h"

/* The case-file sections of the module, with unit, default and meaning (docs/config.md). */
static const ts_config_key rmcrt_keys[] = {
    {"rmcrt", "nx", "cells", "41", "cells along x"},
    {"rmcrt", "ny", "cells", "nx", "cells along y"},
    {"rmcrt", "nz", "cells", "nx", "cells along z"},
    {"rmcrt", "length", "m", "1", "size of the box: one number, or three (x, y, z)"},
    {"rmcrt", "rays", "", "100", "rays traced from each cell"},
    {"rmcrt", "threshold", "", "0.05",
     "a ray stops when its transmissivity falls below this (Uintah's default)"},
    {"rmcrt", "seed", "", "1",
     "key of the counter-based random numbers (Philox): the result changes only with it"},
    {"rmcrt", "sigma", "W/m2/K4", "5.67051e-8", "Stefan-Boltzmann constant"},
    {"rmcrt", "absorption", "1/m", "burns_christon",
     "absorption coefficient: a number; burns_christon (0.9 (1-2|x-1/2|)(1-2|y-1/2|)"
     "(1-2|z-1/2|) + 0.1 at the cell centres, x, y, z as fractions of the box); or per cell from "
     "a file: FILE.nc or FILE.nc:VARIABLE (NetCDF, dimensions z, y, x as divq.nc), or a raw file "
     "of nx*ny*nz little-endian doubles, x fastest"},
    {"rmcrt", "temperature", "K", "(sigma T^4 = 1)",
     "temperature of the medium: a number, or per cell from a file as absorption"},
    {"rmcrt", "origin", "", "centre", "where rays start in their cell: centre, or jitter"},
    {"rmcrt", "sampling", "", "random",
     "ray directions: random (independent, uniform on the sphere) or lhs (Latin hypercube: "
     "each cell's rays stratified in cos(polar angle) and in azimuth)"},
    {"rmcrt", "coarsen", "", "1",
     "the data onion: a coarse level of cells coarsen^3 fine ones (their mean absorption and "
     "emission), which rays march beyond roi_halo fine cells of their own cell; 1: one level. "
     "Must divide nx, ny and nz"},
    {"rmcrt", "roi_halo", "cells", "4",
     "coarsen > 1: the region of interest, the fine cells within this many of a ray's cell per "
     "axis"},
    {"rmcrt", "couple", "", "none",
     "none (one radiation solve), or energy: rho_cp dT/dt = -divQ over `steps` steps of `dt`, on "
     "the task runtime"},
    {"rmcrt", "steps", "", "10", "couple = energy: time steps"},
    {"rmcrt", "dt", "s", "1", "couple = energy: time step"},
    {"rmcrt", "rho_cp", "J/m3/K", "1000", "couple = energy: volumetric heat capacity"},
    {"rmcrt", "radiation_interval", "steps", "1",
     "couple = energy: steps between radiation solves (the others reuse the last divQ)"},
    {"boundary", "wall_temperature", "K", "0",
     "rmcrt: wall temperature, one number or six (-x, +x, -y, +y, -z, +z)"},
    {"boundary", "wall_emissivity", "", "1", "rmcrt: wall emissivity in [0, 1], one or six"},
};

const ts_model ts_model_rmcrt = {
    .name = "rmcrt",
    .description = "radiation, reverse Monte Carlo ray tracing",
    .traces = 1,
    .keys = rmcrt_keys,
    .nkeys = (int)(sizeof rmcrt_keys / sizeof rmcrt_keys[0]),
    .run = ts_rmcrt_case_run,
    .bench = rmcrt_bench,
    .bench_usage = "[--size N] [--rays R] [--backend cpu|cuda] [--devices 0,1] [--patches P]\n"
                   "          [--levels 1|2] [--coarsen C] [--roi-halo H] [--lhs on|off]\n",
    .bench_help =
        "  bench rmcrt the Burns & Christon medium of N^3 cells, R rays per cell, traced once\n"
        "          untimed then once timed; prints rays/s and cell crossings/s; --levels 2: the\n"
        "          data onion (coarse cells of C^3 fine ones, default 4, fine within H cells)\n",
};
