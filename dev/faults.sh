#!/usr/bin/env bash
# The fault campaign: runs recbot against the bundled Sora-compatible test server under faults
# (SIGKILL at random instants, a full disk, 20 joins at once on a fresh catalog, hostile publishers,
# connections broken on purpose and a network blackout, 50 rejoins in one session, and a fleet's
# catalog, storage and jobs failing) and prints a table of what survived. Exits non-zero when a
# part fails.
#   dev/faults.sh [--recbot PATH] [--kills 50] [--short] [--seed N] [--work DIR]
#                    [--loadgen PATH] [--only kill,diskfull,concurrent,hostile,rejoin,hygiene,fleet,service,overload,real-senders] [--max-loss SECONDS]
# Without --recbot it builds one (swift build --product recbot). --short is the CI version (5 kills,
# 5 concurrent joins, 5 s hostile runs, two rejoin faults, split parts across a rejoin, an 8 s blackout as root,
# 10 forced rejoins, 20 s past the CPU capacity; no real-senders part, which needs chromium and janus and takes ~6 min). The disk-full part needs root (it mounts a tmpfs). Every
# run's logs stay in the work directory (default: a new temporary one), whose path is printed.
# The parts and their checks are described in dev/faults.py.
set -euo pipefail
cd "$(dirname "$0")/.."

recbot=""
loadgen=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --recbot) recbot="$2"; shift 2 ;;
    --recbot=*) recbot="${1#--recbot=}"; shift ;;
    --loadgen) loadgen="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ -z "$recbot" ]; then
  swift build --product recbot >/dev/null
  recbot="$(swift build --show-bin-path)/recbot"
fi
# The overload part's publishers.
if [ -z "$loadgen" ]; then
  swift build --product recbot-loadgen >/dev/null
  loadgen="$(swift build --show-bin-path)/recbot-loadgen"
fi
exec python3 dev/faults.py --recbot "$recbot" --loadgen "$loadgen" "${args[@]+"${args[@]}"}"
