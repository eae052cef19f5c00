/* The schema: every case-file key Tessera knows, with its unit, default and meaning. The loader
 * rejects keys that are not here; docs/config.md documents the same table. */
#include "tessera/config.h"

static const ts_config_key schema[] = {
    {"model", "type", "", "(required)", "the model to run: swe (shallow water)"},
    {"time", "end", "s", "(required)", "simulated time at which the run stops"},
    {"time", "cfl", "", "0.25", "Courant number, in (0, 0.5]"},
    {"time", "integrator", "", "rk2", "rk2 (second-order SSP Runge-Kutta) or euler"},
    {"time", "max_steps", "", "0", "stop after this many steps (0: no limit)"},
    {"swe", "bed", "", "(required)", "bed elevation grid (m), ESRI ASCII (.asc or .asc.gz); NODATA cells are walls"},
    {"swe", "initial_surface", "", "(none)", "initial water-surface elevation grid (m); NODATA or below the bed: dry"},
    {"swe", "initial_depth", "", "(none)", "initial water depth grid (m), instead of initial_surface"},
    {"swe", "initial_hu", "", "0", "initial unit discharge along x grid (m2/s)"},
    {"swe", "initial_hv", "", "0", "initial unit discharge along y grid (m2/s)"},
    {"swe", "manning", "s/m^(1/3)", "0", "Manning n: a number or a grid file"},
    {"swe", "chezy", "m^(1/2)/s", "(none)", "Chezy C: a number or a grid file (instead of manning)"},
    {"swe", "gravity", "m/s2", "9.81", "gravitational acceleration"},
    {"swe", "precision", "", "float", "float or double"},
    {"swe", "theta", "", "1.3", "generalised minmod limiter parameter, in [1, 2]"},
    {"swe", "dry_depth", "m", "1e-4", "depth at or below which a cell counts as dry"},
    {"swe", "arrival_depth", "m", "0.01", "depth that defines the first arrival time"},
    {"swe", "tile_size", "cells", "32", "edge of the tiles of the activity mask (early exit)"},
    {"boundary", "north", "", "wall", "wall, outflow, level or inflow"},
    {"boundary", "south", "", "wall", "wall, outflow, level or inflow"},
    {"boundary", "east", "", "wall", "wall, outflow, level or inflow"},
    {"boundary", "west", "", "wall", "wall, outflow, level or inflow"},
    {"boundary", "north_level", "m", "(required for level)", "water-surface elevation of a level boundary"},
    {"boundary", "south_level", "m", "(required for level)", "water-surface elevation of a level boundary"},
    {"boundary", "east_level", "m", "(required for level)", "water-surface elevation of a level boundary"},
    {"boundary", "west_level", "m", "(required for level)", "water-surface elevation of a level boundary"},
    {"boundary", "north_hydrograph", "", "(required for inflow)", "CSV file t,q: total discharge (m3/s) through the side over time (s)"},
    {"boundary", "south_hydrograph", "", "(required for inflow)", "CSV file t,q: total discharge (m3/s) through the side over time (s)"},
    {"boundary", "east_hydrograph", "", "(required for inflow)", "CSV file t,q: total discharge (m3/s) through the side over time (s)"},
    {"boundary", "west_hydrograph", "", "(required for inflow)", "CSV file t,q: total discharge (m3/s) through the side over time (s)"},
    {"output", "dir", "", "out", "output directory (relative to the case file; --out overrides)"},
    {"output", "times", "s", "(none)", "comma-separated output times"},
    {"output", "interval", "s", "(none)", "output every interval seconds"},
    {"output", "formats", "", "asc, png", "any of asc, netcdf, vtk, png"},
    {"output", "gauges", "", "(none)", "CSV file id,x,y of gauge points"},
    {"output", "gauge_interval", "s", "0", "time between gauge records (0: every step)"},
    {"output", "maxima", "", "on", "write max_h, max_speed, max_eta and arrival grids: on or off"},
    {"output", "checkpoint_interval", "s", "0", "write a checkpoint every interval seconds (0: none)"},
    {"output", "png_depth_max", "m", "0", "top of the PNG colour bar (0: automatic)"},
};

const ts_config_key *ts_config_schema(int *n) {
  *n = (int)(sizeof schema / sizeof schema[0]);
  return schema;
}
