#!/usr/bin/env bash
# Builds recbot's libFuzzer targets and runs each from the seed corpus in Tests/Fuzz/corpus/<name>.
#   ./dev/fuzz.sh                          every target, 60 s each, one per core at a time (CI: debug build with AddressSanitizer)
#   ./dev/fuzz.sh 300 sdp                  only the SDP target, 5 minutes
#   ./dev/fuzz.sh --long --runs 10000000   every target to 10 million executions
# --long builds optimized and without AddressSanitizer (RECBOT_FUZZ_SANITIZERS=fuzzer): Swift's own
# bounds and overflow checks still trap, and a long run gets about 3-10x the executions per second.
# --runs N stops each target after N executions instead of after SECONDS.
# Exits non-zero when a target crashes; the reproducer lands in fuzz-artifacts/.
# Replay a reproducer without libFuzzer: swift run FuzzSDP fuzz-artifacts/sdp-crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

long=0; runs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --long) long=1; shift ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
seconds="${1:-60}"
only="${2:-}"
targets=(stun:FuzzSTUN turn:FuzzTURN sdp:FuzzSDP rtp:FuzzRTP av1:FuzzAV1 sctp:FuzzSCTP sctp-reassembly:FuzzSCTPReassembly media-receiver:FuzzMediaReceiver vp9:FuzzVP9 verify:FuzzVerify signaling:FuzzSignaling depacketizers:FuzzDepacketizers repair:FuzzRepair srtp:FuzzSRTP service:FuzzServiceInputs)
export RECBOT_FUZZ=1  # Package.swift then instruments the parsers and links libFuzzer
if [ "$long" = 1 ]; then
  scratch=.build-fuzz-long; build=(-c release); export RECBOT_FUZZ_SANITIZERS=fuzzer
else
  scratch=.build-fuzz; build=()
fi
limit=(-max_total_time="$seconds")
[ -n "$runs" ] && limit=(-runs="$runs")
# repair and verify write each input to a file: keep that off the disk.
[ -d /dev/shm ] && export TMPDIR=/dev/shm

mkdir -p fuzz-artifacts
for entry in "${targets[@]}"; do
  name=${entry%%:*}; product=${entry#*:}
  [ -n "$only" ] && [ "$only" != "$name" ] && continue
  swift build "${build[@]}" --scratch-path "$scratch" --product "$product" >/dev/null
done
bin=$(swift build "${build[@]}" --scratch-path "$scratch" --show-bin-path)

# One target per core at a time: each still gets its SECONDS of a whole core, and CI's fuzz
# phase takes half the wall time on two cores. RECBOT_FUZZ_JOBS overrides the count.
jobs=${RECBOT_FUZZ_JOBS:-$(nproc)}
fuzz_one() {
  local name=$1 product=$2 work="$scratch/corpus/$1" started=$SECONDS   # corpus grows; the seeds in Tests/ stay
  mkdir -p "$work"
  if ! "$bin/$product" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="fuzz-artifacts/$name-" -print_final_stats=1 "$work" "Tests/Fuzz/corpus/$name" \
      > "$scratch/fuzz-$name.log" 2>&1; then
    { echo "fuzz: $name FAILED"; tail -40 "$scratch/fuzz-$name.log"; } > "$scratch/fuzz-$name.summary"
    return 1
  fi
  { grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$scratch/fuzz-$name.log" | sed "s/^/fuzz: $name /"
    echo "fuzz: $name wall_seconds: $((SECONDS - started))"; } > "$scratch/fuzz-$name.summary"
}

status=0; running=0; names=()
for entry in "${targets[@]}"; do
  name=${entry%%:*}; product=${entry#*:}
  [ -n "$only" ] && [ "$only" != "$name" ] && continue
  if [ -n "$runs" ]; then echo "fuzz: $name for $runs runs"; else echo "fuzz: $name for ${seconds}s"; fi
  if [ "$running" -ge "$jobs" ]; then wait -n || status=1; running=$((running - 1)); fi
  fuzz_one "$name" "$product" & running=$((running + 1)); names+=("$name")
done
while [ "$running" -gt 0 ]; do wait -n || status=1; running=$((running - 1)); done
for name in "${names[@]}"; do cat "$scratch/fuzz-$name.summary"; done
exit $status
