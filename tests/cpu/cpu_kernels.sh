#!/usr/bin/env bash
# The builds of the CPU loops (tessera/cpu.h: baseline, x86-64-v3 and x86-64-v4) give the same
# bits: the shallow-water 4-sides case (float and double, uniform grid), the quadtree case of
# tests/buq (3 levels, rain, losses) and the lattice Boltzmann 3D cavity (fp32 and fp16
# storage) run once with each build this CPU runs; every output file must be the same bytes as
# the baseline's (summary.json's timings and the lock's pid aside). Skipped (exit 77) where the
# CPU or the build has no x86-64-v3 loops; x86-64-v4 is compared where the CPU has AVX-512 (the
# test says which builds it compared).
# usage: cpu_kernels.sh TESSERA SOURCE_DIR WORKDIR
set -u
tessera=$1 root=$2 work=$3
export OMP_NUM_THREADS=2
rm -rf "$work" && mkdir -p "$work" || exit 1
if ! TESSERA_CPU_KERNELS=x86-64-v3 "$tessera" info --no-speeds >/dev/null 2>&1; then
  echo "no x86-64-v3 loops on this machine: skipped"
  exit 77
fi
isas="baseline x86-64-v3"
if TESSERA_CPU_KERNELS=x86-64-v4 "$tessera" info --no-speeds >/dev/null 2>&1; then
  isas="$isas x86-64-v4"
else
  echo "no x86-64-v4 loops on this machine (no AVX-512): baseline against x86-64-v3 only"
fi
failures=0
compare() { # compare NAME CASE [--set ...]
  local name=$1 case=$2
  shift 2
  for isa in $isas; do
    if ! TESSERA_CPU_KERNELS=$isa "$tessera" run "$case" --quiet --out "$work/$name.$isa" "$@" \
      >"$work/$name.$isa.log" 2>&1; then
      echo "FAIL $name: the $isa run failed"
      cat "$work/$name.$isa.log"
      failures=$((failures + 1))
      return
    fi
  done
  local n=0 differ=0
  for f in "$work/$name.baseline"/*; do
    b=$(basename "$f")
    case $b in summary.json) continue ;; esac
    n=$((n + 1))
    for isa in $isas; do
      if ! cmp -s "$f" "$work/$name.$isa/$b"; then
        echo "FAIL $name: $b of $isa differs from the baseline's"
        differ=$((differ + 1))
      fi
    done
  done
  if [ "$differ" -eq 0 ] && [ "$n" -gt 0 ]; then
    echo "ok   $name: $n files the same bytes in every build ($isas)"
  else
    [ "$n" -gt 0 ] || echo "FAIL $name: no output files"
    failures=$((failures + 1))
  fi
}
four=$root/tests/mpi/four_sides/four_sides.ini
compare swe_float "$four" --set output.formats=asc,netcdf
compare swe_double "$four" --set output.formats=asc --set swe.precision=double
compare swe_euler "$four" --set output.formats=asc --set time.integrator=euler
compare buq "$root/tests/buq/grid_keys/buq.ini" --set output.formats=asc
cav=$root/examples/cavity3d/cavity3d.ini
compare lbm_fp32 "$cav" --set time.steps=200 --set lbm.nx=32 --set output.formats=vtk
compare lbm_fp16 "$cav" --set time.steps=200 --set lbm.nx=32 --set output.formats=vtk \
  --set lbm.storage=fp16
[ "$failures" -eq 0 ] && echo "all the same" || echo "$failures failed"
[ "$failures" -eq 0 ]
