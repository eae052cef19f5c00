#!/usr/bin/env bash
# Malpasset on 5 m cells, for the quadtree's time-to-accuracy benchmark (docs/PERFORMANCE.md):
# the 10 m grids of data/ resampled to 5 m cells over the same extent (3460 x 1848), the bed
# bilinearly (it is a linear interpolation of the TELEMAC mesh already, so between mesh edges
# the 5 m bed is the mesh's), the initial surface by nearest cell (the reservoir's edge stays the
# 10 m staircase). With a flood map of an earlier run (max_h.asc of any resolution over the same
# extent, e.g. a 10 m run), also a refinement raster for [grid] refine: 5 m where that flood
# reached (max_h > 0) and within 100 m of it, 40 m elsewhere.
# Needs gdalwarp (Debian: gdal-bin) and python3.
# usage: bash examples/malpasset/make_5m.sh [OUT_DIR [MAX_H_ASC]]   (OUT_DIR default data/5m)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/data/5m}
flood=${2:-}
mkdir -p "$out"
warp() { # warp SRC.asc.gz DST.asc METHOD
  gdalwarp -q -overwrite -r "$3" -tr 5 5 -te 500 -2380 17800 6860 -srcnodata -9999 \
    -dstnodata -9999 -of AAIGrid -co DECIMAL_PRECISION=3 "/vsigzip/$1" "$2"
  rm -f "$2.aux.xml" "${2%.asc}.prj"
  gzip -f "$2"
}
warp "$here/data/malpasset_dem_10m_nodata.asc.gz" "$out/malpasset_dem_5m_nodata.asc" bilinear
warp "$here/data/malpasset_eta0_10m.asc.gz" "$out/malpasset_eta0_5m.asc" near
if [ -n "$flood" ]; then
  python3 - "$flood" "$out/malpasset_refine_5m.asc" <<'EOF'
import math, sys

src, dst = sys.argv[1], sys.argv[2]
with open(src) as f:
    head = {}
    for _ in range(6):
        key, value = f.readline().split()
        head[key.lower()] = float(value)
    values = [float(v) for v in f.read().split()]
nx, ny, size = int(head["ncols"]), int(head["nrows"]), head["cellsize"]
x0, y0 = head["xllcorner"], head["yllcorner"]
nodata = head.get("nodata_value", -9999)
reach = int(math.ceil(100 / size))
wet = [[False] * nx for _ in range(ny)]  # row 0 north
for j in range(ny):
    for i in range(nx):
        v = values[i + j * nx]
        wet[j][i] = v != nodata and math.isfinite(v) and v > 0
near = [[False] * nx for _ in range(ny)]
for j in range(ny):  # dilate by `reach` cells (a square)
    row = wet[j]
    run = [False] * nx
    for i in range(nx):
        if row[i]:
            for q in range(max(0, i - reach), min(nx, i + reach + 1)):
                run[q] = True
    for q in range(max(0, j - reach), min(ny, j + reach + 1)):
        nq = near[q]
        for i in range(nx):
            if run[i]:
                nq[i] = True
ox, oy = 3460, 1848  # the 5 m grid over 500 .. 17800, -2380 .. 6860
with open(dst, "w") as f:
    f.write(f"ncols {ox}\nnrows {oy}\nxllcorner 500\nyllcorner -2380\ncellsize 5\nNODATA_value -9999\n")
    for j in range(oy):  # north first
        y = 6860 - 5 * (j + 0.5)
        fj = min(ny - 1, max(0, int((y0 + ny * size - y) / size)))
        cells = []
        for i in range(ox):
            x = 500 + 5 * (i + 0.5)
            fi = min(nx - 1, max(0, int((x - x0) / size)))
            cells.append("5" if near[fj][fi] else "40")
        f.write(" ".join(cells) + "\n")
EOF
  gzip -f "$out/malpasset_refine_5m.asc"
fi
ls -la "$out"
