#!/usr/bin/env bash
# The README's first command: sets up a fresh Debian 12 machine, builds recbot, starts the
# bundled Sora-compatible test server with four synthetic publishers (VP8, VP9, AV1 and H.264,
# each with Opus) on 127.0.0.1, records its channel with `recbot join` for about 15 s in
# whole files and 5 s split parts, with Sora's webhooks going to a local receiver and the chat
# exported as WebVTT; decodes every file with `recbot verify`, lists what was recorded and
# shows the captions. Extra arguments go to every recbot command (e.g. --data-dir DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh --demo
# A debug build, the one ./dev/run-tests.sh builds on: the demo is ready in minutes and the
# tests after it reuse every module. For production, build with -c release (README).
swift build --product recbot
bin=$(swift build --show-bin-path)

work=$(mktemp -d)
trap 'kill "$server" "$receiver" 2>/dev/null || true; rm -rf "$work"' EXIT
# The test server sends a chat message on #chat 6 s into the session; a local receiver takes the webhooks.
python3 Tests/Peers/sora_test_server.py --publisher vp8 --publisher vp9 --publisher av1 --publisher h264 --late-chat 6 \
  > "$work/server.out" 2> "$work/server.log" &
server=$!
hook_port=$(python3 dev/ports.py)
python3 Tests/Peers/webhook_receiver.py --port "$hook_port" --log "$work/webhooks.jsonl" > /dev/null 2>&1 &
receiver=$!
for _ in $(seq 1 100); do [ -s "$work/server.out" ] && break; sleep 0.1; done
url=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["url"])' "$work/server.out")

echo "== recbot join --channel sora --url $url --duration ${DEMO_DURATION:-15s} --split-duration 5 --webhook-url … --data-channel '#chat' --export"
"$bin/recbot" join --channel sora --url "$url" --duration "${DEMO_DURATION:-15s}" --allow-address 127.0.0.1/32 \
  --split-duration 5 --webhook-url "http://127.0.0.1:$hook_port/hook" \
  --data-channel-signaling --ignore-disconnect-websocket --data-channel '#chat' --export "$@"
echo
echo "== the webhooks the receiver got"
python3 -c 'import collections,json,sys; c=collections.Counter(json.loads(json.loads(l)["body"])["type"] for l in open(sys.argv[1])); [print(f"  {n:3} {t}") for t, n in c.items()]' "$work/webhooks.jsonl"
echo
echo "== recbot sessions list"
"$bin/recbot" sessions list "$@"
echo
echo "== recbot verify --pending"
"$bin/recbot" verify --pending "$@"
echo
echo "== recbot recordings list"
"$bin/recbot" recordings list "$@"
echo
echo "== the chat, as WebVTT captions over the first sender's whole-file recording"
session=$("$bin/recbot" sessions list --json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
directory=$("$bin/recbot" sessions show "$session" --json "$@" | python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin)["recordings"] if x["part"] == 0]; print(r[0]["path"].rsplit("/", 1)[0])')
cat "$(ls "$directory"/archive-*.messages.vtt | head -1)"
echo
echo "== recbot compose $session: the session as one WebM (a grid of the senders, their audio mixed)"
"$bin/recbot" compose "$session" "$@"
echo
echo "== to browse, search and play the archive in a browser:"
echo "   $bin/recbot serve --capacity 0 $*"
echo "   then open http://127.0.0.1:8480/archive/sessions/$session"
