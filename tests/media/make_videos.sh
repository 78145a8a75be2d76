#!/bin/sh
# make_videos.sh -- the two test videos of the streaming benchmarks, made with ffmpeg.
#   tests/media/make_videos.sh [DIR] [SECONDS]      (default DIR build/media, 60 s)
# mpeg2_15M.ts: MPEG-2 video + MP2 audio in MPEG-TS at 15 Mbit/s.
# h264_40M.ts:  H.264 video + AAC audio in MPEG-TS at 40 Mbit/s.
# Both from testsrc2 and a sine tone, at a bitrate as constant as ffmpeg allows: minrate =
# maxrate = bitrate with a one-second VBV buffer, and the TS muxer padding to the mux rate
# (muxrate), so that N seconds of stream are N x bitrate bytes and lors_play / lns_paced can
# pace them by size.  Not part of `make test` (ffmpeg is a benchmark-only package).
set -eu
dir=${1:-build/media}
secs=${2:-60}
command -v ffmpeg >/dev/null 2>&1 || {
    echo "make_videos: ffmpeg is not installed (scripts/install-deps.sh --bench)" >&2
    exit 1
}
mkdir -p "$dir"

# make NAME VIDEO-CODEC-ARGS TOTAL-BITRATE(bit/s) VIDEO-BITRATE AUDIO-CODEC-ARGS
make() {
    out="$dir/$1"
    if [ -s "$out" ]; then
        echo "make_videos: $out exists"
        return
    fi
    ffmpeg -hide_banner -loglevel error -y \
        -f lavfi -i "testsrc2=size=1920x1080:rate=25" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000" \
        -t "$secs" $2 -b:v "$4" -minrate "$4" -maxrate "$4" -bufsize "$4" \
        $5 -f mpegts -muxrate "$3" "$out.tmp"
    mv "$out.tmp" "$out"
    size=$(stat -c %s "$out")
    echo "make_videos: $out: $size bytes, $(awk "BEGIN{printf \"%.2f\", $size * 8 / $secs / 1e6}") Mbit/s over $secs s"
}

make mpeg2_15M.ts "-c:v mpeg2video -g 12 -bf 2" 15000000 14000000 "-c:a mp2 -b:a 192k"
make h264_40M.ts "-c:v libx264 -preset veryfast -x264-params nal-hrd=cbr" 40000000 38000000 \
    "-c:a aac -b:a 192k"
