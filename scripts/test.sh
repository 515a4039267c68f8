#!/usr/bin/env bash
# Sets up, builds and runs every test; the last line is `N passed, N failed` (test cases).
# Usage: scripts/test.sh [extra meson test args, e.g. --suite unit]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

# How long each step took, printed before the count (a cold compiler cache makes the builds the
# bulk of a CI run: docs/install.md).
phases=()
phase() { phases+=("$1 ${SECONDS}s"); SECONDS=0; }
SECONDS=0
bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
phase setup

# ccache (installed by setup.sh), set up so that the package build of scripts/check-install.sh
# could reuse this build's objects (paths relative to the tree, build directory not hashed); it
# does not hit yet (docs/install.md), so the package build compiles again.
export CCACHE_BASEDIR="$here" CCACHE_NOHASHDIR=1
build=${NPU_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" >/dev/null || { echo "meson setup failed" >&2; echo "0 passed, 1 failed"; exit 1; }
fi
if ! ninja -C "$build" >"$build/ninja.log" 2>&1; then
  tail -n 60 "$build/ninja.log" >&2
  echo "build failed (full log: $build/ninja.log)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
phase build

status=0
# Every C and C++ source is formatted with the project's .clang-format (one counted case).
format_result=passed
if ! bash scripts/check-format.sh >"$build/check-format.log" 2>&1; then
  cat "$build/check-format.log" >&2
  format_result=failed
  status=1
fi

# The firmware core must cross-compile for Cortex-M55 (arm-none-eabi, picolibc).
cross_result=passed
if ! bash scripts/cross-build-firmware.sh >"$build/cross-build.log" 2>&1; then
  tail -n 40 "$build/cross-build.log" >&2
  echo "firmware cross build for Cortex-M55 failed (log: $build/cross-build.log)" >&2
  cross_result=failed
  status=1
fi
phase format+cross-build

meson test -C "$build" --num-processes 2 --print-errorlogs "$@" >"$build/meson-test.log" 2>&1
tail -n 25 "$build/meson-test.log"
phase meson-test

# The unit tests of the code that parses hostile input again, under AddressSanitizer and
# UndefinedBehaviorSanitizer (scripts/test-sanitizers.sh, its own build directory): their test
# cases are counted with the others, and any report fails the test that made it. A failed
# sanitizer build counts as one failed case. docs/reliability.md ("Sanitizers") has the subset,
# what is left out and why, and the time it takes.
asan_build="${build}-asan"
rm -f "$asan_build/meson-logs/testlog.json"
asan_logs=()
asan_build_result=passed
if ! bash scripts/test-sanitizers.sh "$asan_build" >"$build/sanitizers.log" 2>&1; then
  tail -n 30 "$build/sanitizers.log" >&2
  echo "unit tests under the sanitizers failed (log: $build/sanitizers.log, $asan_build/meson-test.log)" >&2
  status=1
fi
if [ -f "$asan_build/meson-logs/testlog.json" ]; then
  asan_logs=("$asan_build/meson-logs/testlog.json")
else
  asan_build_result=failed
fi
grep -E '^sanitizers: ' "$build/sanitizers.log" || true
phase sanitizers

# The Debian packages build, install into a scratch root and run (docs/install.md).
install_result=passed
if ! bash scripts/check-install.sh "$build/install-check" >"$build/check-install.log" 2>&1; then
  tail -n 40 "$build/check-install.log" >&2
  echo "package build and install check failed (log: $build/check-install.log)" >&2
  install_result=failed
  status=1
fi
phase package+install
echo "time per step: ${phases[*]}"

python3 scripts/count_tests.py "$build/meson-logs/testlog.json" "${asan_logs[@]}" \
  --extra "$cross_result" --extra "$install_result" --extra "$format_result" --extra "$asan_build_result" || status=1
exit $status
