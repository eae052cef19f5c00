#!/usr/bin/env python3
"""Draws a `tessera run --trace FILE.json` trace (Chrome trace event format) as a timeline PNG:
one row per lane (host thread, GPU stream, MPI message lane) of each rank, one bar per task,
coloured by kind. For the docs and for machines without a browser; Perfetto
(https://ui.perfetto.dev) opens the same file interactively.

usage: scripts/trace_png.py TRACE.json OUT.png [--from MS] [--to MS] [--title TEXT]
Needs python3-matplotlib (Debian)."""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"trace": "#1f77b4", "energy": "#ff7f0e", "coarsen": "#8c564b", "upload": "#2ca02c",
           "upload coarse": "#98df8a", "send": "#d62728", "receive": "#9467bd"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--from", dest="t0", type=float, default=None, help="ms")
    ap.add_argument("--to", dest="t1", type=float, default=None, help="ms")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    with open(a.trace) as f:
        events = json.load(f)["traceEvents"]
    names = {}
    for e in events:
        if e.get("ph") == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = "rank %d: %s" % (e["pid"], e["args"]["name"])
    tasks = [e for e in events if e.get("ph") == "X"]
    lanes = sorted({(e["pid"], e["tid"]) for e in tasks})
    row = {lane: k for k, lane in enumerate(lanes)}
    fig, ax = plt.subplots(figsize=(12, 0.35 * len(lanes) + 1.5))
    seen = set()
    for e in tasks:
        start, dur = e["ts"] / 1000, e["dur"] / 1000
        if (a.t0 is not None and start + dur < a.t0) or (a.t1 is not None and start > a.t1):
            continue
        colour = COLOURS.get(e["name"], "#7f7f7f")
        label = e["name"] if e["name"] not in seen else None
        seen.add(e["name"])
        ax.broken_barh([(start, max(dur, 1e-3))], (row[(e["pid"], e["tid"])] - 0.4, 0.8),
                       facecolors=colour, edgecolor="black", linewidth=0.2, label=label)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([names.get(lane, str(lane)) for lane in lanes], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    if a.t0 is not None or a.t1 is not None:
        ax.set_xlim(a.t0, a.t1)
    ax.set_title(a.title or a.trace, fontsize=10)
    ax.legend(loc="upper right", fontsize=8, ncol=len(seen))
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)


if __name__ == "__main__":
    main()
