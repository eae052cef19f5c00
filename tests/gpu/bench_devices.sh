#!/usr/bin/env bash
# `tessera bench swe` names the GPUs a run took: without --devices a CUDA run takes every GPU of
# the node (one subdomain each), and the report (header, roofline line, --json "subdomains" and
# "gpus") must say so; with --devices 0 it is one GPU and one subdomain. Usage: bench_devices.sh
# TESSERA OUTDIR. Exits 77 (skip) without a GPU.
set -eu
tessera=$1 out=$2
gpus=$("$tessera" info --no-speeds | grep -cE '^ *GPU [0-9]+:' || true)
[ "$gpus" -ge 1 ] || exit 77
mkdir -p "$out"
expect() { # json, subdomains, gpus list (as "0,1")
  local json=$1 sub=$2 list=$3
  got_sub=$(tr -d ' \n' < "$json" | grep -o '"subdomains":[0-9]*' | cut -d: -f2)
  got_gpus=$(tr -d ' \n' < "$json" | grep -o '"gpus":\[[0-9,]*\]' | sed 's/.*\[//; s/\]//')
  if [ "$got_sub" != "$sub" ] || [ "$got_gpus" != "$list" ]; then
    echo "$json: subdomains $got_sub, gpus [$got_gpus]; expected $sub, [$list]"
    exit 1
  fi
}
all=$(seq -s, 0 $((gpus - 1)))
"$tessera" bench swe --backend cuda --size 256 --steps 2 --json "$out/all.json" | tee "$out/all.txt"
expect "$out/all.json" "$gpus" "$all"
if [ "$gpus" -ge 2 ]; then
  grep -q "backend cuda (GPUs $all)" "$out/all.txt"
  grep -q "^GPUs $all: .*(their sum)" "$out/all.txt"
else
  grep -q "^GPU 0: " "$out/all.txt"
fi
"$tessera" bench swe --backend cuda --devices 0 --size 256 --steps 2 --json "$out/one.json" |
  tee "$out/one.txt"
expect "$out/one.json" 1 0
grep -q "backend cuda (GPU 0)" "$out/one.txt"
echo "bench swe reports the GPUs it took: [$all] by default, [0] with --devices 0"
