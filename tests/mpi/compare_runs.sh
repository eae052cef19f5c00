#!/usr/bin/env bash
# Decomposition invariance across MPI ranks: runs one case under mpirun with several rank counts
# and splits and requires every output file to equal the first (reference) run's byte for byte;
# summary.json is compared without its timings and parallel layout (memory too: a quadtree's
# partitions hold copies of their neighbours' blocks).
# usage: compare_runs.sh TESSERA CASE WORKDIR COMMON_ARGS "NP ARGS..." ["NP ARGS..." ...]
# With COMPARE_COPIES=N every configuration after the reference runs N times at once, each copy
# compared (copy c > 1 writes to runK.c, the first to runK).
# ARGS may contain @REF@ (the reference output directory), e.g. --restart @REF@/checkpoint.tsc;
# a run that restarts is compared on the files it writes but summary.json and swe.nc (which holds
# only the output times from the checkpoint on); a run with early exit
# off (or auto, which may choose off) reports every tile active in summary.json.
set -u
tessera=$1 case=$2 work=$3 common=$4
shift 4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
rm -rf "$work" && mkdir -p "$work" || exit 1
strip_summary() {
  sed -e '/"ranks":/,$d' -e '/"backend"/d' -e '/"wall_s"/d' -e '/"output_s"/d' -e '/"output_background_s"/d' -e '/"read_s"/d' -e '/"setup_s"/d' -e '/"finish_s"/d' -e '/"mcells_per_s"/d' -e '/"threads"/d' \
    -e '/"memory_bytes"/d' \
    -e "${2:-/^\$^/d}" "$1"
}
failures=0 n=0 ref=""
copies=${COMPARE_COPIES:-1}
launch() { # launch OUT NP ARGS: one run, its output in OUT, its log in OUT.log
  # shellcheck disable=SC2086
  timeout 600 mpirun --oversubscribe -np "$2" "$tessera" run "$case" --out "$1" --quiet \
    $common $3 >"$1.log" 2>&1
}
compare() { # compare OUT NP ARGS: every file of the reference against OUT's
  local out=$1 np=$2 args=$3 differ="" tiles=""
  case "$args" in *early_exit=off* | *early_exit=auto*) tiles='/"active_tiles"/d' ;; esac
  for f in "$ref"/*; do
    name=$(basename "$f")
    case "$args" in *--restart*) [ -e "$out/$name" ] && [ "$name" != summary.json ] && [ "$name" != swe.nc ] || continue ;; esac
    if [ "$name" = summary.json ]; then
      if ! cmp -s <(strip_summary "$f" "$tiles") <(strip_summary "$out/$name" "$tiles"); then
        differ="$differ $name"
        diff <(strip_summary "$f" "$tiles") <(strip_summary "$out/$name" "$tiles") | head -8
      fi
    else
      cmp -s "$f" "$out/$name" || differ="$differ $name"
    fi
  done
  if [ -z "$differ" ]; then
    echo "ok   np $np $args${4:+ ($4)}: every output equals the reference"
  else
    echo "FAIL np $np $args${4:+ ($4)}: differs from the reference:$differ"
    failures=$((failures + 1))
  fi
}
for config in "$@"; do
  np=${config%% *} args=${config#* }
  [ "$args" = "$config" ] && args=""
  out="$work/run$n"
  args=${args//@REF@/$ref}
  if [ -z "$ref" ]; then
    if ! launch "$out" "$np" "$args"; then
      echo "FAIL np $np $args: the reference run failed:"
      cat "$out.log"
      failures=$((failures + 1))
    else
      ref=$out
      echo "ok   reference: np $np $args ($(ls "$ref" | wc -l) files)"
    fi
  else
    # COMPARE_COPIES runs of the configuration at once (a race between streams shows under load)
    pids=()
    copy_out() { if [ "$1" -gt 1 ]; then echo "$out.$1"; else echo "$out"; fi; }
    for c in $(seq 1 "$copies"); do
      launch "$(copy_out "$c")" "$np" "$args" &
      pids+=($!)
    done
    for c in $(seq 1 "$copies"); do
      label=""
      [ "$copies" -gt 1 ] && label="copy $c of $copies at once"
      if ! wait "${pids[$((c - 1))]}"; then
        echo "FAIL np $np $args${label:+ ($label)}: the run failed:"
        cat "$(copy_out "$c").log"
        failures=$((failures + 1))
      else
        compare "$(copy_out "$c")" "$np" "$args" "$label"
      fi
    done
  fi
  n=$((n + 1))
done
echo "RESULT: $([ $failures -eq 0 ] && echo PASS || echo "FAIL ($failures)")"
[ $failures -eq 0 ]
