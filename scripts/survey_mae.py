#!/usr/bin/env python3
"""Mean absolute error of a Malpasset run's maximum water levels against the police survey.

usage: survey_mae.py RUN_DIR [SURVEY_CSV] [--against REF_DIR]

Reads RUN_DIR/max_eta.asc (ESRI ASCII, NODATA where never wet) and the survey
(examples/malpasset/data/police_survey_max_levels.csv: point_id,x,y,max_wse_obs_m,bed_mesh_m),
as tests/validation/test_malpasset.c does: each point's simulated level is the maximum of
max_eta over the cells whose centre lies within 30 m, or where none was wet the nearest wet
cell up to 100 m away. Prints one line: the MAE (m), the points reached and the worst point.
With --against, a second line compares the flood's arrival time (arrival.asc) at the survey
points with REF_DIR's (another run over the same extent, any resolution): the mean and largest
difference relative to REF_DIR's time, over the points both reach.
Python's standard library only (for the benchmark scripts on the GPU machines)."""
import csv
import math
import os
import sys


def read_asc(path):
    with open(path) as f:
        head = {}
        for _ in range(6):
            key, value = f.readline().split()
            head[key.lower()] = float(value)
        values = [float(v) for v in f.read().split()]
    return head, values


def value_at(path, x, y):
    """The value of the cell of an ESRI ASCII grid holding (x, y) (NaN outside or NODATA)."""
    head, values = read_asc(path)
    nx, ny, size = int(head["ncols"]), int(head["nrows"]), head["cellsize"]
    i = int((x - head.get("xllcorner", 0)) // size)
    j = int((y - head.get("yllcorner", 0)) // size)
    if i < 0 or j < 0 or i >= nx or j >= ny:
        return math.nan
    v = values[i + (ny - 1 - j) * nx]
    return math.nan if v == head.get("nodata_value", -9999) else v


def arrival_against(run, ref, rows):
    mine = [value_at(os.path.join(run, "arrival.asc"), float(r["x"]), float(r["y"])) for r in rows]
    theirs = [value_at(os.path.join(ref, "arrival.asc"), float(r["x"]), float(r["y"]))
              for r in rows]
    rel = [abs(a - b) / b for a, b in zip(mine, theirs)
           if math.isfinite(a) and math.isfinite(b) and b > 0]
    if not rel:
        print("arrival: no survey point reached by both runs")
        return
    print("arrival against %s: mean %.2f %%, largest %.2f %% over %d points" %
          (ref, 100 * sum(rel) / len(rel), 100 * max(rel), len(rel)))


def main():
    args = sys.argv[1:]
    ref = None
    if "--against" in args:
        at = args.index("--against")
        ref = args[at + 1]
        del args[at:at + 2]
    run = args[0]
    here = os.path.dirname(os.path.abspath(__file__))
    survey = args[1] if len(args) > 1 else os.path.join(
        here, "..", "examples", "malpasset", "data", "police_survey_max_levels.csv")
    head, values = read_asc(os.path.join(run, "max_eta.asc"))
    nx, ny, size = int(head["ncols"]), int(head["nrows"]), head["cellsize"]
    x0 = head.get("xllcorner", head.get("xllcenter", 0))
    y0 = head.get("yllcorner", head.get("yllcenter", 0))
    nodata = head.get("nodata_value", -9999)
    total, reached, worst = 0.0, 0, ("", -1.0)
    with open(survey) as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        x, y, obs = float(row["x"]), float(row["y"]), float(row["max_wse_obs_m"])
        best, near, near_v = -math.inf, math.inf, math.nan
        i0, i1 = max(0, int((x - x0 - 110) / size)), min(nx, int((x - x0 + 110) / size) + 1)
        j0, j1 = max(0, int((y - y0 - 110) / size)), min(ny, int((y - y0 + 110) / size) + 1)
        for j in range(j0, j1):
            for i in range(i0, i1):
                v = values[i + (ny - 1 - j) * nx]  # rows of the file run north to south
                if not math.isfinite(v) or v == nodata:
                    continue
                d2 = (x0 + (i + 0.5) * size - x) ** 2 + (y0 + (j + 0.5) * size - y) ** 2
                if d2 <= 900 and v > best:
                    best = v
                if d2 < near:
                    near, near_v = d2, v
        if not math.isfinite(best) and near <= 10000:
            best = near_v
        if not math.isfinite(best):
            continue
        reached += 1
        total += abs(best - obs)
        if abs(best - obs) > worst[1]:
            worst = (row["point_id"], abs(best - obs))
    mae = total / reached if reached else math.inf
    print("survey MAE %.2f m over %d of %d points; worst %s (%.2f m)" %
          (mae, reached, len(rows), worst[0], worst[1]))
    if ref:
        arrival_against(run, ref, rows)


if __name__ == "__main__":
    main()
