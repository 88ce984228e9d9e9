#!/usr/bin/env bash
# The README's second command: installs what the tests need, checks that every import is
# declared in Package.swift, then builds and runs every test.
# The build must print no warning from the project's own code (Sources/, Tests/): a new one
# fails the run, so the count stays at zero. Dependencies' warnings are theirs and not counted.
# `--build-only` stops after that check (CI builds first, so the fuzz and fault steps that follow
# reuse the build and its warnings are not lost to their quiet output).
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
# Every module a target imports is one it declares (Package.swift reads as the module graph).
python3 dev/check-imports.py
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
swift build --build-tests 2>&1 | tee "$log"
if grep -E "^($PWD/(Sources|Tests)/[^ ]+|macro expansion [^ ]+): warning:" "$log"; then
  echo "run-tests: the build printed warnings from the project's own code (listed above); fix them" >&2
  exit 1
fi
if [[ "${1:-}" == "--build-only" ]]; then exit 0; fi
# Swift Testing runs at most 2 × cores test cases at once (4 here). Scenario tests spend their
# time waiting on real time, off the cooperative pool (Tests/TestSupport/BlockingTest.swift), yet
# each holds one of those 4 places, so three scenarios left one place for 530 unit tests and the
# suite ended on a tail of them. The scenarios are bounded by their own executor instead.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-32}"
swift test --skip-build "$@"
