#!/usr/bin/env bash
# A stop that saves (physics/stop.h), on the four-sides case (snapshots at 10, 300 and 600 s, a
# gauge every second, maxima). MODE:
#   swe     SIGTERM a tenth of a second after the 10 s snapshot exists (a step between output
#           times; the case runs from 10 to 300 s in about half a second on one thread):
#           exit code 3, summary.json status "stopped" and
#           checkpoint_latest checkpoint_stop.tsc; a restart from it into the stopped run's
#           directory leaves there every file of the uninterrupted run, byte for byte (swe.nc:
#           the same ncdump text, as HDF5 lays out a file it grew in two runs differently).
#   mpi     the same on 2 ranks, SIGTERM sent to rank 1 alone (the ranks must agree on the step
#           to stop after), the restart on 2 ranks; then SIGUSR1 to mpirun (forwarded): exit 3;
#           and the failed write of mode failed on 2 ranks (the error line prefixed "rank 0: ").
#   second  two signals (the process held stopped while they are sent): the second ends the
#           process by its signal at once, without summary.json.
#   failed  a write that fails (a directory where the 300 s snapshot goes): exit code 1, summary
#           status "failed" with the error line, checkpoint_latest the last periodic checkpoint.
#   lbm     SIGTERM half a second after a lattice Boltzmann run of 40000 steps (LBM_STOP_STEPS) locked its output
#           directory (CASE: an lbm case; checks every 333 steps, so that it may stop after an
#           odd step): exit 3, the fields, summary status "stopped" at the step reached and
#           checkpoint_stop.tsc; a restart from it into the stopped run's directory leaves there
#           every file of the uninterrupted run, byte for byte; and so does one to the first
#           check after the stop (its max_change compares with the check before the stop). A
#           checkpoint of a shallow water run (its header), a truncated one and one of another
#           size are refused with one line naming the file: exit 2, nothing written.
#   lbm-mpi the lbm stop on 2 ranks, SIGTERM to rank 1 alone (once the output directory is
#           locked: the ranks run); the restart on 2 ranks, and on one (another split: the
#           checkpoint does not depend on it), give the uninterrupted run's files.
# usage: stop.sh TESSERA CASE WORKDIR MODE
set -u
tessera=$1 case=$2 work=$3 mode=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
rm -rf "$work" && mkdir -p "$work" || exit 1
# shellcheck disable=SC2054 # the commas are in values
common=(--quiet --set time.end=600 --set output.times=10,300,600 --set output.checkpoint_interval=0)
failures=0
check() { # check NAME CONDITION_STATUS MESSAGE
  if [ "$2" -eq 0 ]; then echo "ok   $1: $3"; else echo "FAIL $1: $3"; failures=$((failures + 1)); fi
}
field() { grep -m1 "\"$2\":" "$1" | sed -e 's/^ *"[a-z_]*": //' -e 's/,$//'; }

