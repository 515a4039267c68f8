#!/usr/bin/env bash
# The USB test VM (docs/usb.md): an x86-64 Debian kernel under qemu-system-x86_64 -accel tcg
# with dummy_hcd (a software USB host controller wired to a software device controller),
# libcomposite and FunctionFS, so the NPU's USB device side (npu-usb-gadget) and the host's
# libusb transport talk through the real Linux USB stack. This machine's kernel has no USB.
#
#   scripts/usb-vm.sh prepare
#       Downloads Debian's kernel and busybox-static (apt-get download, no install) and builds
#       the initramfs once into $NPU_USB_VM_CACHE (default ~/.cache/npu-stack/usb-vm).
#   scripts/usb-vm.sh run [--timeout S] -- COMMAND [ARGS...]
#       Boots the guest (the host's / mounted read-only over 9p and chrooted into, so host-built
#       binaries run unchanged), runs COMMAND as root and returns its exit status.
#   scripts/usb-vm.sh gadget-run [--timeout S] [--gadget PATH] -- COMMAND [ARGS...]
#       As run, but first creates the configfs gadget (vendor interface over FunctionFS), starts
#       the device-side program (PATH, default build/firmware/platform/usb_gadget/npu-usb-gadget)
#       and binds it to dummy_udc.0. COMMAND sees NPU_USB_UDC_FILE (write "" to unplug,
#       $NPU_USB_UDC to replug) and NPU_USB_DEVICE (VID:PID:SERIAL).
#   scripts/usb-vm.sh test TEST_BINARY [CATCH2 ARGS...]
#       gadget-run for a test binary; exits 77 (meson's "skipped") with the reason when the VM
#       cannot start here (no qemu-system-x86_64, no kernel package reachable).
#   scripts/usb-vm.sh vm-test TEST_BINARY [CATCH2 ARGS...]
#       As test, without the gadget (e.g. the dma-buf tests, with NPU_VM_KERNEL below).
#
# NPU_USB_VM_CPUS (default 2) and NPU_USB_VM_MEMORY (MiB, default 2048) size the guest.
# NPU_VM_KERNEL=PACKAGE boots another Debian kernel package (or meta package, resolved to the
# kernel it depends on) than linux-image-amd64's, cached apart in ~/.cache/npu-stack/vm-PACKAGE:
# e.g. linux-image-6.12-amd64, whose kernel has the system dma-heap (CONFIG_DMABUF_HEAPS_SYSTEM)
# that Debian 12's default 6.1 kernel lacks. A module of the list below that a kernel has built in
# (modules.builtin) is not loaded; one marked "?" may be absent (fscache is part of netfs in 6.12).
#
# Every path is bounded: qemu runs under timeout(1) with a kill, the guest powers off after the
# command, and a command that overruns is killed by the guest's own timeout first.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
kernel_meta=${NPU_VM_KERNEL:-linux-image-amd64}
# A Debian package name (it names the cache directory: no "/", no "..").
if ! [[ $kernel_meta =~ ^[a-z0-9][a-z0-9.+-]*$ ]] || [[ $kernel_meta == *..* ]]; then
  echo "usb-vm: NPU_VM_KERNEL='$kernel_meta' is not a Debian package name" >&2
  exit 2
fi
if [ -n "${NPU_VM_KERNEL:-}" ]; then
  cache=${NPU_USB_VM_CACHE:-$HOME/.cache/npu-stack/vm-$NPU_VM_KERNEL}
else
  cache=${NPU_USB_VM_CACHE:-$HOME/.cache/npu-stack/usb-vm}
fi
vid=1209
pid=0001
serial=NPUSIM0001

# Loaded in this order with insmod (each line's dependencies come before it).
modules=(
  drivers/usb/common/usb-common drivers/usb/core/usbcore drivers/usb/gadget/udc/udc-core
  drivers/usb/gadget/udc/dummy_hcd fs/configfs/configfs drivers/usb/gadget/libcomposite
  drivers/usb/gadget/function/usb_f_fs
  drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev
  drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci
  fs/netfs/netfs ?fs/fscache/fscache net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p
)

log() { echo "usb-vm: $*" >&2; }

