#!/bin/sh
# Writes bed.asc.gz and depth.asc.gz, the circular dam break over three bumps of the multi-GPU
# shallow-water study (its case B, used there for load balancing), on an N x N grid (default 512;
# the study's balancing runs used 4000^2, `tessera bench balance` here 4096^2):
#   a 2000 m x 2000 m square basin with walls; a cylinder of water 40 m deep and 133 m in radius
#   centred at (1000 m, 250 m) on a dry bed; three bumps of radius 200 m centred at (500, 500),
#   (1500, 500) and (500, 1500) m.
# The study prints the bump as 5 (R_B^2 - r^2) m, which is not a length (about 2e5 m at the
# centre); here it is a paraboloid 5 m high at its centre, B = 5 (1 - r^2 / R_B^2) m, rounded to
# 1 mm. The water starts in the south of the basin and spreads north over the bumps: mostly dry
# at first, so the work moves across a split into bands (what the balancer has to follow).
# Reproducible: formulas only (no random numbers). Needs awk and gzip.
#
# Usage: sh make_case.sh [N] [DIR]   (DIR defaults to this script's folder)
set -eu
n=${1:-512}
here=$(cd "$(dirname "$0")" && pwd)
dir=${2:-$here}
mkdir -p "$dir"

grid() { # $1: bed or depth
  awk -v what="$1" -v n="$n" 'BEGIN {
    cs = 2000 / n
    printf "ncols %d\nnrows %d\nxllcorner 0\nyllcorner 0\ncellsize %.10g\nNODATA_value -9999\n",
           n, n, cs
    split("500 1500 500", bx, " "); split("500 500 1500", by, " ")
    for (r = 0; r < n; r++) {         # row 0 is the north row
      y = (n - r - 0.5) * cs
      line = ""
      for (c = 0; c < n; c++) {
        x = (c + 0.5) * cs
        if (what == "depth") {
          v = ((x - 1000) ^ 2 + (y - 250) ^ 2 <= 133 ^ 2) ? 40 : 0
          line = line (c ? " " : "") v
          continue
        }
        v = 0
        for (b = 1; b <= 3; b++) {
          d2 = (x - bx[b]) ^ 2 + (y - by[b]) ^ 2
          if (d2 < 40000) v = 5 * (1 - d2 / 40000)
        }
        line = line (c ? " " : "") (v > 0 ? sprintf("%.3f", v) : "0")
      }
      print line
    }
  }' | gzip -n -9 > "$dir/$1.asc.gz"
}

grid bed &
grid depth
wait
