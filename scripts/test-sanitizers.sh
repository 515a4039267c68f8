#!/usr/bin/env bash
# The unit tests of the code that parses hostile input, built again with AddressSanitizer and
# UndefinedBehaviorSanitizer (GCC), in their own build directory; any report fails the test that
# made it (halt_on_error). Only those tests' executables and what they run are built: not the
# firmware cross build, not the packages. The last line is `N passed, N failed`
# (scripts/count_tests.py); scripts/test.sh adds those cases to its count. docs/reliability.md
# ("Sanitizers") has the subset, the tests left out and why, and the measured times.
# Usage: scripts/test-sanitizers.sh [BUILD_DIR [TEST... | all]]
#   (default build-asan and the test command's subset; `all`: every unit test but the excluded)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
dir=${1:-build-asan}
shift || true
only=("$@")  # some unit tests only, e.g. to check one under the sanitizers

# The test command's subset (name prefixes): the code a client, a peer or a file can reach with
# hostile input: the frame codec and RPC, the cache, the firmware core, the shim, the HAL
# validator, hwsim and its config parser, the framework's parsers, and the fuzz targets' replays.
ci_prefixes=(protocol_ cache_ firmware_ shim_ hal_ hwsim_ fuzz_)
# Left out of the test command's subset for their time (they run with `all`): the other tests that
# link the framework or the CPU reference, whose cases run whole models and CTS files, slow under
# ASan (docs/reliability.md, "Sanitizers").
ci_left_out=(framework_ hwsim_vs_reference firmware_usb_window_service shim_npu_vs_reference
  shim_compilation_caching shim_recovery shim_qemu_restart fuzz_driver_model fuzz_cts_model
  fuzz_compilation_cache fuzz_hostile_firmware)
# ... but the framework's and the reference's parsers of files a user hands over are in: the CTS
# loader (and its base64), the ONNX importer, .npy files, and the reference's validation and
# preparation of each operation (its device test, and the CTS-line fuzz replay through it).
ci_parsers=(framework_cts_loader framework_onnx_import framework_npy reference_device fuzz_cts_model)
# Left out under the sanitizers, with the reason (docs/reliability.md):
excluded=(
  shim_npu_qemu          # runs the firmware image in QEMU: the code under test is the Cortex-M55 build
  tools_npu_qemu_cli     # the same through the npu CLI
  # These start the npu CLI (and npu-fwd daemons) as a new process for each case: minutes under
  # ASan, and the libraries they drive run under ASan in the tests above.
  tools_npu_cli tools_conformance_cli tools_onnx_cli tools_builtin_cli
)
if [ ${#only[@]} -eq 0 ]; then
  only=(ci)
elif [ "${only[*]}" = all ]; then
  only=()
fi

export CCACHE_BASEDIR="$here" CCACHE_NOHASHDIR=1
# halt_on_error: the first report ends the test with an error exit (UBSan would go on otherwise).
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if [ ! -f "$dir/build.ninja" ]; then
  # -O1: compiles faster than the default -O2, and ASan's own guide recommends it.
  # -fno-sanitize=vptr: the firmware core is built without RTTI (-fno-rtti), and UBSan's vptr
  # check needs the typeinfo of every polymorphic class it sees (link errors on fw::RpcServer).
  meson setup "$dir" -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=1 \
    -Dcpp_args=-fno-sanitize=vptr >/dev/null ||
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
prefixes = tuple(os.environ["NPU_CI_PREFIXES"].split())
left_out = tuple(os.environ["NPU_CI_LEFT_OUT"].split())
parsers = set(os.environ["NPU_CI_PARSERS"].split())
excluded = set(sys.argv[3:])
by_id = {t["id"]: t for t in info["targets"]}
out = set()
for t in info["tests"]:
    if t["name"] in excluded or not any(s.endswith(":unit") for s in t["suite"]):
        continue
    if only == {"ci"}:
        if t["name"] not in parsers and (not t["name"].startswith(prefixes) or t["name"].startswith(left_out)):
            continue
    elif only and t["name"] not in only:
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
export NPU_ONLY_TESTS="${only[*]}" NPU_CI_PREFIXES="${ci_prefixes[*]}" NPU_CI_LEFT_OUT="${ci_left_out[*]}" \
  NPU_CI_PARSERS="${ci_parsers[*]}"
mapfile -t targets < <(unit_tests targets)
# The daemon the unix-transport tests start (they name it at compile time, not as a dependency).
targets+=(firmware/platform/host/daemon/npu-fwd)
mapfile -t names < <(unit_tests names)
start=$SECONDS
if ! ninja -C "$dir" "${targets[@]}" >"$dir/ninja.log" 2>&1; then
  tail -n 40 "$dir/ninja.log" >&2
  echo "sanitizers: the build failed (log: $dir/ninja.log)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

built=$SECONDS
# The fuzz regression tests replay fewer mutations here than in the GCC run; every test gets three
# times its usual timeout (instrumented code runs two to three times slower).
NPU_FUZZ_ITERATIONS=${NPU_FUZZ_ITERATIONS:-500} \
  meson test -C "$dir" --no-rebuild --num-processes 2 --timeout-multiplier 3 --print-errorlogs "${names[@]}" \
  >"$dir/meson-test.log" 2>&1
tail -n 15 "$dir/meson-test.log"
echo "sanitizers: ${#names[@]} tests; build $((built - start)) s, run $((SECONDS - built)) s"
python3 scripts/count_tests.py "$dir/meson-logs/testlog.json"
