#!/usr/bin/env bash
# Fetches nanopb's Debian source package into third_party/nanopb-src (git-ignored), once.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dest="$here/third_party/nanopb-src"
if [ -f "$dest/pb_decode.c" ] && [ -f "$dest/pb_encode.c" ] && [ -f "$dest/pb_common.c" ]; then
  echo "setup: nanopb runtime source present in third_party/nanopb-src"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/src"

# Find the machine's Debian archive URI and suite (deb822 or one-line format).
uri=""; suite=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  suite=$(awk '/^Suites:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$uri" ]; then
  line=$(grep -hE '^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?[a-z]+://[^ ]*debian[^ ]*[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | head -n1 || true)
  if [ -n "$line" ]; then
    set -- $(echo "$line" | sed -E 's/\[[^]]*\]//')
    uri=$2; suite=$3
  fi
fi
[ -n "$uri" ] && [ -n "$suite" ] || { echo "setup: cannot find the machine's Debian archive in /etc/apt to fetch nanopb's source" >&2; exit 1; }

echo "deb-src [trusted=yes] $uri $suite main" > "$work/sources.list"
aptopts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
         -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
         -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
echo "setup: fetching nanopb source package from $uri $suite (deb-src twin)"
apt-get "${aptopts[@]}" update -qq >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; echo "setup: deb-src update failed" >&2; exit 1; }
(cd "$work/src" && apt-get "${aptopts[@]}" source --download-only nanopb >"$work/source.log" 2>&1) \
  || { cat "$work/source.log" >&2; echo "setup: 'apt-get source nanopb' failed" >&2; exit 1; }
dsc=$(ls "$work/src"/nanopb_*.dsc | head -n1)
(cd "$work/src" && dpkg-source --no-check -x "$dsc" extracted >/dev/null 2>&1) \
  || { echo "setup: cannot unpack $dsc" >&2; exit 1; }
mkdir -p "$dest"
for f in pb.h pb_common.h pb_common.c pb_decode.h pb_decode.c pb_encode.h pb_encode.c LICENSE.txt; do
  cp "$work/src/extracted/$f" "$dest/"
done
echo "setup: nanopb runtime source copied to third_party/nanopb-src ($(basename "$dsc"))"
