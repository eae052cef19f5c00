#!/usr/bin/env bash
# Packs build-gpu for a device call within the 64 MiB the device tool carries: a copy in
# build-dev without object files, static libraries, CMake's compiler probes, local test outputs
# and the test executables that no `gpu` test runs, stripped. On the device: `mv build-dev build-gpu`, then
# bench/device.sh (which reads build-gpu). Libraries the device lacks go in .devlibs (see
# bench/device.sh). With --cli-only, no validation executable either (for the tests and benches
# that run the tessera command only: the quadtree's, when the whole build exceeds 64 MiB).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/build-gpu dst=$root/build-dev
[ -f "$src/CMakeCache.txt" ] || { echo "no $src: build it first (bench/device.sh's header)"; exit 1; }
rm -rf "$dst"
cp -a "$src" "$dst"
find "$dst" \( -name '*.o' -o -name '*.a' \) -delete
rm -rf "$dst"/CMakeFiles/[0-9]*/CompilerId* "$dst"/CMakeFiles/CheckCUDA "$dst"/Testing
# the validation executables the gpu tests run (tests/gpu/CMakeLists.txt names them)
keep=$(grep -o 'validation_[a-z0-9_]*' "$root/tests/gpu/CMakeLists.txt" "$src/tests/gpu/CTestTestfile.cmake" |
  sed 's/.*://' | sort -u)
[ "${1:-}" = --cli-only ] && keep=
for f in "$dst"/tests/validation/validation_*; do
  echo "$keep" | grep -qx "$(basename "$f")" || rm -f "$f"
done
rm -f "$dst"/tests/unit/unit_* "$dst"/tests/fuzz/fuzz_*
# the outputs local test runs left (the tests make them again)
find "$dst/tests" -mindepth 2 -maxdepth 2 -type d ! -name CMakeFiles -exec rm -rf {} +
strip "$dst"/apps/tessera/tessera "$dst"/tests/*/* 2>/dev/null || true
# the commit the build was made from, for the results' records (bench/device.sh prints it)
{
  git -C "$root" log -1 --format='%h %s'
  git -C "$root" status --porcelain --untracked-files=no | sed 's/^/  changed: /'
} >"$dst/COMMIT" 2>/dev/null || true
du -sh "$dst"
