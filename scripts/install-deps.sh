#!/usr/bin/env bash
# Installs the Debian packages Tessera builds and tests with. Idempotent: does nothing when every
# package is already there. Called by `make run`, `make test` and .ci/run.
set -euo pipefail
packages=(build-essential cmake pkg-config libinih-dev libnetcdf-dev netcdf-bin libpng-dev zlib1g-dev
          libgdal-dev gdal-bin libomp-dev libopenmpi-dev openmpi-bin clang librandom123-dev python3
          python3-xarray python3-netcdf4)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
