/* The shallow-water module's entry in the table of physics modules (model.h): its case-file
 * keys ([swe], [rain], [boundary], [grid]), case driver, benchmark and `tessera info` speeds. */
#include "physics/model.h"
#include "physics/swe/swe_bench.h"
#include "physics/swe/swe_case.h"
#include "tessera/swe.h"

/* The case-file sections of the module, with unit, default and meaning (docs/config.md). */
static const ts_config_key swe_keys[] = {
    {"swe", "bed", "", "(required)",
     "bed elevation grid (m): ESRI ASCII (.asc, .asc.gz), GeoTIFF, NetCDF or any raster GDAL "
     "reads; NODATA cells are walls"},
    {"swe", "crs", "", "the bed's",
     "coordinate reference system of the case (EPSG:2154, WKT or PROJ string) when the bed has "
     "none; must agree with the bed's"},
    {"swe", "initial_surface", "", "(none)",
     "initial water-surface elevation grid (m); NODATA or below the bed: dry"},
    {"swe", "initial_depth", "", "(none)",
     "initial water depth grid (m), instead of initial_surface; >= 0, no NODATA"},
    {"swe", "initial_hu", "", "0", "initial unit discharge along x grid (m2/s); NODATA: 0"},
    {"swe", "initial_hv", "", "0", "initial unit discharge along y grid (m2/s); NODATA: 0"},
    {"swe", "manning", "s/m^(1/3)", "0", "Manning n: a number or a grid file"},
    {"swe", "chezy", "m^(1/2)/s", "(none)",
     "Chezy C: a number or a grid file (instead of manning)"},
    {"swe", "gravity", "m/s2", "9.81", "gravitational acceleration"},
    {"swe", "precision", "", "float", "float or double"},
    {"swe", "theta", "", "1.3", "generalised minmod limiter parameter, in [1, 2]"},
    {"swe", "dry_depth", "m", "1e-4", "depth at or below which a cell counts as dry"},
    {"swe", "arrival_depth", "m", "0.01", "depth that defines the first arrival time"},
    {"swe", "tile_size", "cells", TS_SWE_TILE_SIZE_TEXT,
     "edge of the tiles of the activity mask (early exit), or auto (16, 32 and 64 timed on the "
     "first steps, the fastest kept)"},
    {"grid", "type", "", "uniform",
     "uniform (the bed's grid) or buq (a block-uniform quadtree whose finest cells are the bed's; "
     "in progress: CPU backend, one process, wall boundaries)"},
    {"grid", "block", "cells", "16", "type = buq: cells along a block's side, 16 or 8"},
    {"grid", "levels", "", "1",
     "type = buq: levels, 1 to 8 (the coarsest cells 2^(levels-1) wide)"},
    {"grid", "refine", "", "(none)",
     "type = buq: grid of the wanted cell size (m) per area, the bed's geometry; NODATA: no wish"},
    {"grid", "refine_slope", "m/m", "0",
     "type = buq: the finest cells where the bed is steeper than this (0: no rule)"},
    {"grid", "refine_water", "cells", "(none)",
     "type = buq: the finest cells within this many cells of water at the start"},
    {"rain", "rate", "mm/h", "(none)",
     "rain on every active cell: a number; a CSV file (.csv, .txt) of rows t,mm_per_h, each rate "
     "holding until the next row's time (piecewise constant); or a raster stack (GeoTIFF bands, "
     "NetCDF time steps, one grid) of mm/h per cell, NODATA: no rain"},
    {"rain", "start", "s", "0", "time at which the rain (its first row or frame) begins"},
    {"rain", "end", "s", "(none)",
     "time at which the rain stops (a CSV's last rate and a single grid last until then)"},
    {"rain", "interval", "s", "(none)",
     "time between the frames of a raster stack whose file gives no frame times"},
    {"rain", "loss_initial", "mm", "0",
     "initial loss (abstraction): water taken from each cell before the continuing loss; a "
     "number or a grid"},
    {"rain", "loss_rate", "mm/h", "0",
     "continuing loss (infiltration) once the initial loss is filled; a number or a grid"},
    {"boundary", "north", "", "wall", "wall, outflow, level or inflow"},
    {"boundary", "south", "", "wall", "wall, outflow, level or inflow"},
    {"boundary", "east", "", "wall", "wall, outflow, level or inflow"},
    {"boundary", "west", "", "wall", "wall, outflow, level or inflow"},
    {"boundary", "north_level", "m", "(required for level)",
     "water-surface elevation of a level boundary"},
    {"boundary", "south_level", "m", "(required for level)",
     "water-surface elevation of a level boundary"},
    {"boundary", "east_level", "m", "(required for level)",
     "water-surface elevation of a level boundary"},
    {"boundary", "west_level", "m", "(required for level)",
     "water-surface elevation of a level boundary"},
    {"boundary", "north_hydrograph", "", "(required for inflow)",
     "CSV file t,q: total discharge (m3/s) through the side over time (s)"},
    {"boundary", "south_hydrograph", "", "(required for inflow)",
     "CSV file t,q: total discharge (m3/s) through the side over time (s)"},
    {"boundary", "east_hydrograph", "", "(required for inflow)",
     "CSV file t,q: total discharge (m3/s) through the side over time (s)"},
    {"boundary", "west_hydrograph", "", "(required for inflow)",
     "CSV file t,q: total discharge (m3/s) through the side over time (s)"},
};

const ts_model ts_model_swe = {
    .name = "swe",
    .description = "shallow water, Kurganov-Petrova",
    .keys = swe_keys,
    .nkeys = (int)(sizeof swe_keys / sizeof swe_keys[0]),
    .run = ts_swe_case_run,
    .bench = swe_bench,
    .bench_usage =
        "[--size N] [--precision float|double] [--steps S] [--json FILE]\n"
        "                         [--subdomains S] [--ranks R] [--decomposition "
        "auto|rows|columns|tiles]\n"
        "                         [--ghost-expansion K] [--backend cpu|cuda] [--devices 0,1,cpu]\n"
        "                         [--transport auto|host|cuda-mpi|nccl] [--gpu-kernels "
        "auto|tiles|rows]\n"
        "                         [--balance off|static|dynamic|auto] [--weak|--strong [--mode "
        "threads|mpi]]\n"
        "                         [--grid uniform|buq] [--levels L] [--block 8|16]\n",
    .bench_help =
        "  bench swe   time the shallow-water solver on a synthetic, fully wet N x N domain, "
        "split\n"
        "          into S subdomains on R MPI ranks (R > 1 starts mpirun itself); prints "
        "Mcells/s,\n"
        "          the time per phase and the hidden fraction of the halo exchange\n"
        "            --weak | --strong        scaling from one GPU to all of --devices: N x N "
        "cells\n"
        "                                     per GPU, or N x N in all; a table with efficiencies\n"
        "            --mode threads | mpi     the GPUs in one process, or one MPI rank per GPU\n"
        "            --transport T            halos between GPU ranks (default auto: NCCL, else\n"
        "                                     CUDA-aware MPI, else staged through the host)\n"
        "            --balance B              load balance of the subdomains (default off; static\n"
        "                                     times the devices during the warm-up and resizes;\n"
        "                                     --devices 0,cpu adds the host's cores to a GPU)\n"
        "            --gpu-kernels K          CUDA stage kernels (default auto: rows on large\n"
        "                                     wet subdomains, else tiles; same results)\n"
        "            --grid buq --levels L    a quadtree grid of blocks of --block cells (default\n"
        "                                     16): one level, or L levels refined on the bump;\n"
        "                                     Mcells/s over the quadtree's cells\n",
    .info = swe_info_speeds,
};
