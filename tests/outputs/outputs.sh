#!/usr/bin/env bash
# Outputs a user can trust (issue 22): a second run into a directory in use is refused before it
# writes anything, and the first run's files equal a solo run's; a run killed mid-way leaves only
# complete files under final names, and the directory free; a write that fails
# (TESSERA_TEST_FAIL_WRITE) ends the run with one line and a non-zero exit, leaving no partial
# file and no temporary; a new run removes the files the earlier summary.json lists (nothing
# outside the directory, no link) and keeps the user's own files; a run restarted into the
# directory removes nothing (it continues the earlier run). With
# MPIRUN, the refusal and the failed write also on 2 ranks.
# usage: outputs.sh TESSERA CASE_DIR WORKDIR [MPIRUN]
set -u
tessera=$1 src=$2 work=$3 mpirun=${4:-}
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$work" && mkdir -p "$work" && cp "$src"/* "$work/" && cd "$work" || exit 1
failures=0
check() { # check NAME CONDITION_STATUS MESSAGE
  if [ "$2" -eq 0 ]; then echo "ok   $1: $3"; else echo "FAIL $1: $3"; failures=$((failures + 1)); fi
}
yes_no() { if "$@"; then echo 0; else echo 1; fi; }
run() { "$tessera" run four_sides.ini --quiet "$@"; }
start() { "$tessera" run four_sides.ini --quiet "$@" & } # in the background: $! is tessera's id
ALL="--set output.formats=asc,netcdf,vtk,png"

# Prints the files under final names in DIR that are not complete (by their format's end).
incomplete() {
  for f in "$1"/*; do
    [ -f "$f" ] || continue
    case $f in
    *.asc) rows=$(awk '$1 == "nrows" {print $2}' "$f")
      [ -n "$rows" ] && [ "$(wc -l <"$f")" -eq $((rows + 6)) ] && [ -z "$(tail -c 1 "$f")" ] ;;
    *.png) tail -c 12 "$f" | grep -q IEND ;;
    *.vti | *.vtu) tail -c 16 "$f" | grep -q '</VTKFile>' ;;
    *.nc) if command -v ncdump >/dev/null; then ncdump -h "$f" >/dev/null 2>&1; else [ -s "$f" ]; fi ;;
    *.json) tail -c 2 "$f" | grep -q '}' ;;
    *.tsc) "$tessera" run four_sides.ini --quiet --restart "$f" --out "$1.restart" \
        --set time.max_steps=1 >/dev/null 2>&1 ;;
    *) true ;;
    esac || echo "$f"
  done
}
# Hidden files in DIR other than the lock: temporaries.
temporaries() { ls -A "$1" | grep '^\.' | grep -v '^\.tessera\.lock$'; }
# Every file of A (but summary.json) equal to B's, and the same names.
same_files() {
  [ "$(ls "$1")" = "$(ls "$2")" ] || return 1
  for f in "$1"/*; do
    [ "${f##*/}" = summary.json ] || cmp -s "$f" "$2/${f##*/}" || return 1
  done
}

# 1. Two runs into one directory: the second stops at once naming the directory and the
#    first's process id, with exit code 2; the first's files equal a solo run's.
LONG="--set time.end=200"
run $LONG --out solo || exit 1
start $LONG --out shared
first=$!
for _ in $(seq 200); do [ -s shared/.tessera.lock ] && break; sleep 0.05; done
run --out shared >second.log 2>&1
rc=$?
wait $first
rc_first=$?
check "two runs" $([ $rc -eq 2 ] && [ "$(wc -l <second.log)" -eq 1 ] && grep -q "shared.*in use.*process $first)" second.log && echo 0 || echo 1) \
  "the second refused with exit code $rc: $(cat second.log)"
check "two runs" $([ $rc_first -eq 0 ] && yes_no same_files shared solo) \
  "the first ended with exit code $rc_first, its files equal a solo run's"
check "two runs" "$(yes_no grep -qx "$first" shared/.tessera.lock)" "the lock file holds the first run's process id"

# 2. Runs killed (SIGKILL) mid-way while writing a snapshot every simulated second: every file
#    under a final name complete, and the next run into the directory is not locked out.
for at in 0.7 1.3 1.9; do
  d=killed_$at
  start --set time.end=120 --set output.interval=1 --set output.checkpoint_interval=5 $ALL --out $d
  pid=$!
  sleep $at
  kill -9 $pid
  wait $pid 2>/dev/null
  bad=$(incomplete $d)
  check "killed run" $([ -z "$bad" ] && [ "$(ls $d | wc -l)" -gt 3 ] && echo 0 || echo 1) \
    "killed after $at s: $(ls $d | wc -l) files, all complete${bad:+; incomplete: $bad}"
done
run --out killed_1.9 >after_kill.log 2>&1
check "killed run" $? "a new run into the killed run's directory: $(cat after_kill.log)"

