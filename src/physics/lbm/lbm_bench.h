/* `tessera bench lbm`: the lattice Boltzmann solver on a periodic box, in MLUPs and as a fraction
 * of the memory-bandwidth roofline measured in the same run. */
#ifndef TESSERA_LBM_BENCH_H
#define TESSERA_LBM_BENCH_H

/* argv: the options after "bench lbm" (full_argc/argv: the whole command, unused); returns the
 * exit status. */
int lbm_bench(int argc, char **argv, int full_argc, char **full_argv);

#endif
