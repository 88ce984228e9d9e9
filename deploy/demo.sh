#!/usr/bin/env bash
# The README's first command: sets up a fresh Debian 12 machine, builds recbot, starts the
# bundled Sora-compatible test server with four synthetic publishers (VP8, VP9, AV1 and H.264,
# each with Opus) on 127.0.0.1, records its channel with `recbot join` for about 15 s, decodes
# every file with `recbot verify`, then lists what was recorded. Extra arguments go to every
# recbot command (e.g. --data-dir DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
# A debug build, the one ./dev/run-tests.sh builds on: the demo is ready in minutes and the
# tests after it reuse every module. For production, build with -c release (README).
swift build --product recbot
bin=$(swift build --show-bin-path)

work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
python3 Tests/Peers/sora_test_server.py --publisher vp8 --publisher vp9 --publisher av1 --publisher h264 > "$work/server.out" 2> "$work/server.log" &
server=$!
for _ in $(seq 1 100); do [ -s "$work/server.out" ] && break; sleep 0.1; done
url=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["url"])' "$work/server.out")

echo "== recbot join --channel sora --url $url --duration ${DEMO_DURATION:-15s}"
"$bin/recbot" join --channel sora --url "$url" --duration "${DEMO_DURATION:-15s}" --allow-address 127.0.0.1/32 "$@"
echo
echo "== recbot sessions list"
"$bin/recbot" sessions list "$@"
echo
echo "== recbot verify --pending"
"$bin/recbot" verify --pending "$@"
echo
echo "== recbot recordings list"
"$bin/recbot" recordings list "$@"
