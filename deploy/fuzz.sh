#!/usr/bin/env bash
# Builds recbot's libFuzzer targets (with AddressSanitizer) and runs each for SECONDS
# (default 60), starting from the seed corpus in Tests/Fuzz/corpus/<name>.
#   ./deploy/fuzz.sh            every target, 60 s each
#   ./deploy/fuzz.sh 300 sdp    only the SDP target, 5 minutes
# Exits non-zero when a target crashes; the reproducer lands in fuzz-artifacts/.
# Replay a reproducer without libFuzzer: swift run FuzzSDP fuzz-artifacts/sdp-crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
only="${2:-}"
scratch=.build-fuzz
targets=(stun:FuzzSTUN sdp:FuzzSDP rtp:FuzzRTP av1:FuzzAV1 sctp:FuzzSCTP sctp-reassembly:FuzzSCTPReassembly media-receiver:FuzzMediaReceiver vp9:FuzzVP9 verify:FuzzVerify signaling:FuzzSignaling depacketizers:FuzzDepacketizers repair:FuzzRepair)
export RECBOT_FUZZ=1  # Package.swift then instruments the parsers and links libFuzzer

mkdir -p fuzz-artifacts
for entry in "${targets[@]}"; do
  name=${entry%%:*}; product=${entry#*:}
  [ -n "$only" ] && [ "$only" != "$name" ] && continue
  swift build --scratch-path "$scratch" --product "$product" >/dev/null
done
bin=$(swift build --scratch-path "$scratch" --show-bin-path)

status=0
for entry in "${targets[@]}"; do
  name=${entry%%:*}; product=${entry#*:}
  [ -n "$only" ] && [ "$only" != "$name" ] && continue
  work="$scratch/corpus/$name"   # grows while fuzzing; the seeds in Tests/ stay as they are
  mkdir -p "$work"
  echo "fuzz: $name for ${seconds}s"
  if ! "$bin/$product" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="fuzz-artifacts/$name-" -print_final_stats=1 "$work" "Tests/Fuzz/corpus/$name" \
      > "$scratch/fuzz-$name.log" 2>&1; then
    echo "fuzz: $name FAILED"; tail -40 "$scratch/fuzz-$name.log"; status=1
  else
    grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$scratch/fuzz-$name.log" | sed "s/^/fuzz: $name /"
  fi
done
exit $status