# Exit code for "cannot run here": 77 when skipping is allowed, else 1.
skip_code=1
cannot_run() {
  log "$*"
  exit "$skip_code"
}

kernel_package() {
  # The kernel the meta package currently depends on (a kernel package names itself).
  local dep
  dep=$(apt-cache depends "$kernel_meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  if [ -n "$dep" ]; then echo "$dep"; elif apt-cache show "$kernel_meta" >/dev/null 2>&1; then echo "$kernel_meta"; fi
}

init_sum() { write_init | sha256sum | cut -d' ' -f1; }

# Puts the current /init into a cached initramfs whose /init is older (no new download).
refresh_init() {
  local root="$cache/refresh"
  rm -rf "$root" && mkdir -p "$root" || return 1
  (cd "$root" && gzip -dc "$cache/initramfs.cpio.gz" | cpio -id 2>/dev/null) || return 1
  write_init >"$root/init" && chmod +x "$root/init" || return 1
  (cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$cache/initramfs.cpio.gz.tmp") || return 1
  mv "$cache/initramfs.cpio.gz.tmp" "$cache/initramfs.cpio.gz" && init_sum >"$cache/init.sum"
  rm -rf "$root"
  log "refreshed the guest's /init in $cache/initramfs.cpio.gz"
}

prepare() {
  if [ -f "$cache/initramfs.cpio.gz" ] && [ -f "$cache/vmlinuz" ]; then
    [ "$(cat "$cache/init.sum" 2>/dev/null)" = "$(init_sum)" ] && return 0
    refresh_init && return 0
  fi
  command -v dpkg-deb >/dev/null || cannot_run "dpkg-deb not found (Debian's dpkg is needed to unpack the kernel)"
  command -v cpio >/dev/null || cannot_run "cpio not found (scripts/setup.sh installs it)"
  local kpkg
  kpkg=$(kernel_package)
  [ -n "$kpkg" ] || cannot_run "apt-cache knows no $kernel_meta (is the Debian archive configured?)"
  local work="$cache/work"
  rm -rf "$work" && mkdir -p "$work/debs" || cannot_run "cannot create $work"
  log "downloading $kpkg and busybox-static into $cache (once)"
  if ! (cd "$work/debs" && timeout 600 apt-get download "$kpkg" busybox-static >/dev/null 2>"$work/apt.log"); then
    cat "$work/apt.log" >&2
    cannot_run "apt-get download $kpkg busybox-static failed (no Debian archive reachable?)"
  fi
  dpkg-deb -x "$work"/debs/linux-image-*.deb "$work/kernel" || cannot_run "cannot unpack $kpkg"
  dpkg-deb -x "$work"/debs/busybox-static_*.deb "$work/busybox" || cannot_run "cannot unpack busybox-static"
  local kver
  kver=$(ls "$work/kernel/lib/modules" | head -n 1)
  local root="$work/initramfs"
  mkdir -p "$root"/{bin,dev,proc,sys,host,lib/modules} || return 1
  cp "$work/busybox/bin/busybox" "$root/bin/busybox"
  : >"$root/modules.order"
  local m
  for m in "${modules[@]}"; do
    local optional=
    [ "${m#\?}" != "$m" ] && optional=1 && m=${m#\?}
    local src="$work/kernel/lib/modules/$kver/kernel/$m.ko"
    [ -f "$src" ] || { [ -f "$src.xz" ] && xz -dc "$src.xz" >"$src"; }
    if [ ! -f "$src" ]; then
      grep -qx "kernel/$m.ko" "$work/kernel/lib/modules/$kver/modules.builtin" 2>/dev/null && continue
      [ -n "$optional" ] && continue
      cannot_run "module $m.ko missing from $kpkg"
    fi
    cp "$src" "$root/lib/modules/$(basename "$m").ko"
    echo "$(basename "$m")" >>"$root/modules.order"
  done
  write_init >"$root/init"
  chmod +x "$root/init"
  (cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$cache/initramfs.cpio.gz.tmp") ||
    cannot_run "cannot pack the initramfs"
  mv "$cache/initramfs.cpio.gz.tmp" "$cache/initramfs.cpio.gz"
  init_sum >"$cache/init.sum"
  cp "$work/kernel/boot/vmlinuz-$kver" "$cache/vmlinuz"
  echo "$kpkg" >"$cache/kernel-package"
  rm -rf "$work"
  log "prepared $kpkg ($(du -h "$cache/initramfs.cpio.gz" | cut -f1) initramfs) in $cache"
}

# The guest's /init: load modules, mount the host's / read-only and the job directory, chroot
# into the host root, run the job script, record its status, power off.
write_init() {
  cat <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do
  insmod /lib/modules/$m.ko 2>/dev/null || echo "usb-vm guest: insmod $m failed"
done
o=trans=virtio,version=9p2000.L,msize=524288
if ! mount -t 9p -o $o,ro,cache=loose hostroot /host; then
  echo "usb-vm guest: cannot mount the host root over 9p"; poweroff -f
fi
mount -t proc proc /host/proc || echo "usb-vm guest: cannot mount /proc"
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mount -t configfs none /host/sys/kernel/config
mount -t tmpfs tmp /host/tmp
mount -t tmpfs run /host/run
mkdir -p /host/tmp/job
mount -t 9p -o $o job /host/tmp/job
# A tree under /tmp or /run (a CI clone, say) is hidden by the tmpfs above: mount it again.
project=$(sed -n 's/.*npu_project=\([^ ]*\).*/\1/p' /proc/cmdline)
case "$project" in
  /tmp/*|/run/*) mkdir -p "/host$project" && mount -t 9p -o $o,ro,cache=loose project "/host$project" ||
                   echo "usb-vm guest: cannot mount the project tree $project" ;;
esac
limit=$(sed -n 's/.*npu_timeout=\([0-9]*\).*/\1/p' /proc/cmdline)
ip link set lo up 2>/dev/null
chroot /host /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp \
  /usr/bin/timeout -k 3 "${limit:-300}" /bin/bash /tmp/job/run.sh </dev/console >/dev/console 2>&1
echo $? >/host/tmp/job/status
sync
poweroff -f
EOF
}

# Boots the guest running $job/run.sh; returns its status (124 when it overran).
boot() {
  local job=$1 limit=$2
  local mem=${NPU_USB_VM_MEMORY:-2048} cpus=${NPU_USB_VM_CPUS:-2}
  # The guest's own timeout fires first; qemu's covers a guest that hangs before it.
  timeout -k 5 $((limit + 90)) qemu-system-x86_64 -accel tcg -cpu max -smp "$cpus" -m "$mem" \
    -display none -monitor none -serial stdio -no-reboot \
    -kernel "$cache/vmlinuz" -initrd "$cache/initramfs.cpio.gz" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 npu_timeout=$limit npu_project=$here" \
    -virtfs "local,path=/,mount_tag=hostroot,readonly=on,security_model=none,multidevs=remap,id=hostroot" \
    -virtfs "local,path=$job,mount_tag=job,security_model=none,id=job" \
    -virtfs "local,path=$here,mount_tag=project,readonly=on,security_model=none,multidevs=remap,id=project" </dev/null &
  qemu_pid=$!
  wait "$qemu_pid"
  local q=$?
  qemu_pid=
  if [ ! -f "$job/status" ]; then
    log "the guest ended without a result (qemu status $q$([ $q = 124 ] && echo ', killed after the time limit'))"
    return 124
  fi
  return "$(cat "$job/status")"
}

# The job script's gadget part: configfs gadget with one FunctionFS function, the device
# program, bind to the dummy UDC. FunctionFS reads the descriptors the program writes to ep0.
gadget_script() {
  local gadget=$1
  cat <<EOF
g=/sys/kernel/config/usb_gadget/npu
mkdir -p \$g/strings/0x409 \$g/configs/c.1/strings/0x409 \$g/functions/ffs.npu || exit 90
echo 0x$vid >\$g/idVendor; echo 0x$pid >\$g/idProduct; echo 0x0100 >\$g/bcdDevice
echo 0x0200 >\$g/bcdUSB
echo npu-stack >\$g/strings/0x409/manufacturer
echo "npu-stack simulated NPU" >\$g/strings/0x409/product
echo $serial >\$g/strings/0x409/serialnumber
echo "NPU" >\$g/configs/c.1/strings/0x409/configuration
echo 250 >\$g/configs/c.1/MaxPower
ln -s \$g/functions/ffs.npu \$g/configs/c.1/
mkdir -p /dev/ffs-npu && mount -t functionfs npu /dev/ffs-npu || exit 91
$gadget --ffs /dev/ffs-npu &
gadget_pid=\$!
for i in \$(seq 200); do [ -e /dev/ffs-npu/ep3 ] && break; sleep 0.05; done
[ -e /dev/ffs-npu/ep3 ] || { echo "usb-vm: npu-usb-gadget did not write its descriptors"; exit 92; }
echo dummy_udc.0 >\$g/UDC || exit 93
for i in \$(seq 200); do grep -qs $pid /sys/bus/usb/devices/*/idProduct && break; sleep 0.05; done
export NPU_USB_UDC_FILE=\$g/UDC NPU_USB_UDC=dummy_udc.0 NPU_USB_DEVICE=$vid:$pid:$serial
EOF
}

run_job() {
  local mode=$1 limit=$2 gadget=$3
  shift 3
  command -v qemu-system-x86_64 >/dev/null || cannot_run "qemu-system-x86_64 not found (scripts/setup.sh installs qemu-system-x86)"
  prepare || cannot_run "cannot prepare the guest kernel and initramfs"
  job=$(mktemp -d /tmp/npu-usb-vm.XXXXXX) || exit 1
  trap 'rm -rf "$job"' EXIT
  # Stopped from outside (meson's timeout, Ctrl-C): stop the guest too, then clean up.
  trap '[ -n "${qemu_pid:-}" ] && kill "$qemu_pid" 2>/dev/null; exit 143' TERM INT
  {
    echo 'set -u'
    echo ': >/tmp/job/started'
    echo "cd $(printf %q "$PWD") 2>/dev/null || cd /"
    [ "$mode" = gadget ] && gadget_script "$gadget"
    printf '%q ' "$@"
    echo
    echo 'status=$?'
    [ "$mode" = gadget ] && echo 'kill $gadget_pid 2>/dev/null; wait $gadget_pid 2>/dev/null'
    echo 'exit $status'
  } >"$job/run.sh"
  boot "$job" "$limit"
  local status=$?
  # A guest that died before it started the job (a kernel oops at boot under TCG, seen once in
  # many boots) is the emulator's failure, not the command's: boot once more. A job that started
  # and then hung or crashed is reported as it is.
  if [ ! -f "$job/started" ] && [ ! -f "$job/status" ]; then
    log "the guest did not start the job (a boot failure); booting it once more"
    boot "$job" "$limit"
    status=$?
  fi
  return "$status"
}

parse_and_run() {
  local mode=$1
  shift
  local limit=240 gadget="$here/build/firmware/platform/usb_gadget/npu-usb-gadget"
  while [ $# -gt 0 ]; do
    case $1 in
      --timeout) limit=$2; shift 2 ;;
      --gadget) gadget=$2; shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  [ $# -gt 0 ] || { log "no command given"; exit 2; }
  if [ "$mode" = gadget ] && [ ! -x "$gadget" ]; then
    log "device program $gadget not built"; exit 1
  fi
  run_job "$mode" "$limit" "$gadget" "$@"
}

case ${1:-} in
  prepare) prepare ;;
  run) shift; parse_and_run plain "$@" ;;
  gadget-run) shift; parse_and_run gadget "$@" ;;
  test)
    shift
    skip_code=77
    [ $# -gt 0 ] || { log "test: no test binary given"; exit 2; }
    gadget=${NPU_USB_GADGET:-$here/build/firmware/platform/usb_gadget/npu-usb-gadget}
    parse_and_run gadget --timeout "${NPU_USB_VM_TIMEOUT:-200}" --gadget "$gadget" -- "$@" --use-colour no
    ;;
  vm-test)
    shift
    skip_code=77
    [ $# -gt 0 ] || { log "vm-test: no test binary given"; exit 2; }
    parse_and_run plain --timeout "${NPU_USB_VM_TIMEOUT:-200}" -- "$@" --use-colour no
    ;;
  *)
    sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