# 3. A write that fails as if the disk were full (the 9th, a file of the output time at 30 s): one
#    line naming the file, exit code 1, no temporary, every file written complete, summary.json
#    with status failed, and none of that output time's files (its writers run side by side; an
#    output time is written whole or not at all): the 9 files before it remain.
TESSERA_TEST_FAIL_WRITE=9 run $ALL --out full >full.log 2>&1
rc=$?
file=$(sed -n 's/^tessera: \([^ ]*\): cannot write: No space left on device$/\1/p' full.log)
check "failed write" $([ $rc -eq 1 ] && [ "$(wc -l <full.log)" -eq 1 ] && [ -n "$file" ] && echo 0 || echo 1) \
  "exit code $rc: $(cat full.log)"
check "failed write" $([ -n "$file" ] && [ ! -e "$file" ] && grep -q '"status": "failed"' full/summary.json && [ -z "$(temporaries full)" ] &&
  [ -z "$(incomplete full)" ] && [ "$(ls full | wc -l)" -eq 9 ] && [ -z "$(ls full | grep t000030)" ] && echo 0 || echo 1) \
  "no ${file:-file}, no temporary, summary.json with status failed; the 9 files written before the output time at 30 s complete, none of its own (swe.nc with its times so far): $(ls -A full | tr '\n' ' ')"

# 3b. A write of an earlier output time failing (the first file at 10 s): that time is written on a
#     thread of its own while the steps go on, and its failure ends the run at the next output
#     time, before any of that time's files: exit code 1, none of the files of 10 s or 20 s.
TESSERA_TEST_FAIL_WRITE=1 run $ALL --set output.times=10,20,30 --set output.checkpoint_interval=0 \
  --out early >early.log 2>&1
rc=$?
check "failed write" $([ $rc -eq 1 ] && grep -q '^tessera: .*_t000010\.[a-z]*: cannot write' early.log &&
  [ -z "$(ls early | grep -E 't0000[12]0')" ] && grep -q '"status": "failed"' early/summary.json &&
  [ -z "$(temporaries early)" ] && [ -z "$(incomplete early)" ] && echo 0 || echo 1) \
  "an earlier output time failing: exit code $rc, $(cat early.log); left: $(ls -A early | tr '\n' ' ')"

# 3c. A checkpoint's write failing (it is written beside the steps too): the run ends at the next
#     output time, before any of its files: exit code 1, no checkpoint, no file of 30 s.
TESSERA_TEST_FAIL_WRITE=1 run --set output.times=30 --set output.formats=asc --out ckpt_full >ckpt_full.log 2>&1
rc=$?
check "failed write" $([ $rc -eq 1 ] && grep -q '^tessera: .*checkpoint_t000015\.tsc: cannot write' ckpt_full.log &&
  [ -z "$(ls ckpt_full | grep -E 'tsc|t000030')" ] && grep -q '"status": "failed"' ckpt_full/summary.json &&
  [ -z "$(temporaries ckpt_full)" ] && echo 0 || echo 1) \
  "a checkpoint failing: exit code $rc, $(cat ckpt_full.log); left: $(ls -A ckpt_full | tr '\n' ' ')"

# 4. An earlier run's files: those its summary.json lists go, the user's stay.
run $ALL --out again || exit 1
touch again/notes.txt
run --set output.times=30 --set output.formats=asc --set output.checkpoint_interval=0 --out again
check "earlier run" $([ ! -e again/h_t000010.asc ] && [ ! -e again/swe_t000010.nc ] && [ ! -e again/depth_t000010.png ] &&
  [ ! -e again/swe_t000030.vti ] && [ ! -e again/checkpoint_t000015.tsc ] && [ ! -e again/gauges.png ] && echo 0 || echo 1) \
  "the earlier snapshots, checkpoint and plot are removed: $(ls again | tr '\n' ' ')"
check "earlier run" $([ -e again/notes.txt ] && [ -e again/h_t000030.asc ] && grep -q '"h": "h_t000030.asc"' again/summary.json && echo 0 || echo 1) \
  "notes.txt is kept, the new files and summary are there"
# A summary listing names outside the directory, a link, a checkpoint, and a .asc whose .prj goes
# with it; a restart into the directory first, which removes nothing.
mkdir -p hand && echo outside >outside.txt && echo keep >hand/notes.txt && echo old >hand/old.asc &&
  echo old >hand/old.prj && ln -sf ../outside.txt hand/link.asc && cp solo/checkpoint_t000015.tsc hand/ck.tsc &&
  echo old >hand/gone.csv
cat >hand/summary.json <<'JSON'
{"model": "swe", "case": "notes.txt", "restart_from": "notes.txt",
 "snapshots": [{"time": 10, "files": {"h": "old.asc", "up": "../outside.txt", "abs": "/etc/hostname",
   "link": "link.asc", "lines": ["gone.csv", "."]}}],
 "checkpoints": ["ck.tsc"], "maxima": null, "gauges": "\u002e./outside.txt"}
