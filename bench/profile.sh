#!/usr/bin/env bash
# Per-opcode profile of the shallow-water kernels on a GPU machine (Nsight Compute source view):
# executed warp instructions per cell and stall share of each SASS opcode, for the kernels named
# in $1 (NAME or NAME:SKIP, the launch after SKIP launches of that name; default: the row
# engine's two, k_rows:0 and k_rows:1) in a 2048^2 float benchmark. Same setup as device.sh.
set -u
root=$(pwd)
out=${OUT:-$root/device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
T=$root/build-gpu/apps/tessera/tessera
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for entry in ${1:-k_rows:0 k_rows:1}; do
  k=${entry%%:*} skip=0
  [ "$k" != "$entry" ] && skip=${entry#*:}
  "$ncu" --kernel-name "regex:$k" --launch-skip "$skip" --launch-count 1 --section SourceCounters \
    --page source --print-source sass --csv "$T" bench swe --backend cuda --size 2048 --steps 1 \
    >"$out/source_${k}_$skip.csv" 2>/dev/null
  python3 - "$out/source_${k}_$skip.csv" "$entry" <<'PY'
import csv, collections, sys
lines = open(sys.argv[1]).read().splitlines()
start = [i for i, l in enumerate(lines) if l.startswith('"Address"')][0]
rows = list(csv.reader(lines[start:]))
hdr, data = rows[0], rows[1:]
ia, isrc = hdr.index("Instructions Executed"), hdr.index("Source")
ist = hdr.index("Warp Stall Sampling (All Samples)")
count, stall = collections.Counter(), collections.Counter()
for r in data:
    toks = r[isrc].split()
    if not toks:
        continue
    op = (toks[1] if toks[0].startswith('@') else toks[0]).split('.')[0]
    count[op] += float(r[ia].replace(',', '') or 0)
    stall[op] += float(r[ist].replace(',', '') or 0)
total, stalls, cells = sum(count.values()), sum(stall.values()) or 1, 2048 * 2048
print(f"{sys.argv[2]}: {total / cells:.1f} warp instructions per cell")
for op, n in count.most_common(16):
    print(f"  {op:8s} {n / total * 100:5.1f} %  {n / cells:6.2f}/cell  stalls {stall[op] / stalls * 100:5.1f} %")
PY
done
