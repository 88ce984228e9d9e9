#!/usr/bin/env bash
# Side-by-side capacity benchmark (issue 13): recbot and a GStreamer webrtcbin remux recorder,
# each fed the same synthetic channel by recbot-loadgen, for each publisher count.
#   bench/bench.sh [--publishers 32,64,128,256,512] [--duration 30] [--no-gstreamer] [--no-extend]
#                   [--recbot PATH --loadgen PATH --floor PATH] [--loss PERCENT] [--burst-loss PERCENT:BURST] [--jitter-ms N] [--faults N]
#   bench/bench.sh --relay 16,32 [--duration 20]     the TURN relay's cost instead (coturn, UDP and TCP)
#   bench/bench.sh --soak 60m [--publishers 64]      one recbot for an hour: RSS, fds, files, catalog, metrics (soak.py)
#   bench/bench.sh --big-file [--gib 4.1]            one 40 Mbit/s publisher past 4 GiB, killed, repaired, verified, uploaded (bigfile.py)
#   bench/bench.sh --overload [--publishers 256]     past capacity: a CPU quota of 1/2 and 1/4 of the need, then lifted; a 4 MiB rmem_max (overload.py)
# Builds both release binaries unless given, then runs bench/bench.py (see its docstring
# for what each column means) and prints one table.
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
need_build=1
for a in "${args[@]}"; do [ "$a" = "--recbot" ] && need_build=0; done
if [ "$need_build" = 1 ]; then
  swift build -c release --product recbot >/dev/null
  swift build -c release --product recbot-loadgen >/dev/null
  swift build -c release --product recbot-floor >/dev/null
  bin="$(swift build -c release --show-bin-path)"
  args=(--recbot "$bin/recbot" --loadgen "$bin/recbot-loadgen" --floor "$bin/recbot-floor" "${args[@]}")
fi
# --soak DURATION (1h, 30m, 90s) runs bench/soak.py instead, with the same binaries.
soak=""
big_file=""
overload=""
rest=()
floor_args=()
while [ ${#args[@]} -gt 0 ]; do
  case "${args[0]}" in
    --soak) soak="${args[1]}"; args=("${args[@]:2}") ;;
    --big-file) big_file=1; args=("${args[@]:1}") ;;
    --overload) overload=1; args=("${args[@]:1}") ;;
    --floor) floor_args=(--floor "${args[1]}"); args=("${args[@]:2}") ;;  # bench.py's, not soak.py's
    *) rest+=("${args[0]}"); args=("${args[@]:1}") ;;
  esac
done
if [ -n "$soak" ]; then
  case "$soak" in
    *h) seconds=$(( ${soak%h} * 3600 )) ;; *m) seconds=$(( ${soak%m} * 60 )) ;; *s) seconds=${soak%s} ;; *) seconds=$soak ;;
  esac
  exec /usr/bin/python3 bench/soak.py --duration "$seconds" "${rest[@]}"
fi
if [ -n "$overload" ]; then
  exec /usr/bin/python3 bench/overload.py "${rest[@]}"
fi
if [ -n "$big_file" ]; then
  exec /usr/bin/python3 bench/bigfile.py "${rest[@]}"
fi
exec /usr/bin/python3 bench/bench.py "${rest[@]}" ${floor_args[@]+"${floor_args[@]}"}