JSON
cp hand/summary.json hand.summary.json
run --restart hand/ck.tsc --out hand >hand.log 2>&1
check "earlier run" $([ $? -eq 0 ] && [ -e hand/old.asc ] && [ -e hand/old.prj ] && [ -e hand/gone.csv ] && [ -e hand/ck.tsc ] && echo 0 || echo 1) \
  "restarted into its directory: the listed files kept $(cat hand.log)"
cp hand.summary.json hand/summary.json
run --out hand >hand.log 2>&1
check "earlier run" $([ $? -eq 0 ] && [ ! -e hand/old.asc ] && [ ! -e hand/old.prj ] && [ ! -e hand/gone.csv ] && [ ! -e hand/ck.tsc ] && echo 0 || echo 1) \
  "a new run into it: the listed old.asc, its .prj, gone.csv and ck.tsc removed $(cat hand.log)"
check "earlier run" $([ -L hand/link.asc ] && [ -e outside.txt ] && [ -e hand/notes.txt ] && echo 0 || echo 1) \
  "the link, the file outside and the case/restart_from names kept"
echo '{"snapshots": [' >hand/summary.json
run --out hand >bad.log 2>&1
rc=$?
check "earlier run" $([ $rc -eq 2 ] && [ "$(wc -l <bad.log)" -eq 1 ] && grep -q 'hand/summary.json' bad.log && echo 0 || echo 1) \
  "an unreadable summary.json stops the run with exit code $rc: $(cat bad.log)"

# A run restarted into its directory continues its swe.nc: the time before the checkpoint stays,
# the later one is written again, and the file holds the uninterrupted run's values.
if command -v ncdump >/dev/null; then
  run --set output.formats=asc,netcdf --out whole || exit 1
  run --set output.formats=asc,netcdf --out cont || exit 1
  run --set output.formats=asc,netcdf --restart cont/checkpoint_t000015.tsc --out cont >cont.log 2>&1
  check "restart" $([ $? -eq 0 ] && ncdump whole/swe.nc >whole.cdl && ncdump cont/swe.nc >cont.cdl &&
    cmp -s whole.cdl cont.cdl && grep -q 'time = 10, 30 ;' cont.cdl && echo 0 || echo 1) \
    "restarted into its directory at 15 s: swe.nc holds t = 10 and 30 s as the uninterrupted run's $(cat cont.log)"
  # [time] start gives the CF time axes a calendar origin; a date that does not exist is refused
  run --set output.formats=netcdf --set time.start=2026-01-15T06:00:00 --out dated || exit 1
  check "calendar" $(ncdump -h dated/swe.nc | grep -q 'time:units = "seconds since 2026-01-15 06:00:00"' &&
    ncdump -h dated/gauges.nc | grep -q 'time:units = "seconds since 2026-01-15 06:00:00"' && echo 0 || echo 1) \
    "swe.nc and gauges.nc: time in seconds since 2026-01-15 06:00:00"
  run --set output.formats=netcdf --set time.start=2026-02-30 --out undated >undated.log 2>&1
  rc=$?
  check "calendar" $([ $rc -eq 2 ] && [ "$(wc -l <undated.log)" -eq 1 ] && [ ! -e undated ] && echo 0 || echo 1) \
    "time.start=2026-02-30 refused with exit code $rc: $(cat undated.log)"
fi

# 5. On 2 ranks: rank 0 holds the lock and every rank stops.
if [ -n "$mpirun" ]; then
  start $LONG --out shared
first=$!
  for _ in $(seq 200); do [ "$(cat shared/.tessera.lock 2>/dev/null)" = "$first" ] && break; sleep 0.05; done
  timeout 60 "$mpirun" --oversubscribe -np 2 "$tessera" run four_sides.ini --quiet --out shared >mpi_second.log 2>&1
  rc=$?
  wait $first
  # rank 0 exits with 2, rank 1 (told by rank 0) with 1: mpirun passes on either
  check "2 ranks" $([ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c '^tessera:' mpi_second.log)" -eq 1 ] &&
    grep -q "shared.*in use.*process $first)" mpi_second.log && echo 0 || echo 1) \
    "refused with exit code $rc: $(grep '^tessera:' mpi_second.log)"
  TESSERA_TEST_FAIL_WRITE=3 timeout 60 "$mpirun" -x TESSERA_TEST_FAIL_WRITE --oversubscribe -np 2 "$tessera" run \
    four_sides.ini --quiet $ALL --out mpi_full >mpi_full.log 2>&1
  rc=$?
  check "2 ranks" $([ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c '^tessera:' mpi_full.log)" -eq 1 ] &&
    grep -q 'No space left' mpi_full.log && [ -z "$(temporaries mpi_full)" ] && [ -z "$(incomplete mpi_full)" ] && echo 0 || echo 1) \
    "a failed write, exit code $rc: $(grep '^tessera:' mpi_full.log)"
fi
echo "RESULT: $([ $failures -eq 0 ] && echo PASS || echo "FAIL ($failures)")"
[ $failures -eq 0 ]
