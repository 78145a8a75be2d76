#!/bin/sh
# install-deps.sh -- install the Debian packages lns needs, only those that are missing.
# Idempotent: when everything is present it checks and exits without touching apt.
#   scripts/install-deps.sh           what building and `make test` need
#   scripts/install-deps.sh --bench   also the peers `make bench` measures against (aria2)
# chromium (headless) is for tests/system/test_lbone_page.c, which screenshots the L-Bone page,
# and tests/system/test_lors_serve_browser.c, which plays a video from lors_serve in it.
# mplayer, mpv and ffmpeg are the real players lors_play and its tests drive (ffmpeg also
# makes the test videos).
# libcairo2-dev draws lors_lifelines' plot; fonts-dejavu-core gives its text a font on a bare machine.
# libzstd-dev is -z's compressor; librust-blake3-dev ships BLAKE3's reference C code, which the
# Makefile builds into liblors (the default checksum).
# libfuse3-dev builds lors_mount; fuse3 (fusermount3) mounts and unmounts for it and its test.
set -eu

PKGS="build-essential pkg-config libssl-dev libsqlite3-dev libcunit1-dev libxml2-dev zlib1g-dev
libzstd-dev librust-blake3-dev libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev
libcairo2-dev fonts-dejavu-core libisal-dev libfuse3-dev fuse3
clang libclang-rt-14-dev
curl socat nginx-light procps groff-base iproute2 tk8.6 xvfb x11-apps
chromium mplayer mpv ffmpeg"
if [ "${1:-}" = "--bench" ]; then
    PKGS="$PKGS aria2"
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-deps: need root (or sudo) to install:$missing" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
