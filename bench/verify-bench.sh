#!/usr/bin/env bash
# How fast `recbot verify` reads and decodes a recording, on one core, against real time and
# against ffmpeg decoding the same file on the same core in the same run (the baseline).
#   bench/verify-bench.sh [--recbot PATH] [--seconds 60] [--size 640x360] [--fps 30] [--codec vp8|vp9|av1|h264]
# Makes a clip with ffmpeg (video + Opus), runs `recbot verify --json` and `ffmpeg -threads 1 -f null`
# pinned to CPU 0, and prints media seconds, CPU seconds, × real time, and recbot/ffmpeg CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

recbot="" seconds=60 size=640x360 fps=30 codec=vp8
while [ $# -gt 0 ]; do
  case "$1" in
    --recbot) recbot="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --fps) fps="$2"; shift 2 ;;
    --codec) codec="$2"; shift 2 ;;
    *) echo "verify-bench: unknown option $1" >&2; exit 64 ;;
  esac
done
if [ -z "$recbot" ]; then
  swift build -c release --product recbot >/dev/null
  recbot="$(swift build -c release --show-bin-path)/recbot"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
case "$codec" in
  vp8) encode=(-c:v libvpx -deadline realtime -cpu-used 8 -b:v 1M) container=webm ;;
  vp9) encode=(-c:v libvpx-vp9 -deadline realtime -cpu-used 8 -row-mt 0 -b:v 800k) container=webm ;;
  av1) encode=(-c:v libaom-av1 -usage realtime -cpu-used 8 -b:v 600k) container=webm ;;
  h264) encode=(-c:v libx264 -preset veryfast -profile:v baseline -bf 0 -b:v 1M -bsf:v h264_mp4toannexb) container=mkv ;;
  *) echo "verify-bench: unknown codec $codec" >&2; exit 64 ;;
esac
clip="$work/clip.$container"
ffmpeg -v error -f lavfi -i "testsrc2=size=$size:rate=$fps" -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$seconds" \
  "${encode[@]}" -g $((fps * 2)) -pix_fmt yuv420p -c:a libopus -b:a 48k "$clip"

# CPU seconds (user+sys) of a command pinned to CPU 0.
cpu() { /usr/bin/env time -f "%U %S" -o "$work/time" taskset -c 0 "$@" > "$work/out" 2>/dev/null || true; tail -1 "$work/time" | awk '{print $1 + $2}'; }

recbot_cpu=$(cpu "$recbot" verify "$clip" --json --data-dir "$work/data")
frames=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]['report']; print(' '.join(f\"{t['codec_id']}:{t['frames']}/{t['decoded']}/{t['decode_errors']}\" for t in r['tracks']))" "$work/out")
ffmpeg_cpu=$(cpu ffmpeg -v error -threads 1 -i "$clip" -f null -)
python3 - "$seconds" "$recbot_cpu" "$ffmpeg_cpu" "$codec" "$size" "$fps" "$frames" <<'PY'
import sys
seconds, recbot, ffmpeg = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"clip: {sys.argv[4]} {sys.argv[5]}@{sys.argv[6]} + Opus, {seconds:.0f} s; tracks frames/decoded/errors: {sys.argv[7]}")
print(f"{'decoder':<16}{'CPU s':>8}{'x real time':>13}")
print(f"{'recbot verify':<16}{recbot:>8.2f}{seconds / max(recbot, 1e-9):>13.1f}")
print(f"{'ffmpeg (base)':<16}{ffmpeg:>8.2f}{seconds / max(ffmpeg, 1e-9):>13.1f}")
print(f"recbot / ffmpeg CPU: {recbot / max(ffmpeg, 1e-9):.2f}")
PY
