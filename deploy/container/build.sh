#!/usr/bin/env bash
# Builds recbot for the image: optimized, the Swift runtime linked in (the runtime stage has no
# Swift toolchain), stripped, installed under STAGING as /usr/local/bin/recbot. Run from the
# repository root. The Containerfile's build stage runs this; check.sh runs it on the host.
set -euo pipefail
staging="$1"
swift build -c release --product recbot --static-swift-stdlib --scratch-path .build-container
install -D -m 0755 "$(swift build -c release --static-swift-stdlib --scratch-path .build-container --show-bin-path)/recbot" \
  "$staging/usr/local/bin/recbot"
strip "$staging/usr/local/bin/recbot"
