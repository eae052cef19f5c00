/* `tessera bench rmcrt` (rmcrt_bench.c). */
#ifndef TESSERA_RMCRT_BENCH_H
#define TESSERA_RMCRT_BENCH_H

/* argv: the options after "bench rmcrt"; returns the exit status. */
int rmcrt_bench(int argc, char **argv, int full_argc, char **full_argv);

#endif
