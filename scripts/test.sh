#!/usr/bin/env bash
# Builds lanes and runs every test: ./scripts/test.sh
# With --sanitize: the same under AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/.
source "$(dirname "$0")/common.sh"
lanes_install_deps
if [ "${1:-}" = "--sanitize" ]; then
  dir="$LANES_ROOT/build-asan"
  lanes_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLANES_SANITIZE=ON -DLANES_BUILD_BENCH=OFF
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
else
  dir="$LANES_ROOT/build"
  lanes_build "$dir"
fi
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
