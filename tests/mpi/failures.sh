#!/usr/bin/env bash
# A failing rank must end the whole MPI run quickly, with one clear message and a non-zero exit:
# a rank whose input file is missing (each rank starts in its own directory), a rank started
# with a different case file, a rank killed by a signal in the middle of the run, and a rank
# that fails while the load balancer moves boundaries (TESSERA_TEST_FAIL_MOVE: it cannot build
# its moved subdomain).
# usage: failures.sh TESSERA CASE_DIR WORKDIR
set -u
tessera=$1 src=$2 work=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMP_NUM_THREADS=1
rm -rf "$work" && mkdir -p "$work/a" "$work/b" "$work/c" || exit 1
cp "$src"/* "$work/a/" && cp "$src"/* "$work/b/" && cp "$src"/* "$work/c/"
rm "$work/b/bed.asc"
sed -i 's/^end = 30/end = 31/' "$work/c/four_sides.ini"
failures=0
check() { # check NAME CONDITION_STATUS MESSAGE
  if [ "$2" -eq 0 ]; then echo "ok   $1: $3"; else echo "FAIL $1: $3"; failures=$((failures + 1)); fi
}

# 1. Rank 1 cannot read its bed grid.
start=$(date +%s)
timeout 60 mpirun -np 1 --wdir "$work/a" "$tessera" run four_sides.ini --quiet : \
  -np 1 --wdir "$work/b" "$tessera" run four_sides.ini --quiet >"$work/missing.log" 2>&1
rc=$? took=$(($(date +%s) - start))
lines=$(grep -c '^tessera:' "$work/missing.log")
check "missing input" $([ $rc -ne 0 ] && [ $rc -ne 124 ] && echo 0 || echo 1) "exit code $rc after $took s"
check "missing input" $([ "$lines" -eq 1 ] && grep -q 'bed.asc' "$work/missing.log" && echo 0 || echo 1) \
  "one message naming the file: $(grep '^tessera:' "$work/missing.log")"
check "missing input" $([ ! -e "$work/a/out" ] && echo 0 || echo 1) "no output written"
check "missing input" $([ "$took" -le 20 ] && echo 0 || echo 1) "stopped within 20 s"

# 2. Rank 1 runs a different case file.
timeout 60 mpirun -np 1 --wdir "$work/a" "$tessera" run four_sides.ini --quiet : \
  -np 1 --wdir "$work/c" "$tessera" run four_sides.ini --quiet >"$work/different.log" 2>&1
rc=$?
check "different case" $([ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'different case file' "$work/different.log" && echo 0 || echo 1) \
  "exit code $rc: $(grep '^tessera:' "$work/different.log")"

# 3. Rank 1 is killed one second into a long run.
start=$(date +%s)
timeout 120 mpirun -np 2 sh -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then (sleep 1; kill -9 $$) & fi;
  exec "$0" run "$1" --quiet --set time.end=100000 --out "$2"' \
  "$tessera" "$work/a/four_sides.ini" "$work/killed" >"$work/killed.log" 2>&1
rc=$? took=$(($(date +%s) - start))
check "killed rank" $([ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$took" -le 30 ] && echo 0 || echo 1) \
  "mpirun ended with exit code $rc after $took s"
# 4. Rank 1 fails while the balancer moves the boundaries (dynamic, every 2 steps).
start=$(date +%s)
TESSERA_TEST_FAIL_MOVE=1 timeout 60 mpirun -x TESSERA_TEST_FAIL_MOVE -np 2 "$tessera" run \
  "$work/a/four_sides.ini" --quiet --set parallel.decomposition=rows \
  --set parallel.balance=dynamic --set parallel.rebalance_interval=2 --out "$work/moving" \
  >"$work/moving.log" 2>&1
rc=$? took=$(($(date +%s) - start))
check "failed move" $([ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$took" -le 30 ] && echo 0 || echo 1) \
  "exit code $rc after $took s"
check "failed move" $([ "$(grep -c '^tessera:' "$work/moving.log")" -eq 1 ] &&
  grep -q 'rank 1: .*moved subdomain' "$work/moving.log" && echo 0 || echo 1) \
  "one message from the failing rank: $(grep '^tessera:' "$work/moving.log")"
echo "RESULT: $([ $failures -eq 0 ] && echo PASS || echo "FAIL ($failures)")"
[ $failures -eq 0 ]
