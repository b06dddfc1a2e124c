#!/usr/bin/env bash
# Builds lanes and runs every test: ./scripts/test.sh
# With --sanitize: the same under AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/.
# With --tsan: the thread pool, concurrency and fuzz tests' fixed seeds under ThreadSanitizer, in
# build-tsan/ (only those targets: a TSan build of every test would take most of the CI budget).
source "$(dirname "$0")/common.sh"
lanes_install_deps
if [ "${1:-}" = "--sanitize" ]; then
  dir="$LANES_ROOT/build-asan"
  # -O1 -g1: half the compile time of RelWithDebInfo's -O2 -g (CI time), line tables kept. A
  # unity build (the library's 97 sources in batches of 8: 316 -> 240 s on 2 cores); the plain
  # build stays one unit per file, as the benchmarks measure it. The Python package's tests run
  # too, the ASan runtime preloaded (python/CMakeLists.txt). The examples have no tests: the
  # plain build compiles them, the demo command runs them.
  lanes_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_UNITY_BUILD=ON -DLANES_SANITIZE=ON -DLANES_BUILD_BENCH=OFF -DLANES_BUILD_EXAMPLES=OFF
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
  export LANES_FUZZ_SEEDS=0:2000  # a seventh of test_fuzz's seeds: it is ~5x slower here (CI time)
elif [ "${1:-}" = "--tsan" ]; then
  dir="$LANES_ROOT/build-tsan"
  tsan_tests=(test_parallel test_threads test_fuzz)
  cmake -S "$LANES_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_UNITY_BUILD=ON -DLANES_TSAN=ON \
    -DLANES_BUILD_BENCH=OFF -DLANES_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$dir" -j "$(nproc)" --target "${tsan_tests[@]}"
  # lanes' thread pool is instrumented and runs with its default threads; OpenBLAS is not (it
  # runs single-threaded on the pool's threads; tests/tsan.supp for what it shares between
  # callers). test_fuzz is ~20x slower under TSan: the first 500 of its fixed seeds.
  export LANES_FUZZ_SEEDS=0:500
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$LANES_ROOT/tests/tsan.supp"
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" \
    -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$"
  exit 0
else
  dir="$LANES_ROOT/build"
  lanes_build "$dir"
fi
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
