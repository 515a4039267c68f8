#!/usr/bin/env bash
# Builds the Debian packages (dpkg-buildpackage -b -us -uc) from a copy of the tree, unpacks them
# into a scratch root, and checks the installed files work: `npu info` and `npu demo` (loopback and
# unix, the latter starting the installed npu-fwd beside npu), `npu info --transport qemu` (the
# installed firmware image and bridge, when qemu-system-arm is there), and a small client
# compiled against the installed headers and libraries with `pkg-config --cflags --libs npu-shim`.
# Usage: scripts/check-install.sh [WORKDIR]     (default: build/install-check; everything it
# writes stays below WORKDIR). Exit 0 when every check passed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mkdir -p "${1:-$here/build/install-check}" && cd "${1:-$here/build/install-check}" && pwd)
rm -rf "$work/src" "$work/root" "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo
mkdir -p "$work/src" "$work/root"

step() { echo "check-install: $*"; }
fail() { echo "check-install: FAILED: $*" >&2; exit 1; }

# The package is built from what git tracks plus the fetched nanopb runtime source (setup.sh).
step "copying the tree to $work/src"
(cd "$here" && git ls-files -z | xargs -0 cp --parents -t "$work/src")
cp -r "$here/third_party" "$work/src/"

# Same compiler flags as the main build (debian/rules), so ccache serves what it already compiled.
# debhelper (compat 13) gives the build a HOME of its own, so ccache's directory is named here.
export CCACHE_BASEDIR="$here" CCACHE_NOHASHDIR=1
if command -v ccache >/dev/null; then
    CCACHE_DIR=$(ccache -k cache_dir) && export CCACHE_DIR
fi
step "dpkg-buildpackage -b -us -uc (log: $work/dpkg-buildpackage.log)"
(cd "$work/src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
    timeout 1800 dpkg-buildpackage -b -us -uc >"$work/dpkg-buildpackage.log" 2>&1) ||
    { tail -n 40 "$work/dpkg-buildpackage.log" >&2; fail "dpkg-buildpackage"; }

root="$work/root"
for deb in "$work"/*.deb; do
    step "unpacking $(basename "$deb")"
    dpkg-deb -x "$deb" "$root"
done
for f in usr/bin/npu usr/bin/npu-fwd usr/include/npu/shim/npu_device.h \
         usr/share/man/man1/npu.1.gz usr/share/man/man8/npu-fwd.8.gz \
         usr/lib/systemd/user/npu-fwd.socket usr/lib/systemd/user/npu-fwd.service \
         usr/share/npu-stack/cts/V1_3.jsonl.gz \
         usr/bin/npu-qemu-bridge usr/share/npu-stack/firmware/npu-fw-m55.elf; do
    [ -e "$root/$f" ] || fail "the packages do not install /$f"
done

step "npu info (installed)"
timeout 60 "$root/usr/bin/npu" info >"$work/info.log" 2>&1 || { cat "$work/info.log" >&2; fail "npu info"; }
step "npu demo (installed, loopback)"
timeout 120 "$root/usr/bin/npu" demo >"$work/demo.log" 2>&1 || { cat "$work/demo.log" >&2; fail "npu demo"; }
step "npu demo --transport unix (installed npu-fwd, found beside npu)"
sock="$work/npu-fwd.sock"
timeout 120 env -u NPU_FWD "$root/usr/bin/npu" demo --transport unix --socket "$sock" >"$work/demo-unix.log" 2>&1 ||
    { cat "$work/demo-unix.log" >&2; fail "npu demo --transport unix"; }

if command -v qemu-system-arm >/dev/null; then
    step "npu info --transport qemu (installed image and bridge, found relative to npu)"
    timeout 120 env -u NPU_QEMU_IMAGE -u NPU_QEMU_BRIDGE "$root/usr/bin/npu" info --transport qemu \
        >"$work/info-qemu.log" 2>&1 || { cat "$work/info-qemu.log" >&2; fail "npu info --transport qemu"; }
    grep -q "Cortex-M55 (qemu mps3-an547)" "$work/info-qemu.log" ||
        fail "npu info --transport qemu does not name the Cortex-M55 image"
fi

step "a client built with pkg-config --cflags --libs npu-shim"
export PKG_CONFIG_SYSROOT_DIR="$root"
export PKG_CONFIG_LIBDIR="$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/pkgconfig:/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/pkgconfig:/usr/share/pkgconfig"
flags=$(pkg-config --cflags --libs npu-shim) || fail "pkg-config --cflags --libs npu-shim"
g++ -std=c++23 -o "$work/client" "$here/tests/install/client.cpp" $flags ||
    fail "compiling the client against the installed headers ($flags)"
timeout 60 "$work/client" "$root/usr/bin/npu-fwd" "$work/client.sock" || fail "the client"
step "all checks passed"
