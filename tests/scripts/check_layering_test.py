#!/usr/bin/env python3
"""Tests scripts/check_layering.py on small fake trees: it passes a clean one, and fails a tree
that breaks a rule, naming the file and line. Run by meson (`meson test check_layering`)."""
import pathlib
import subprocess
import sys
import tempfile

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check_layering.py"

CLEAN = {
    "firmware/core/src/runtime.cpp": '#include <cstdint>\n#include "npu/protocol/frame.h"\n',
    "firmware/core/meson.build": "firmware_core_dep = declare_dependency(dependencies : [protocol_dep])\n",
    "shim/src/device.cpp": '#include <unistd.h>\n#include "npu/hal/types.h"\n#include "npu/cache/key.h"\n',
    "shim/meson.build": "shim_lib = library('s', dependencies : [hal_dep, protocol_dep])\n",
    "tools/npu/main.cpp": '#include "npu/fw/runtime.h"\n#include "npu/shim/device.h"\n',
    # tests/ and build*/ are not product code: anything goes there
    "tests/unit/x_test.cpp": '#include "npu/fw/runtime.h"\n#include <thread>\n',
    "build/gen.cpp": '#include "npu/shim/device.h"\n',
}


def run(files: dict[str, str]) -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = pathlib.Path(root) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        proc = subprocess.run([sys.executable, str(SCRIPT), root], capture_output=True, text=True, timeout=60)
        return proc.returncode, proc.stderr


FAILURES = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global FAILURES
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    FAILURES += 0 if ok else 1


def expect_violation(name: str, extra: dict[str, str], where: str, words: str) -> None:
    rc, err = run({**CLEAN, **extra})
    check(name, rc == 1 and where in err and words in err and err.count("layering violation") == 1, f"rc={rc} stderr={err!r}")


def main() -> int:
    rc, err = run(CLEAN)
    check("a clean tree passes", rc == 0 and err == "", f"rc={rc} stderr={err!r}")
    expect_violation(
        "firmware/core including an OS header",
        {"firmware/core/src/sched.cpp": "#include <cstdint>\n\n#include <pthread.h>\n"},
        "firmware/core/src/sched.cpp:3:",
        "may not include an OS header: #include <pthread.h>",
    )
    expect_violation(
        "firmware/core including a C++ threading header",
        {"firmware/core/include/npu/fw/queue.h": "#pragma once\n#include <mutex>\n"},
        "firmware/core/include/npu/fw/queue.h:2:",
        "#include <mutex>",
    )
    expect_violation(
        "shim including firmware/core",
        {"shim/src/loop.cpp": '#include "npu/hal/types.h"\n#include "npu/fw/runtime.h"\n'},
        "shim/src/loop.cpp:2:",
        "shim/ may not include firmware/core/ headers",
    )
    expect_violation(
        "reference naming a _dep it may not use",
        {"reference/meson.build": "ref_lib = library('r', dependencies : [hal_dep, hwsim_dep])\n"},
        "reference/meson.build:1:",
        "reference/ may not use hwsim_dep (hwsim/)",
    )
    expect_violation(
        "firmware/core including the host part of base/",
        {"firmware/core/src/quant.cpp": '#include "npu/base/fixed_point.h"\n#include "npu/base/error.h"\n'},
        "firmware/core/src/quant.cpp:2:",
        "firmware/core/ may not include base/ headers",
    )
    print(f"{FAILURES} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
