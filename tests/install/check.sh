#!/usr/bin/env bash
# Builds and runs a consumer of lanes twice: via cmake --install + find_package(lanes), and via
# add_subdirectory.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build=${1:-$root/build}  # an already built tree (scripts/test.sh makes build/)
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$root/tests/install" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer"
# -O1: this proves add_subdirectory works, and -O1 builds the library in about half the time of
# Release's -O3 (CI time), the more so as a unity build. Not -O0: xsimd's AVX-512 intrinsics do
# not compile unoptimized.
cmake -S "$root/tests/install" -B "$work/subdir" -DLANES_SOURCE_DIR="$root" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O1 -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$work/subdir" -j "$(nproc)" >/dev/null
"$work/subdir/consumer"
