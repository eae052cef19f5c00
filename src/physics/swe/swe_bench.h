/* `tessera bench swe` and the shallow-water lines of `tessera info` (swe_bench.c). */
#ifndef TESSERA_SWE_BENCH_H
#define TESSERA_SWE_BENCH_H

/* argv: the options after "bench swe"; full_argc/argv: the whole command (to start it again
 * under mpirun). Returns the exit status. */
int swe_bench(int argc, char **argv, int full_argc, char **full_argv);
/* `tessera info`: each device's speed on the bench basin (measure = 0: nothing). */
void swe_info_speeds(int measure);

#endif
