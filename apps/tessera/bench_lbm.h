/* `tessera bench lbm`: the lattice Boltzmann solver on a periodic box, in MLUPs and as a fraction
 * of the memory-bandwidth roofline measured in the same run. */
#ifndef TESSERA_BENCH_LBM_H
#define TESSERA_BENCH_LBM_H

/* argv: the options after "bench lbm"; returns the exit status. */
int bench_lbm(int argc, char **argv);

#endif
