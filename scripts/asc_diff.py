#!/usr/bin/env python3
"""Where two ESRI ASCII grids of the same shape differ.

usage: asc_diff.py A.asc B.asc

Prints one line: the number of cells that differ, the largest absolute difference, and the
bounding box (columns and rows, row 0 at the top as in the file) of the differing cells; then up
to 10 of them (column, row, A, B). Exits 0 when the grids are equal, 1 when they differ.
Python's standard library only (for the benchmark scripts on the GPU machines)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from survey_mae import read_asc  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().split("\n\n")[1])
    (ha, a), (hb, b) = read_asc(sys.argv[1]), read_asc(sys.argv[2])
    na = int(ha["ncols"])
    if ha != hb or len(a) != len(b):
        sys.exit("asc_diff.py: %s and %s differ in shape" % (sys.argv[1], sys.argv[2]))
    cells = [k for k in range(len(a)) if a[k] != b[k]]
    if not cells:
        print("equal: %d cells" % len(a))
        return 0
    cols = [k % na for k in cells]
    rows = [k // na for k in cells]
    largest = max(abs(a[k] - b[k]) for k in cells)
    print("%d cells differ, largest difference %.3g, columns %d..%d, rows %d..%d" %
          (len(cells), largest, min(cols), max(cols), min(rows), max(rows)))
    for k in cells[:10]:
        print("  column %d row %d: %.9g %.9g" % (k % na, k // na, a[k], b[k]))
    return 1


if __name__ == "__main__":
    sys.exit(main())
