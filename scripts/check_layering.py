#!/usr/bin/env python3
"""Enforces the dependency rules of docs/architecture.md at configure time.

Each folder may name only the project _dep objects, and include only the project headers, of
the folders it is allowed to use. meson runs this script from the root meson.build, so a
violation stops the build with a message naming the file, the line and the rule.
"""
import pathlib
import re
import sys

# folder -> project folders it may use. Third-party libraries are not listed here.
# "base/fixedpoint" is base/'s freestanding header-only part (npu/base/fixed_point.h,
# base_fixedpoint_dep): the only part of base/ the firmware core may use.
ALLOWED = {
    "base": set(),
    "hal": {"base"},
    "protocol": {"base"},
    "hwsim": {"base/fixedpoint"},
    "cache": {"base"},
    "firmware/core": {"protocol", "hwsim/isa", "base/fixedpoint"},
    "firmware/platform": {"firmware/core", "protocol", "hwsim", "hwsim/isa", "base"},
    "reference": {"hal", "base"},
    "shim": {"hal", "protocol", "cache", "base"},
    "framework": {"hal", "base"},
    # tools/ is the composition root: it wires the in-process firmware (loopback) to the shim.
    "tools": {"hal", "framework", "shim", "reference", "protocol", "firmware/platform", "firmware/core", "hwsim", "hwsim/isa", "cache", "base"},
}

# project _dep object -> the folder that defines it
DEPS = {
    "base_dep": "base",
    "base_fixedpoint_dep": "base/fixedpoint",
    "hal_dep": "hal",
    "protocol_dep": "protocol",
    "protocol_fw_dep": "protocol",
    "hwsim_dep": "hwsim",
    "hwsim_isa_dep": "hwsim/isa",
    "cache_dep": "cache",
    "firmware_core_dep": "firmware/core",
    "firmware_host_dep": "firmware/platform",
    "reference_dep": "reference",
    "shim_dep": "shim",
    "framework_dep": "framework",
}

# include prefix -> folder
INCLUDES = [
    (re.compile(r'#\s*include\s*[<"]npu/base/fixed_point\.h'), "base/fixedpoint"),
    (re.compile(r'#\s*include\s*[<"]npu/base/'), "base"),
    (re.compile(r'#\s*include\s*[<"]npu/hal/'), "hal"),
    (re.compile(r'#\s*include\s*[<"]npu/protocol/'), "protocol"),
    (re.compile(r'#\s*include\s*[<"]npu\.(pb|npb)\.h'), "protocol"),
    (re.compile(r'#\s*include\s*[<"](npu/)?hwsim/isa/'), "hwsim/isa"),
    (re.compile(r'#\s*include\s*[<"]npu/hwsim/'), "hwsim"),
    (re.compile(r'#\s*include\s*[<"]npu/cache/'), "cache"),
    (re.compile(r'#\s*include\s*[<"]npu/fw/platform/'), "firmware/platform"),
    (re.compile(r'#\s*include\s*[<"]npu/fw/'), "firmware/core"),
    (re.compile(r'#\s*include\s*[<"]npu/ref/'), "reference"),
    (re.compile(r'#\s*include\s*[<"]npu/shim/'), "shim"),
    (re.compile(r'#\s*include\s*[<"]npu/framework/'), "framework"),
]

SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".c", ".inc"}

# Folders that run on the device with no operating system: they may include no OS header
# (system calls, files, threads, streams). The firmware core gets its memory and its hardware
# from the platform interface instead.
FREESTANDING = {"firmware/core"}
OS_HEADER = re.compile(
    r"#\s*include\s*<((sys|linux|asm|arpa|netinet)/[\w./]+|"
    r"(unistd|fcntl|poll|signal|dlfcn|pthread|errno|termios|syslog|windows|libusb-1\.0/libusb)\.h|"
    r"thread|mutex|shared_mutex|condition_variable|future|filesystem|fstream|iostream|csignal)>"
)


def owner(rel: pathlib.PurePosixPath) -> str | None:
    s = str(rel)
    for folder in sorted(ALLOWED, key=len, reverse=True):
        if s == folder or s.startswith(folder + "/"):
            return folder
    return None


def allowed(folder: str, target: str) -> bool:
    if target == folder or target.startswith(folder + "/") or folder.startswith(target + "/"):
        return True
    # Who may use a folder may use its parts (base/ includes base/fixedpoint).
    return any(target == a or target.startswith(a + "/") for a in ALLOWED[folder])


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    errors = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = pathlib.PurePosixPath(path.relative_to(root).as_posix())
        if rel.parts[0].startswith("build") or rel.parts[0] in {"third_party", ".git", "tests"}:
            continue
        folder = owner(rel)
        if folder is None:
            continue
        if path.name == "meson.build":
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                code = line.split("#", 1)[0]
                for dep in re.findall(r"\b(\w+_dep)\b", code):
                    target = DEPS.get(dep)
                    if target and not allowed(folder, target) and not re.search(rf"\b{dep}\s*=", code):
                        errors.append(f"{rel}:{n}: {folder}/ may not use {dep} ({target}/); allowed: {sorted(ALLOWED[folder]) or 'nothing in the project'}")
        elif path.suffix in SOURCE_SUFFIXES:
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if folder in FREESTANDING and OS_HEADER.search(line):
                    errors.append(f"{rel}:{n}: {folder}/ is freestanding and may not include an OS header: {line.strip()}")
                for rx, target in INCLUDES:
                    if rx.search(line):
                        if not allowed(folder, target):
                            errors.append(f"{rel}:{n}: {folder}/ may not include {target}/ headers: {line.strip()}")
                        break
    for e in errors:
        print("layering violation: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
