/* `tessera bench balance`: one shallow-water case run once per load-balance mode ([parallel]
 * balance = off, static, dynamic, auto) in one process (or the same sequence on every MPI rank),
 * with a table of the run times and of what the balancer did. */
#ifndef TESSERA_BENCH_BALANCE_H
#define TESSERA_BENCH_BALANCE_H

/* argv: the options after "bench balance"; returns the exit status. */
int bench_balance(int argc, char **argv);

#endif
