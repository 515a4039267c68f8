#!/usr/bin/env bash
# Sets up, builds and runs the main job: a small quantized CNN through the whole stack
# (shim -> protobuf RPC -> firmware -> simulated NPU), checked bit for bit against the CPU
# reference, with its outputs, the simulated device time and a per-operation cycle table.
# Usage: scripts/demo.sh [--transport loopback|unix] [--json]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/setup.sh
build=${NPU_BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null
ninja -C "$build" >"$build/ninja.log" 2>&1 || { tail -n 60 "$build/ninja.log" >&2; echo "build failed (log: $build/ninja.log)" >&2; exit 1; }
exec "$build/tools/npu" demo "$@"
