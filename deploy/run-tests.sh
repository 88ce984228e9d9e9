#!/usr/bin/env bash
# The README's second command: installs what the tests need, then builds and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
swift build --build-tests
swift test --skip-build "$@"
