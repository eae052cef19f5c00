#!/usr/bin/env bash
# The [grid] keys of a shallow-water case: the quadtree case grid_keys/buq.ini runs and its
# summary.json `grid` tells a quadtree that holds fewer cells than the uniform grid of its finest
# cells; the same case cut into 5 partitions writes the same bytes (asc maps and snapshots, the
# native blocks in VTK; summary.json but for timings, threads, memory, the partitions, which it
# tells, and the balance section); the same case on the uniform grid tells the bed's grid; and
# every malformed or misplaced key stops the run with exit code 2 and one line naming the file
# and line, writing nothing.
# Needs python3 (to read summary.json). CTest: buq.grid_keys.
# usage: grid_keys.sh TESSERA WORKDIR
set -u
tessera=$1 work=$2
src=$(cd "$(dirname "$0")/grid_keys" && pwd)
rm -rf "$work" && mkdir -p "$work" && cp "$src"/* "$work/" || exit 1
cd "$work" || exit 1
failures=0
check() { # check NAME STATUS MESSAGE
  if [ "$2" -eq 0 ]; then echo "ok   $1: $3"; else echo "FAIL $1: $3"; failures=$((failures + 1)); fi
}
# grid_summary DIR EXPRESSION: prints summary.json's grid (g); 0 when the Python expression on g
# is true.
grid_summary() {
  python3 -c "import json, sys; g = json.load(open('$1/summary.json'))['grid']; print(g)
sys.exit(0 if ($2) else 1)" 2>&1
}

"$tessera" run buq.ini --quiet --out buq >buq.log 2>&1
check "buq run" $? "$(tail -1 buq.log)"
grid=$(grid_summary buq "g['type'] == 'buq' and g['block'] == 8 and g['levels'] == 3 \
  and len(g['blocks_per_level']) == 3 and len(g['cells_per_level']) == 3 \
  and sum(g['cells_per_level']) == g['cells'] \
  and all(c == 64 * b for b, c in zip(g['blocks_per_level'], g['cells_per_level'])) \
  and g['cells_per_level'][0] > 0 and g['cells_uniform_finest'] == 64 * 48 \
  and g['cells'] < g['cells_uniform_finest']")
check "buq summary" $? "type buq, 3 levels of 8 x 8 blocks, fewer cells than 64 x 48: $grid"

"$tessera" run buq.ini --quiet --out whole --set output.formats=asc,vtk >whole.log 2>&1 &&
  "$tessera" run buq.ini --quiet --out cut --set output.formats=asc,vtk \
    --set parallel.subdomains=5 >cut.log 2>&1
differ=$?
strip() { sed -e '/"wall_s"/d' -e '/"output_s"/d' -e '/"output_background_s"/d' -e '/"read_s"/d' -e '/"setup_s"/d' -e '/"finish_s"/d' -e '/"mcells_per_s"/d' -e '/"threads"/d' -e '/"memory_bytes"/d' \
  -e '/"subdomains"/d' -e '/"decomposition"/d' -e '/"decomposition_parts": \[/,/\]/d' \
  -e '/"balance": {/,/^  },/d' "$1"; }
for f in whole/*; do
  name=$(basename "$f")
  if [ "$name" = summary.json ]; then
    cmp -s <(strip "$f") <(strip "cut/$name") || differ="$differ $name"
  else
    cmp -s "$f" "cut/$name" || differ="$differ $name"
  fi
done
check "partitions" $([ "$differ" = 0 ] && echo 0 || echo 1) \
  "5 partitions write the bytes of one ($(ls whole | wc -l) files; differ: $differ)"
told=$(python3 -c "import json; s = json.load(open('cut/summary.json'))
print(s['subdomains'], s['decomposition'], s['decomposition_parts'])" 2>&1)
check "partitions told" $([ "$told" = "5 morton [5, 1]" ] && echo 0 || echo 1) \
  "summary.json of 5 partitions: subdomains, decomposition, parts: $told"

"$tessera" run buq.ini --quiet --out uniform --set grid.type=uniform --set grid.block=8 >u.log 2>&1
check "uniform with block" $([ $? -eq 2 ] && grep -q '^tessera: --set grid.block=8: needs type = buq$' u.log &&
  echo 0 || echo 1) "$(cat u.log)"
"$tessera" run buq.ini --quiet --out weights --set parallel.subdomains=2 \
  --set parallel.weights=1,2 >w.log 2>&1
check "buq with weights" $([ $? -eq 2 ] && [ ! -e weights ] &&
  grep -q '^tessera: --set parallel.weights=1,2: needs \[grid\] type = uniform$' w.log &&
  echo 0 || echo 1) "$(cat w.log)"
sed '/^block\|^levels\|^refine/d; s/^type = buq/type = uniform/' buq.ini >uniform.ini
"$tessera" run uniform.ini --quiet --out uniform >uniform.log 2>&1
check "uniform run" $? "$(tail -1 uniform.log)"
grid=$(grid_summary uniform "g['type'] == 'uniform' and g['block'] == 0 and g['levels'] == 1 \
  and g['blocks_per_level'] == [] and g['cells_per_level'] == [64 * 48] \
  and g['cells'] == 64 * 48 and g['cells_uniform_finest'] == 64 * 48 and g['ncols'] == 64")
check "uniform summary" $? "type uniform, one level of 64 x 48 cells: $grid"

# expect NAME KEY=VALUE PATTERN: [grid] KEY = VALUE replaces its line in buq.ini (lines 16 to 21
# hold type, block, levels, refine, refine_slope, refine_water; another key goes on line 22) and
# the run must fail with exit code 2, one line matching PATTERN, and no output directory.
expect() {
  local name=$1 key=${2%%=*} value=${2#*=} pattern=$3
  if sed -n "/^\[grid\]/,\$p" buq.ini | grep -q "^$key = "; then
    sed "/^\[grid\]/,\$ s|^$key = .*|$key = $value|" buq.ini >bad.ini
  else
    sed "/^refine_water = /a $key = $value" buq.ini >bad.ini
  fi
  rm -rf bad
  "$tessera" run bad.ini --quiet --out bad >bad.log 2>&1
  local rc=$?
  check "$name" $([ $rc -eq 2 ] && [ "$(wc -l <bad.log)" -eq 1 ] && grep -q "$pattern" bad.log &&
    [ ! -e bad ] && echo 0 || echo 1) "exit code $rc: $(cat bad.log)"
}
expect "unknown type" "type=quad" "^tessera: bad.ini:16: \[grid\] type: 'quad' is not one of: uniform, buq$"
expect "block 12" "block=12" "^tessera: bad.ini:17: \[grid\] block: must be 16 or 8"
expect "block not a number" "block=big" "^tessera: bad.ini:17: \[grid\] block: 'big' is not a number$"
expect "levels 9" "levels=9" "^tessera: bad.ini:18: \[grid\] levels: must be in \[1, 8\]$"
expect "levels 0" "levels=0" "^tessera: bad.ini:18: \[grid\] levels: must be in \[1, 8\]$"
expect "negative slope" "refine_slope=-0.1" "^tessera: bad.ini:20: \[grid\] refine_slope: must be >= 0"
expect "negative margin" "refine_water=-1" "^tessera: bad.ini:21: \[grid\] refine_water: must be"
expect "fractional margin" "refine_water=1.5" "^tessera: bad.ini:21: \[grid\] refine_water: '1.5' is not a whole number$"
expect "missing refine grid" "refine=nope.asc" "^tessera: .*nope.asc: cannot open"
expect "misspelt key" "levl=2" "^tessera: bad.ini:22: unknown key 'levl' in \[grid\] (did you mean 'levels'?)$"
expect "uniform with quadtree keys" "type=uniform" "^tessera: bad.ini:17: \[grid\] block: needs type = buq$"
sed '7s/^[^ ]*/-8/' refine.asc >refine_negative.asc
expect "negative refine value" "refine=refine_negative.asc" \
  "^tessera: .*refine_negative.asc:7: negative cell size -8 at row 1, column 1$"
head -6 refine.asc | sed 's/^ncols 64/ncols 32/' >refine_small.asc
tail -n +7 refine.asc | cut -d' ' -f1-32 >>refine_small.asc
expect "refine of another shape" "refine=refine_small.asc" \
  "^tessera: .*refine_small.asc: grid 32 x 48 at (0, 0), cell 2, differs from the bed"
echo "RESULT: $([ $failures -eq 0 ] && echo PASS || echo "FAIL ($failures)")"
[ $failures -eq 0 ]
