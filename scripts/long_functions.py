#!/usr/bin/env python3
"""Lists the functions of the product code longer than a limit (default 80 lines).

A brace counter, not a parser: it strips comments, strings and character literals, tracks the
braces of namespaces, classes and functions, and takes a `{` that follows a `)` (possibly with
const / noexcept / override / a trailing return type / a constructor's initializer list) outside
any function as the start of a function body. Good enough for this tree's formatting.

A function that is long for a reason (a data table, say) is exempted by a comment in the lines
just above it that gives the reason: `// long-function: a data table, one row per operation`.
A marker without a reason does not count. `--all` lists the exempted ones too, with the reason.
Usage: scripts/long_functions.py [--limit N] [--all] [PATH...]   (default: the product folders)
"""
import argparse
import pathlib
import re
import sys

PRODUCT = ["base", "hal", "protocol", "cache", "firmware", "hwsim", "reference", "shim", "framework", "tools"]
SUFFIXES = {".cpp", ".cc", ".h", ".hpp"}
CONTROL = re.compile(r"\b(if|for|while|switch|catch|return)\s*\($")
MARKER = re.compile(r"//\s*long-function:\s*(\S.*)$")
MARKER_REACH = 6  # how many lines above a function's first line the marker may stand


def exemption(lines: list[str], first: int) -> str | None:
    """The reason given by a `// long-function: REASON` comment just above line `first` (1-based)."""
    for raw in reversed(lines[max(0, first - 1 - MARKER_REACH) : first - 1]):
        m = MARKER.search(raw)
        if m:
            return m.group(1).strip()
        stripped = raw.strip()
        if stripped and not stripped.startswith("//") and not stripped.startswith("template"):
            return None  # the comment must belong to this function, not to the one before
    return None


def strip(text: str) -> str:
    """Blanks comments and string / char literals, keeping newlines."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and i > 0 and text[i - 1].isalnum() and text[i + 1 : i + 2].isalnum():
            out.append(c)  # a digit separator: 20'000
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path: pathlib.Path):
    text = strip(path.read_text(errors="replace"))
    stack = []  # per open brace: True when it opens a function body
    start = None
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            in_function = any(stack)
            head = text[max(0, i - 400):i]
            head = re.sub(r"\s+", " ", head).rstrip()
            is_function = False
            if not in_function:
                # strip trailing qualifiers and initializer lists back to the parameter list
                h = re.sub(r"(\s*(\bconst|\bnoexcept|\boverride|\bfinal|\bmutable|&&|&))*$", "", head)
                h = re.sub(r"->\s*[\w:<>,\s*&]+$", "", h)
                if h.endswith(")") and not CONTROL.search(h[: h.rfind("(") + 1] if "(" in h else ""):
                    is_function = True
                elif re.search(r"\)\s*:\s*[\w:]+[({].*[)}]$", head):  # constructor initializer list
                    is_function = True
            if is_function:
                m = re.search(r"([~\w:]+(?:<[^<>]*>)?(?:operator\S*)?)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)[^()]*$", head)
                name = m.group(1) if m else "?"
                start = (line, name)
            stack.append(is_function)
        elif c == "}":
            if stack and stack.pop() and start:
                yield start[1], start[0], line - start[0] + 1
                start = None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--all", action="store_true", help="also list the functions exempted by a marker")
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    paths = [pathlib.Path(p) for p in args.paths] or [root / p for p in PRODUCT]
    rows = []
    for base in paths:
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.suffix in SUFFIXES)
        for f in files:
            lines = f.read_text(errors="replace").splitlines()
            for name, first, length in functions(f):
                if length <= args.limit:
                    continue
                reason = exemption(lines, first)
                if reason is None or args.all:
                    where = f"{f.relative_to(root) if f.is_absolute() else f}:{first}"
                    rows.append((length, where, name + (f"  (exempt: {reason})" if reason else "")))
    for length, where, name in sorted(rows, reverse=True):
        print(f"{length:5d}  {where}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
