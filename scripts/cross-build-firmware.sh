#!/bin/sh
# Cross-compiles firmware/core (static library only) for the Cortex-M55 with arm-none-eabi-gcc
# and picolibc, proving the core stays OS-free and freestanding-clean.
#   scripts/cross-build-firmware.sh [BUILD_DIR]     (default: build-m55)
set -eu
cd "$(dirname "$0")/.."
dir="${1:-build-m55}"
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" -Dfirmware_only=true --cross-file firmware/cross/cortex-m55.ini
fi
ninja -C "$dir" -j2 firmware/libnpu_firmware_core.a
echo "firmware core for Cortex-M55: $dir/firmware/libnpu_firmware_core.a"
