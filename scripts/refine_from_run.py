#!/usr/bin/env python3
"""A quadtree refinement raster ([grid] refine: the wanted cell size in m per area) from a pilot run.

usage: refine_from_run.py PILOT_DIR BED_ASC OUT_ASC --cell 5 [--reach 100] [--slope 0.05]
                          [--flat 10] [--dry 40] [--speed 14]

PILOT_DIR holds max_h.asc and max_speed.asc of an earlier, coarser run over the same extent (e.g. the
uniform 10 m grid); BED_ASC (.asc or .asc.gz) is that run's bed, on the same grid as its maps. The
raster written has cells of --cell m over the pilot's extent:
  - where the pilot's flood never came within --reach m: --dry m;
  - where it did: --cell m if the bed is steeper than --slope there (largest drop to a side
    neighbour over the bed's cell size), else --flat m;
  - then, with --speed S, no finer than the wave speed allows at a time step of --cell / S: a cell
    whose pilot wave speed (largest speed + sqrt(g * largest depth), an upper bound of |u| + c over
    the run) exceeds S gets at least --cell * 2^k m with --cell * 2^k / speed >= --cell / S. With one
    time step for every level, the finest cells then do not set it where the flow is fastest.
The solver rounds each wanted size down to a level and balances the levels 2:1 (never coarser).
Python's standard library only (for the benchmark scripts on the GPU machines)."""
import argparse
import gzip
import math
import os


def read_asc(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        head = {}
        for _ in range(6):
            key, value = f.readline().split()
            head[key.lower()] = float(value)
        values = [float(v) for v in f.read().split()]
    nx, ny = int(head["ncols"]), int(head["nrows"])
    if len(values) != nx * ny:
        raise SystemExit("%s: %d values for %d x %d cells" % (path, len(values), nx, ny))
    return head, values


def dilate_line(mask, out, first, count, stride, reach):
    """Marks in out the entries of one line (count entries from first, stride apart) within
    `reach` entries of a marked entry of mask on that line."""
    for order in (range(count), range(count - 1, -1, -1)):
        last = None
        for k in order:
            c = first + k * stride
            if mask[c]:
                last = k
            if last is not None and abs(k - last) <= reach:
                out[c] = True


def dilate(mask, nx, ny, reach):
    """Cells within `reach` cells (a square) of a marked cell: rows, then columns."""
    rows, out = [False] * (nx * ny), [False] * (nx * ny)
    for j in range(ny):
        dilate_line(mask, rows, j * nx, nx, 1, reach)
    for i in range(nx):
        dilate_line(rows, out, i, ny, nx, reach)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("pilot")
    p.add_argument("bed")
    p.add_argument("out")
    p.add_argument("--cell", type=float, required=True, help="the finest cell size (m)")
    p.add_argument("--reach", type=float, default=100, help="m around the pilot's flood")
    p.add_argument("--slope", type=float, default=0.05, help="finest where steeper (m/m)")
    p.add_argument("--flat", type=float, default=None, help="m where flooded, not steep")
    p.add_argument("--dry", type=float, default=None, help="m away from the flood")
    p.add_argument("--speed", type=float, default=0, help="m/s the finest cells may carry")
    a = p.parse_args()
    flat = a.flat if a.flat else 2 * a.cell
    dry = a.dry if a.dry else 8 * a.cell
    head, depth = read_asc(os.path.join(a.pilot, "max_h.asc"))
    _, speed = read_asc(os.path.join(a.pilot, "max_speed.asc"))
    bhead, bed = read_asc(a.bed)
    nx, ny, size = int(head["ncols"]), int(head["nrows"]), head["cellsize"]
    if (int(bhead["ncols"]), int(bhead["nrows"]), bhead["cellsize"]) != (nx, ny, size):
        raise SystemExit("%s: not on the grid of %s/max_h.asc" % (a.bed, a.pilot))
    nodata, bed_nodata = head.get("nodata_value", -9999), bhead.get("nodata_value", -9999)
    wet = [v != nodata and math.isfinite(v) and v > 0 for v in depth]
    near = dilate(wet, nx, ny, int(math.ceil(a.reach / size)))
    want = [dry] * (nx * ny)
    for j in range(ny):
        for i in range(nx):
            c = i + j * nx
            if not near[c]:
                continue
            steep = 0.0
            if bed[c] != bed_nodata:
                for x, y in ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)):
                    if 0 <= x < nx and 0 <= y < ny and bed[x + y * nx] != bed_nodata:
                        steep = max(steep, abs(bed[x + y * nx] - bed[c]) / size)
            w = a.cell if steep > a.slope else flat
            if a.speed > 0 and wet[c]:
                s = max(speed[c], 0.0) + math.sqrt(9.81 * max(depth[c], 0.0))
                while w / s < a.cell / a.speed and w < dry:
                    w *= 2
            want[c] = w
    scale = int(round(size / a.cell))  # output cells per pilot cell along a side
    if scale < 1 or abs(scale * a.cell - size) > 1e-9 * size:
        raise SystemExit("--cell %g must divide the pilot's cell size %g" % (a.cell, size))
    opener = gzip.open if a.out.endswith(".gz") else open
    with opener(a.out, "wt") as f:
        f.write("ncols %d\nnrows %d\nxllcorner %.17g\nyllcorner %.17g\ncellsize %.17g\n"
                "NODATA_value -9999\n" % (nx * scale, ny * scale, head["xllcorner"],
                                          head["yllcorner"], a.cell))
        for j in range(ny):
            line = " ".join(" ".join(["%g" % want[i + j * nx]] * scale) for i in range(nx))
            for _ in range(scale):
                f.write(line + "\n")
    cells = {}
    for w in want:
        cells[w] = cells.get(w, 0) + 1
    print("%s: wanted sizes (pilot cells): %s" % (a.out, ", ".join(
        "%g m %d" % (w, n) for w, n in sorted(cells.items()))))


if __name__ == "__main__":
    main()
