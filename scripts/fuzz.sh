#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for SECONDS each (default 60), with AddressSanitizer
# and UndefinedBehaviorSanitizer, starting from the targets' seeds. Crashes, traps (a broken
# invariant), leaks, timeouts (10 s per input, NPU_FUZZ_TIMEOUT) and out-of-memory (2 GiB) stop a target and leave
# the input in build-fuzz/artifacts/. The CI runs the same targets as regression tests (GCC);
# this script is the real fuzzing. See tests/fuzz/README.md.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     (targets: frame_decoder firmware_rpc token_map
#        cts_model driver_model blob_loader compilation_cache hw_config hostile_firmware)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
  targets=(frame_decoder firmware_rpc token_map cts_model driver_model blob_loader compilation_cache hw_config
    hostile_firmware)
case "$seconds" in ''|*[!0-9]*) echo "fuzz: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;; esac
# libFuzzer's per-input timeout is wall-clock time: on a loaded shared machine a niced run can be
# starved for seconds, so NPU_FUZZ_TIMEOUT raises it (seconds; default 10).
unit_timeout=${NPU_FUZZ_TIMEOUT:-10}
case "$unit_timeout" in ''|*[!0-9]*|0) echo "fuzz: NPU_FUZZ_TIMEOUT must be a whole number of seconds, got '$unit_timeout'" >&2; exit 2 ;; esac

bash scripts/setup.sh
# Debian 12's clang-19 is the first of its clangs whose C++23 library support covers the
# std::expected this project uses; libclang-rt-19-dev holds libFuzzer and the sanitizers.
need=()
for p in clang-19 libclang-rt-19-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  echo "fuzz: installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" \
    || { echo "fuzz: could not install ${need[*]} from the Debian archive" >&2; exit 1; }
fi

# -fsanitize=fuzzer-no-link goes in the meson options: a -Dcpp_args replaces CXXFLAGS, and
# without it only the fuzz targets' own files were instrumented (libFuzzer then saw no coverage
# of the code under test). A build-fuzz/ set up without it is set up again.
fuzz_args="-fsanitize=fuzzer-no-link -fno-sanitize=vptr -fno-sanitize-recover=all"
if [ -f build-fuzz/build.ninja ] && ! grep -q -- "fuzzer-no-link -fno-sanitize=vptr" build-fuzz/build.ninja; then
  meson configure build-fuzz -Dc_args="-fsanitize=fuzzer-no-link" -Dcpp_args="$fuzz_args"
fi
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang-19 CXX=clang++-19 meson setup build-fuzz -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args="-fsanitize=fuzzer-no-link" -Dcpp_args="$fuzz_args"
fi
build_targets=()
for t in "${targets[@]}"; do build_targets+=("tests/fuzz/fuzz_$t" "tests/test_fuzz_$t"); done
ninja -C build-fuzz "${build_targets[@]}"

mkdir -p build-fuzz/artifacts
failed=()
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  # The seeds, written by the target's regression test (which also replays them once).
  NPU_FUZZ_WRITE_SEEDS=$corpus NPU_FUZZ_ITERATIONS=0 "build-fuzz/tests/test_fuzz_$t" >/dev/null
  echo "fuzz: $t for ${seconds}s (corpus $corpus, $(ls "$corpus" | wc -l) inputs)"
  if "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout="$unit_timeout" -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" "$corpus" 2>"build-fuzz/fuzz_$t.log"; then
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "build-fuzz/fuzz_$t.log" | sed "s/^/  /"
    echo "  corpus: $(ls "$corpus" | wc -l) inputs"
  else
    echo "fuzz: $t FAILED; see build-fuzz/fuzz_$t.log and build-fuzz/artifacts/" >&2
    grep -E 'ERROR|SUMMARY|runtime error' "build-fuzz/fuzz_$t.log" | head -5 >&2
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s without a finding"
