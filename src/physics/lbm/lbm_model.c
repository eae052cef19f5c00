/* The lattice Boltzmann module's entry in the table of physics modules (model.h): its case-file
 * keys ([lbm]), case driver and benchmark. */
#include "physics/lbm/lbm_bench.h"
#include "physics/lbm/lbm_case.h"
#include "physics/model.h"

/* The case-file sections of the module, with unit, default and meaning (docs/config.md). */
static const ts_config_key lbm_keys[] = {
    {"lbm", "lattice", "", "D2Q9", "D2Q9 or D3Q19"},
    {"lbm", "collision", "", "srt", "srt (BGK) or trt (two relaxation times)"},
    {"lbm", "storage", "", "fp32", "population storage: fp32 or fp16"},
    {"lbm", "nx", "cells", "64", "cells along x; the unit of length L of the case is nx cells"},
    {"lbm", "ny", "cells", "nx", "cells along y"},
    {"lbm", "nz", "cells", "nx (D3Q19), 1 (D2Q9)", "cells along z"},
    {"lbm", "lid_velocity", "lattice", "0.1",
     "velocity scale U: the speed of lids and inlets, and of Re and Mach (at most 0.29)"},
    {"lbm", "reynolds", "", "(one of four)", "Reynolds number U L / nu, which sets the viscosity"},
    {"lbm", "viscosity", "lattice", "(one of four)", "kinematic viscosity in lattice units"},
    {"lbm", "tau", "", "(one of four)", "relaxation time, > 1/2"},
    {"lbm", "physical_length", "m", "(one of four, with the next two)",
     "physical size of L (nx cells): with physical_velocity and physical_viscosity sets Re"},
    {"lbm", "physical_velocity", "m/s", "(with physical_length)", "physical speed of U"},
    {"lbm", "physical_viscosity", "m2/s", "(with physical_length)", "physical viscosity"},
    {"lbm", "west", "", "wall", "face x = 0: wall, lid, periodic, inlet or outlet"},
    {"lbm", "east", "", "wall", "face x = L: wall, lid, periodic, inlet or outlet"},
    {"lbm", "south", "", "wall", "face y = 0: wall, lid, periodic, inlet or outlet"},
    {"lbm", "north", "", "wall", "face y = ny: wall, lid, periodic, inlet or outlet"},
    {"lbm", "bottom", "", "wall", "D3Q19, face z = 0: wall, lid, periodic, inlet or outlet"},
    {"lbm", "top", "", "wall", "D3Q19, face z = nz: wall, lid, periodic, inlet or outlet"},
    {"lbm", "west_velocity", "lattice", "U tangential (lid), U inwards (inlet)",
     "velocity of a lid or inlet face: ux,uy[,uz]"},
    {"lbm", "east_velocity", "lattice", "as west_velocity", "velocity of a lid or inlet face"},
    {"lbm", "south_velocity", "lattice", "as west_velocity", "velocity of a lid or inlet face"},
    {"lbm", "north_velocity", "lattice", "as west_velocity", "velocity of a lid or inlet face"},
    {"lbm", "bottom_velocity", "lattice", "as west_velocity", "velocity of a lid or inlet face"},
    {"lbm", "top_velocity", "lattice", "as west_velocity", "velocity of a lid or inlet face"},
    {"lbm", "west_density", "", "1", "density of an outlet face"},
    {"lbm", "east_density", "", "1", "density of an outlet face"},
    {"lbm", "south_density", "", "1", "density of an outlet face"},
    {"lbm", "north_density", "", "1", "density of an outlet face"},
    {"lbm", "bottom_density", "", "1", "density of an outlet face"},
    {"lbm", "top_density", "", "1", "density of an outlet face"},
    {"lbm", "force", "lattice", "0", "body force density fx,fy[,fz] (Guo forcing)"},
    {"lbm", "smagorinsky", "", "0", "Smagorinsky constant C_s of the subgrid model (0: off)"},
    {"lbm", "magic", "", "0.1875", "TRT magic parameter Lambda"},
    {"lbm", "boxes", "L", "(none)", "solid boxes x0,y0[,z0],x1,y1[,z1]; ... (units of L)"},
    {"lbm", "spheres", "L", "(none)", "solid spheres (circles) cx,cy[,cz],r; ... (units of L)"},
    {"lbm", "mask", "", "(none)", "solid cells from a file of nx*ny*nz bytes (x fastest)"},
};

const ts_model ts_model_lbm = {
    .name = "lbm",
    .description = "lattice Boltzmann D2Q9/D3Q19",
    .keys = lbm_keys,
    .nkeys = (int)(sizeof lbm_keys / sizeof lbm_keys[0]),
    .run = ts_lbm_case_run,
    .bench = lbm_bench,
    .bench_usage =
        "[--lattice D2Q9|D3Q19] [--storage fp32|fp16] [--collision srt|trt]\n"
        "                         [--size N] [--steps S] [--subdomains S] [--json FILE]\n"
        "                         [--backend cpu|cuda] [--devices 0,1] [--weak|--strong]\n"
        "                         [--decomposition PXxPYxPZ]\n",
    .bench_help =
        "  bench lbm   an N^3 (D3Q19) or N^2 (D2Q9) box, periodic along x and y; prints MLUPs and\n"
        "          the fraction of the memory-bandwidth roofline (2 x Q populations + 1 B per "
        "cell\n"
        "          update); --weak | --strong: one GPU (one subdomain) against all of --devices\n"
        "          (--subdomains), N^3 cells per unit or in all, with the efficiency;\n"
        "          --decomposition PXxPYxPZ: tiles instead of bands along z\n",
};
