#!/bin/sh
# Writes dem.tif and manning.tif, the synthetic catchment of this example, in Lambert-93
# (EPSG:2154, metres). Reproducible: the terrain is a formula (no random numbers) rounded to 1 cm;
# the .tif files in this folder were written by this script (mawk 1.3.4, GDAL 3.6.2), and the
# same tools write the same bytes again. Needs awk and gdal_translate (Debian: gdal-bin).
#
# The catchment: a valley 3 km long (west to east) and 2 km wide at 20 m cells (150 x 100),
# lower-left corner at (780000, 6330000). A river 40 m wide and 1.5 m deep meanders down the valley
# floor (slope 0.5 %, from about 165 m to 150 m) inside a floodplain 400 m wide; the valley sides
# rise to a ridge that bounds the catchment. Cells outside the ridge line are NODATA (walls). The
# catchment meets the west edge of the grid only across the river's gorge (where the inflow
# hydrograph enters) and the east edge only across the floodplain (the outlet); near both edges
# the river runs straight, so that it crosses them at right angles.
#
# Manning n: 0.030 in the river, 0.050 on the floodplain (meadows), 0.080 on the valley sides
# (woods); NODATA outside the catchment.
#
# Usage: sh make_dem.sh   (from any directory; writes next to this script)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grid() { # $1: dem or manning
  awk -v what="$1" 'BEGIN {
    nx = 150; ny = 100; cs = 20; x0 = 780000; y0 = 6330000; pi = 3.141592653589793
    printf "ncols %d\nnrows %d\nxllcorner %d\nyllcorner %d\ncellsize %d\nNODATA_value -9999\n",
           nx, ny, x0, y0, cs
    for (r = 0; r < ny; r++) {        # row 0 is the north row
      line = ""
      for (c = 0; c < nx; c++) {
        x = (c + 0.5) * cs              # metres from the west edge
        y = (ny - r - 0.5) * cs         # metres from the south edge
        # the river axis meanders, straight in the first and last 300 m (where it crosses the
        # edges of the grid at right angles, as a boundary should)
        taper = x < 300 ? x / 300 : (x > 2700 ? (3000 - x) / 300 : 1)
        yc = 1000 + 100 * sin(2 * pi * x / 1500) * taper
        d = y - yc; if (d < 0) d = -d                 # distance across the valley
        # catchment boundary: a wavy ridge line, narrowing to the river at the west edge and to
        # the floodplain at the east edge, parallel to the river in the first and last 200 m
        ridge = 820 + 90 * sin(x / 310) + 60 * cos(x / 170 + 1.3 * (y > yc))
        west = 70 + 2.2 * (x > 200 ? x - 200 : 0)
        east = 210 + 2.2 * (x < 2800 ? 2800 - x : 0)
        if (ridge > west) ridge = west
        if (ridge > east) ridge = east
        if (d > ridge) { v = -9999 }
        else if (what == "manning") { v = d <= 20 ? 0.030 : (d <= 200 ? 0.050 : 0.080) }
        else {
          z = 165 - 0.005 * x                          # valley floor
          if (d <= 20) z -= 1.5 * (1 - (d / 20) ^ 2)   # the river channel, parabolic
          else if (d <= 200) z += 0.004 * (d - 20)     # floodplain, gently rising
          else {                                       # valley sides, with gullies
            s = d - 200
            z += 0.72 + 0.09 * s + 0.00004 * s * s
            z -= 3 * (s / 600) * (1 + cos(2 * pi * x / 450 + (y > yc) * 1.7))
          }
          z += 0.3 * sin(x / 57) * cos(y / 43)         # small undulations
          v = z
        }
        line = line (c ? " " : "") (v == -9999 ? "-9999" : sprintf(what == "dem" ? "%.2f" : "%.3f", v))
      }
      print line
    }
  }'
}

for what in dem manning; do
  grid "$what" > "$tmp/$what.asc"
  gdal_translate -q -a_srs EPSG:2154 -ot Float32 -co COMPRESS=DEFLATE -co PREDICTOR=3 \
    -co TILED=YES "$tmp/$what.asc" "$tmp/$what.tif"
  mv "$tmp/$what.tif" "$here/$what.tif"
done
echo "wrote $here/dem.tif and $here/manning.tif"
