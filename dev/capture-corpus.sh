#!/usr/bin/env bash
# Makes the corpus of real libwebrtc streams in Tests/Corpus/libwebrtc-janus: one headless
# Chromium publisher per codec, forwarded by Janus's VideoRoom (Tests/Peers/sora_janus_server.py),
# recorded by `recbot join --capture-rtp` for a few seconds. Each capture is every RTP/RTCP
# packet recbot had after SRTP, with its arrival time, and the offers. CorpusReplayTests replays
# them; dev/fuzz.sh seeds the packet parsers with them. Needs chromium and janus (Debian) and a
# built recbot. Re-run it when the senders change (a new Chromium), and commit the result.
#   dev/capture-corpus.sh [seconds]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
recbot=.build/debug/recbot
out=Tests/Corpus/libwebrtc-janus
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for codec in vp8 vp9 av1 h264; do
  extra=()
  # VP8: three simulcast layers, the middle one forwarded; VP9: L3T3_KEY needs 960x540 for three layers.
  if [ "$codec" = vp9 ]; then extra+=(--vp9-resolution 640x360); fi
  # VP8: the forwarded layer switches from r1 to r0 at 4 s (the old and new layers' keyframes of one instant).
  if [ "$codec" = vp8 ]; then extra+=(--layer-switch-after 4:r0); fi
  python3 Tests/Peers/sora_janus_server.py --chromium "$codec" --duration "$seconds" --audio-bed silence \
    "${extra[@]}" > "$work/$codec.server" 2> "$work/$codec.server.err" &
  server=$!
  for _ in $(seq 120); do grep -q listening "$work/$codec.server" 2>/dev/null && break; sleep 0.5; done
  url="$(grep -o 'ws://[^"]*' "$work/$codec.server" | head -1)"
  [ -n "$url" ] || { echo "capture-corpus: the $codec server did not start" >&2; cat "$work/$codec.server.err" >&2; kill "$server"; exit 1; }
  "$recbot" join --channel sora --url "$url" --duration "$((seconds + 30))s" --simulcast-rid r1 \
    --data-dir "$work/data-$codec" --capture-rtp "$work/$codec.pcap"
  wait "$server" || true
  cp "$work/$codec.pcap" "$out/$codec.pcap"
  cp "$work/$codec.pcap.offers.jsonl" "$out/$codec.pcap.offers.jsonl"
  echo "capture-corpus: $codec: $(stat -c %s "$out/$codec.pcap") bytes"
done
python3 dev/corpus-seeds.py