# wait_for FILE PID: until FILE exists (0), or the process has ended or 120 s passed (1).
wait_for() {
  for _ in $(seq 2400); do
    [ -e "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# stopped NAME RC DIR: the stopped run's exit code and summary.
stopped() {
  local t
  t=$(field "$3/summary.json" t_end)
  check "$1" $([ "$2" -eq 3 ] && echo 0 || echo 1) "exit code $2 (3: stopped, saved)"
  check "$1" $(awk -v t="$t" 'BEGIN { exit !(t > 10 && t < 300) }' && echo 0 || echo 1) \
    "stopped between output times: t = $t s"
  check "$1" $([ "$(field "$3/summary.json" status)" = '"stopped"' ] &&
    [ "$(field "$3/summary.json" error)" = null ] &&
    [ "$(field "$3/summary.json" checkpoint_latest)" = '"checkpoint_stop.tsc"' ] &&
    [ -s "$3/checkpoint_stop.tsc" ] && echo 0 || echo 1) \
    "summary: status $(field "$3/summary.json" status), checkpoint_latest $(field "$3/summary.json" checkpoint_latest)"
}

# same NAME REF RESTARTED: every file of REF (but summary.json) equals RESTARTED's (a NetCDF file:
# its ncdump text, where ncdump is installed); the restart's summary ends where REF's does.
same() {
  local differ="" f name
  for f in "$2"/*; do
    name=$(basename "$f")
    [ "$name" = summary.json ] && continue
    if [ "${name%.nc}" != "$name" ] && command -v ncdump >/dev/null; then
      [ "$(ncdump "$f")" = "$(ncdump "$3/$name" 2>&1)" ] || differ="$differ $name"
    elif [ "${name%.nc}" = "$name" ]; then
      cmp -s "$f" "$3/$name" || differ="$differ $name"
    fi
  done
  check "$1" $([ -z "$differ" ] && echo 0 || echo 1) "$(ls "$2" | wc -l) files equal the uninterrupted run's${differ:+, differ:$differ}"
  local k ends=0
  for k in status steps t_end mass_final wet_cells max_change steady; do
    [ "$(field "$2/summary.json" $k)" = "$(field "$3/summary.json" $k)" ] || ends=1
  done
  check "$1" $ends "restart's summary: status $(field "$3/summary.json" status), steps $(field "$3/summary.json" steps), as the uninterrupted run's"
}

# lbm_stopped NAME RC DIR: a stopped lattice Boltzmann run's exit code, summary and files.
lbm_stopped() {
  local steps
  steps=$(field "$3/summary.json" steps)
  check "$1" $([ "$2" -eq 3 ] && echo 0 || echo 1) "exit code $2 (3: stopped, saved)"
  check "$1" $([ "$(field "$3/summary.json" status)" = '"stopped"' ] &&
    [ "$(field "$3/summary.json" checkpoint_latest)" = '"checkpoint_stop.tsc"' ] &&
    [ -s "$3/checkpoint_stop.tsc" ] && [ -s "$3/flow.vti" ] &&
    [ "${steps:-0}" -gt 0 ] && [ "$steps" -lt "${LBM_STOP_STEPS:-40000}" ] && echo 0 || echo 1) \
    "summary: status $(field "$3/summary.json" status) after $steps steps, checkpoint_latest $(field "$3/summary.json" checkpoint_latest)"
}

# refused NAME CHECKPOINT [OPTION...]: a restart from CHECKPOINT fails with exit code 2 and one
# line naming it, and writes nothing.
refused() {
  local name=$1 ckpt=$2 rc
  shift 2
  rm -rf "$work/bad"
  "$tessera" run "$case" "${lbm[@]}" "$@" --out "$work/bad" --restart "$ckpt" 2>"$work/bad.log"
  rc=$?
  check "$name" $([ $rc -eq 2 ] && [ "$(wc -l <"$work/bad.log")" -eq 1 ] &&
    grep -qF "$ckpt:" "$work/bad.log" && [ ! -e "$work/bad" ] && echo 0 || echo 1) \
    "exit code $rc: $(cat "$work/bad.log")"
}

lbm=(--quiet --set time.steps=${LBM_STOP_STEPS:-40000} --set time.steady_tolerance=0 --set time.check_interval=333)

case $mode in
swe)
  timeout 600 "$tessera" run "$case" "${common[@]}" --out "$work/ref" || check ref 1 "the reference run failed"
  "$tessera" run "$case" "${common[@]}" --out "$work/stop" 2>"$work/stop.log" &
  pid=$!
  wait_for "$work/stop/h_t000010.asc" $pid && sleep 0.1 && kill -TERM $pid
  wait $pid
  stopped "stop" $? "$work/stop"
  timeout 600 "$tessera" run "$case" "${common[@]}" --out "$work/stop" \
    --restart "$work/stop/checkpoint_stop.tsc"
  check "restart" $? "exit code of the restart"
  same "restart" "$work/ref" "$work/stop"
  ;;
mpi)
  timeout 600 "$tessera" run "$case" "${common[@]}" --out "$work/ref" || check ref 1 "the reference run failed"
  # shellcheck disable=SC2016
  mpirun --oversubscribe -np 2 sh -c 'echo $$ >"$0/pid.$OMPI_COMM_WORLD_RANK"; exec "$@"' "$work" "$tessera" run "$case" "${common[@]}" --out "$work/stop" >"$work/stop.log" 2>&1 &
  pid=$!
  wait_for "$work/stop/h_t000010.asc" $pid && sleep 0.1 && kill -TERM "$(cat "$work/pid.1")"
  wait $pid
  stopped "rank 1 alone signalled" $? "$work/stop"
  timeout 600 mpirun --oversubscribe -np 2 "$tessera" run "$case" "${common[@]}" \
    --out "$work/stop" --restart "$work/stop/checkpoint_stop.tsc"
  check "restart on 2 ranks" $? "exit code of the restart"
  same "restart on 2 ranks" "$work/ref" "$work/stop"
  mpirun --oversubscribe -np 2 "$tessera" run "$case" "${common[@]}" --out "$work/usr1" >"$work/usr1.log" 2>&1 &
  pid=$!
  wait_for "$work/usr1/h_t000010.asc" $pid && sleep 0.1 && kill -USR1 $pid
  wait $pid
  stopped "SIGUSR1 to mpirun" $? "$work/usr1"
  mkdir -p "$work/fail/h_t000300.asc"
  timeout 600 mpirun --oversubscribe -np 2 "$tessera" run "$case" "${common[@]}" \
    --set output.checkpoint_interval=100 --out "$work/fail" 2>"$work/fail.log"
  error=$(field "$work/fail/summary.json" error)
  check "failed on 2 ranks" $([ "$(field "$work/fail/summary.json" status)" = '"failed"' ] &&
    [ "\"$(sed -n 's/^tessera: //p' "$work/fail.log")\"" = "$error" ] &&
    [ "${error#\"rank 0: }" != "$error" ] && echo 0 || echo 1) \
    "summary: status $(field "$work/fail/summary.json" status), error $error"
  ;;
second)
  "$tessera" run "$case" "${common[@]}" --out "$work/stop" 2>"$work/stop.log" &
  pid=$!
  wait_for "$work/stop/h_t000010.asc" $pid && kill -STOP $pid && kill -INT $pid && kill -TERM $pid
  start=$(date +%s)
  kill -CONT $pid
  wait $pid
  rc=$? took=$(($(date +%s) - start))
  check "second signal" $([ $rc -eq 130 ] || [ $rc -eq 143 ] && echo 0 || echo 1) \
    "exit code $rc (130 or 143: ended by SIGINT or SIGTERM)"
  check "second signal" $([ ! -e "$work/stop/summary.json" ] && [ "$took" -le 5 ] && echo 0 || echo 1) \
    "no summary.json, ended within $took s"
  ;;
failed)
  mkdir -p "$work/fail/h_t000300.asc"
  timeout 600 "$tessera" run "$case" "${common[@]}" --set output.checkpoint_interval=100 \
    --out "$work/fail" 2>"$work/fail.log"
  rc=$?
  error=$(field "$work/fail/summary.json" error)
  check "failed run" $([ $rc -eq 1 ] && echo 0 || echo 1) "exit code $rc: $(cat "$work/fail.log")"
  check "failed run" $([ "$(field "$work/fail/summary.json" status)" = '"failed"' ] &&
    [ "\"$(sed -n 's/^tessera: //p' "$work/fail.log")\"" = "$error" ] && echo 0 || echo 1) \
    "summary: status $(field "$work/fail/summary.json" status), error $error"
  check "failed run" $([ "$(field "$work/fail/summary.json" checkpoint_latest)" = '"checkpoint_t000200.tsc"' ] &&
    echo 0 || echo 1) "checkpoint_latest $(field "$work/fail/summary.json" checkpoint_latest)"
  ;;
lbm)
  timeout 600 "$tessera" run "$case" "${lbm[@]}" --out "$work/ref" 2>/dev/null || check ref 1 "the reference run failed"
  "$tessera" run "$case" "${lbm[@]}" --out "$work/lbm" 2>"$work/lbm.log" &
  pid=$!
  wait_for "$work/lbm/.tessera.lock" $pid && sleep 0.5 && kill -TERM $pid
  wait $pid
  lbm_stopped "lbm" $? "$work/lbm"
  cp "$work/lbm/checkpoint_stop.tsc" "$work/stop.tsc"
  next=$((($(field "$work/lbm/summary.json" steps) / 333 + 1) * 333))
  timeout 600 "$tessera" run "$case" "${lbm[@]}" --out "$work/lbm" \
    --restart "$work/lbm/checkpoint_stop.tsc" 2>/dev/null
  check "lbm restart" $? "exit code of the restart"
  same "lbm restart" "$work/ref" "$work/lbm"
  # the first check after the restart compares with the velocities of the check before the stop
  timeout 600 "$tessera" run "$case" "${lbm[@]}" --set time.steps=$next --out "$work/ref_next" \
    2>/dev/null || check ref 1 "the reference run to step $next failed"
  timeout 600 "$tessera" run "$case" "${lbm[@]}" --set time.steps=$next --out "$work/next" \
    --restart "$work/stop.tsc" 2>/dev/null
  check "lbm restart to step $next" $? "exit code of the restart"
  same "lbm restart to step $next" "$work/ref_next" "$work/next"
  printf 'TESSERA-CKPT%0500d' 0 >"$work/swe.tsc"
  refused "swe checkpoint" "$work/swe.tsc"
  head -c 100000 "$work/stop.tsc" >"$work/short.tsc"
  refused "truncated checkpoint" "$work/short.tsc"
  refused "another size" "$work/stop.tsc" --set lbm.nx=64
  ;;
lbm-mpi)
  timeout 600 "$tessera" run "$case" "${lbm[@]}" --out "$work/ref" 2>/dev/null || check ref 1 "the reference run failed"
  # shellcheck disable=SC2016
  mpirun --oversubscribe -np 2 sh -c 'echo $$ >"$0/pid.$OMPI_COMM_WORLD_RANK"; exec "$@"' "$work" "$tessera" run "$case" "${lbm[@]}" --out "$work/lbm" >"$work/lbm.log" 2>&1 &
  pid=$!
  wait_for "$work/lbm/.tessera.lock" $pid && sleep 0.5 && kill -TERM "$(cat "$work/pid.1")"
  wait $pid
  lbm_stopped "lbm, rank 1 alone signalled" $? "$work/lbm"
  cp -r "$work/lbm" "$work/one"
  timeout 600 mpirun --oversubscribe -np 2 "$tessera" run "$case" "${lbm[@]}" --out "$work/lbm" \
    --restart "$work/lbm/checkpoint_stop.tsc" 2>/dev/null
  check "lbm restart on 2 ranks" $? "exit code of the restart"
  same "lbm restart on 2 ranks" "$work/ref" "$work/lbm"
  timeout 600 "$tessera" run "$case" "${lbm[@]}" --out "$work/one" \
    --restart "$work/one/checkpoint_stop.tsc" 2>/dev/null
  check "lbm restart on 1 rank" $? "exit code of the restart"
  same "lbm restart on 1 rank" "$work/ref" "$work/one"
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
echo "RESULT: $([ $failures -eq 0 ] && echo PASS || echo "FAIL ($failures)")"
[ $failures -eq 0 ]
