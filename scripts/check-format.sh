#!/usr/bin/env bash
# Checks that every tracked C and C++ source is formatted with the project's .clang-format
# (Debian's clang-format, installed by setup.sh). Lists the files that differ and exits 1.
# Fix with: scripts/check-format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' | grep -v '^third_party/')
if [ "${1:-}" = "--fix" ]; then
    clang-format -i "${files[@]}"
    exit 0
fi
# One clang-format run over every file; each difference is reported as "FILE:LINE:COL: error".
mapfile -t bad < <(clang-format --dry-run -Werror "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error.*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
    printf 'check-format: not formatted with .clang-format: %s\n' "${bad[@]}" >&2
    echo "check-format: ${#bad[@]} of ${#files[@]} files differ; run scripts/check-format.sh --fix" >&2
    exit 1
fi
echo "check-format: ${#files[@]} files formatted"
