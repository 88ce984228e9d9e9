#!/usr/bin/env bash
# The README's first command. Sets up a fresh Debian 12 machine, builds recbot, and runs
# the main job as far as it exists today: recbot-demo records a synthetic sender (VP8 test
# pattern + Opus tone) into the data directory and catalogs it; recbot then lists what is there.
# (Once `recbot join` lands, this records a bundled test server's channel instead.)
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
swift build -c release --product recbot
swift build -c release --product recbot-demo
bin=$(swift build -c release --show-bin-path)

"$bin/recbot-demo" --seconds "${DEMO_SECONDS:-5}" "$@"
echo
echo "== recbot sessions list"
"$bin/recbot" sessions list "$@"
echo
echo "== recbot recordings list"
"$bin/recbot" recordings list "$@"
