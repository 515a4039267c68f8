#!/usr/bin/env bash
# The unit suite again, built with AddressSanitizer and UndefinedBehaviorSanitizer (GCC), in its
# own build directory; any report fails the test that made it (halt_on_error). Only the unit
# tests' executables and what they run are built: not the firmware cross build, not the
# packages. The last line is `N passed, N failed` (scripts/count_tests.py); scripts/test.sh counts
# the whole run as one case. docs/reliability.md ("Sanitizers") lists the tests left out and why.
# Usage: scripts/test-sanitizers.sh [BUILD_DIR [TEST...]]   (default build-asan, every unit test)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
dir=${1:-build-asan}
shift || true
only=("$@")  # some unit tests only, e.g. to check one under the sanitizers

# Left out under the sanitizers, with the reason (docs/reliability.md):
excluded=(
  shim_npu_qemu          # runs the firmware image in QEMU: the code under test is the Cortex-M55 build
  tools_npu_qemu_cli     # the same through the npu CLI
  # These start the npu CLI (and npu-fwd daemons) as a new process for each case: minutes under
  # ASan, and the libraries they drive run under ASan in the tests above.
  tools_npu_cli tools_conformance_cli tools_onnx_cli
)

export CCACHE_BASEDIR="$here" CCACHE_NOHASHDIR=1
# halt_on_error: the first report ends the test with an error exit (UBSan would go on otherwise).
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if [ ! -f "$dir/build.ninja" ]; then
  # -O1: compiles faster than the default -O2, and ASan's own guide recommends it.
  meson setup "$dir" -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=1 >/dev/null ||
    { echo "sanitizers: meson setup $dir failed" >&2; echo "0 passed, 1 failed"; exit 1; }
fi

# The unit tests left in (names), or their executables and the targets they depend on (npu-fwd,
# the npu CLI) as ninja targets.
unit_tests() {
  meson introspect "$dir" --tests --targets | python3 -c '
import json, os, sys
info = json.load(sys.stdin)
mode, build = sys.argv[1], os.path.realpath(sys.argv[2])
only = set(os.environ["NPU_ONLY_TESTS"].split())
excluded = set(sys.argv[3:])
by_id = {t["id"]: t for t in info["targets"]}
out = set()
for t in info["tests"]:
    if t["name"] in excluded or not any(s.endswith(":unit") for s in t["suite"]):
        continue
    if only and t["name"] not in only:
        continue
    if mode == "names":
        out.add(t["name"])
        continue
    out.add(os.path.relpath(t["cmd"][0], build))
    for d in t.get("depends", []):
        for f in by_id.get(d, {}).get("filename", []):
            out.add(os.path.relpath(f, build))
print("\n".join(sorted(out)))
' "$1" "$dir" "${excluded[@]}"
}
export NPU_ONLY_TESTS="${only[*]}"
mapfile -t targets < <(unit_tests targets)
mapfile -t names < <(unit_tests names)
if ! ninja -C "$dir" "${targets[@]}" >"$dir/ninja.log" 2>&1; then
  tail -n 40 "$dir/ninja.log" >&2
  echo "sanitizers: the build failed (log: $dir/ninja.log)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

# The fuzz regression tests replay fewer mutations here than in the GCC run; every test gets three
# times its usual timeout (instrumented code runs two to three times slower).
NPU_FUZZ_ITERATIONS=${NPU_FUZZ_ITERATIONS:-500} \
  meson test -C "$dir" --no-rebuild --num-processes 2 --timeout-multiplier 3 --print-errorlogs "${names[@]}" \
  >"$dir/meson-test.log" 2>&1
tail -n 15 "$dir/meson-test.log"
python3 scripts/count_tests.py "$dir/meson-logs/testlog.json"
