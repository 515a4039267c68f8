#!/bin/sh
# Cross-compiles the firmware for the Cortex-M55 with arm-none-eabi-gcc and picolibc: the
# portable core (proving it stays OS-free and freestanding-clean) and the bootable image for
# QEMU's mps3-an547 (firmware/platform/qemu), and prints the image's flash/RAM footprint.
#   scripts/cross-build-firmware.sh [BUILD_DIR] [IMAGE_COPY]
#     BUILD_DIR   the cross build directory (default: build-m55)
#     IMAGE_COPY  where to copy the ELF image (the native build's custom target uses this)
set -eu
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-build-m55}"
case "$dir" in /*) ;; *) dir="$root/$dir" ;; esac
copy="${2:-}"
case "$copy" in /* | "") ;; *) copy="$(pwd)/$copy" ;; esac
cd "$root"
mkdir -p "$dir"
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" -Dfirmware_only=true --cross-file firmware/cross/cortex-m55.ini >"$dir/cross-setup.log" 2>&1 ||
    { cat "$dir/cross-setup.log" >&2; exit 1; }
fi
image="$dir/firmware/platform/qemu/npu-fw-m55.elf"
ninja -C "$dir" -j2 firmware/libnpu_firmware_core.a firmware/platform/qemu/npu-fw-m55.elf >"$dir/cross-ninja.log" 2>&1 ||
  { cat "$dir/cross-ninja.log" >&2; exit 1; }
echo "firmware core for Cortex-M55: $dir/firmware/libnpu_firmware_core.a"
# Flash = what the image loads into ITCM (vectors, code, read-only data, .data's image);
# RAM = DTCM (.data, .bss, stack). The DDR arenas are counted at run time (GetCounters).
arm-none-eabi-size -A "$image" | awk '
  $1 == ".vectors" || $1 == ".text" { flash += $2 }
  $1 == ".data" || $1 == ".tdata" { flash += $2; ram += $2 }
  $1 == ".tbss" || $1 == ".bss" || $1 == ".stack" { ram += $2 }
  END { printf "firmware image for mps3-an547: flash %d B (ITCM), RAM %d B (DTCM, incl. stack)\n", flash, ram }'
echo "  $image"
if [ -n "$copy" ]; then
  cp "$image" "$copy.tmp" && mv "$copy.tmp" "$copy"
fi
