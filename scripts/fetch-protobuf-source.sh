#!/usr/bin/env bash
# Fetches Debian's protobuf source package (the one the installed protoc was built from) and
# unpacks it into DEST (default .deps/protobuf), for builds that compile libprotobuf-lite
# themselves: a clang + libc++ build cannot link Debian's libprotobuf, whose ABI is libstdc++'s
# (CMakeLists.txt, LOCKSTEP_PROTOBUF_SOURCE_DIR; docs/macos.md).
#
# `apt-get source` runs against a private list of deb-src lines for the mirrors this machine
# already uses (as `apt-get indextargets` reports them) and a private apt state under
# DEST's parent, so /etc/apt is not changed and root is not needed. The signed Release files are
# checked against the system keyring as for any apt download. About 10 MB of source indexes and
# 5 MB of source; a few seconds on the CI machine.
set -euo pipefail
cd "$(dirname "$0")/.."

DEST="${1:-.deps/protobuf}"
mkdir -p "$(dirname "$DEST")"
DEST="$(cd "$(dirname "$DEST")" && pwd)/$(basename "$DEST")"
WORK="$(dirname "$DEST")/apt-src"

# The source version of the installed protoc; the runtime built here must be the same upstream
# version, or the generated onnx.pb.cc refuses to compile.
want="$(dpkg-query -W -f='${source:Version}' protobuf-compiler 2>/dev/null || true)"
[ -n "$want" ] || { echo "fetch-protobuf-source: protobuf-compiler is not installed" >&2; exit 1; }
upstream="${want%-*}"; upstream="${upstream#*:}"
if [ -f "$DEST/.lockstep-source-version" ] && [ "$(cat "$DEST/.lockstep-source-version")" = "$want" ]; then
  echo "fetch-protobuf-source: $DEST already holds protobuf $want"
  exit 0
fi

rm -rf "$WORK" && mkdir -p "$WORK/lists/partial" "$WORK/cache/archives/partial" "$WORK/src"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
signed=""; [ -f "$keyring" ] && signed="[signed-by=$keyring] "
apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' | sort -u |
  while read -r uri release component; do
    echo "deb-src ${signed}${uri} ${release} ${component}"
  done > "$WORK/sources.list"
[ -s "$WORK/sources.list" ] || { echo "fetch-protobuf-source: apt knows no Debian mirror" >&2; exit 1; }
echo "fetch-protobuf-source: deb-src from $(awk '{print $(NF-2), $(NF-1)}' "$WORK/sources.list" | paste -sd, -)"
APT=(apt-get -q -o "Dir::Etc::SourceList=$WORK/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o "Dir::State::Lists=$WORK/lists" -o "Dir::Cache=$WORK/cache" -o APT::Sandbox::User="$(id -un)")
"${APT[@]}" update >/dev/null
# The installed version if the mirror still has it, else the mirror's (same upstream, checked below).
(cd "$WORK/src" && { "${APT[@]}" source "protobuf=$want" 2>/dev/null || "${APT[@]}" source protobuf; } | tail -1)

tree="$(find "$WORK/src" -mindepth 1 -maxdepth 1 -type d -name 'protobuf-*' | head -1)"
got="$(sed -n 's/^AC_INIT(\[[^]]*\],\[\([^]]*\)\].*/\1/p' "$tree/configure.ac")"
if [ "$got" != "$upstream" ]; then
  echo "fetch-protobuf-source: the mirror has protobuf $got, the installed protoc is $upstream" >&2
  exit 1
fi
rm -rf "$DEST" && mv "$tree" "$DEST"
echo "$want" > "$DEST/.lockstep-source-version"
rm -rf "$WORK"
echo "fetch-protobuf-source: protobuf $want in $DEST"
