#!/usr/bin/env python3
"""Opens a shallow-water run's NetCDF files with xarray, as a user would, and checks them.

usage: check_netcdf_xarray.py OUT_DIR

OUT_DIR/swe.nc: h, hu, hv, eta on (time, y, x) with at least two times, x and y cell centres
(increasing), the maps as (y, x); selecting the second time by its value (ds.sel) gives the same
field as by its index (ds.isel) and a finite largest depth. OUT_DIR/gauges.nc (when present): a
CF timeSeries file whose h is (station, time) with a station_name per station. Exit 0 when all
holds, 1 otherwise (with the reason on stderr)."""
import os
import sys

import numpy as np
import xarray as xr


def fail(message):
    print(f"check_netcdf_xarray: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        fail("usage: check_netcdf_xarray.py OUT_DIR")
    out = sys.argv[1]
    # times are seconds since the start, without a reference date: kept as numbers
    with xr.open_dataset(os.path.join(out, "swe.nc"), decode_timedelta=False) as ds:
        for name in ("h", "hu", "hv", "eta"):
            if name not in ds or ds[name].dims != ("time", "y", "x"):
                fail(f"swe.nc: {name} is not (time, y, x)")
        if ds.sizes["time"] < 2:
            fail(f"swe.nc: {ds.sizes['time']} times (at least 2 expected)")
        if not (np.diff(ds["x"].values) > 0).all() or not (np.diff(ds["y"].values) > 0).all():
            fail("swe.nc: x and y must increase")
        t = float(ds["time"].values[1])
        by_value = ds["h"].sel(time=t)
        by_index = ds["h"].isel(time=1)
        if not by_value.equals(by_index):
            fail(f"swe.nc: h at time {t} differs between sel and isel")
        if not np.isfinite(float(by_value.max())):
            fail("swe.nc: no finite depth at the second time")
        for name in ("bed", "max_h"):
            if name in ds and ds[name].dims != ("y", "x"):
                fail(f"swe.nc: {name} is not (y, x)")
        print(f"swe.nc: {ds.sizes['time']} times, h at t = {t:g} s up to {float(by_value.max()):g} m")
    gauges = os.path.join(out, "gauges.nc")
    if os.path.exists(gauges):
        with xr.open_dataset(gauges, decode_timedelta=False) as ds:
            if ds.attrs.get("featureType") != "timeSeries":
                fail("gauges.nc: featureType is not timeSeries")
            if ds["h"].dims != ("station", "time"):
                fail("gauges.nc: h is not (station, time)")
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in ds["station_name"].values]
            print(f"gauges.nc: stations {', '.join(names)}, {ds.sizes['time']} times")


if __name__ == "__main__":
    main()
