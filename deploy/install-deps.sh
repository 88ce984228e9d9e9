#!/usr/bin/env bash
# Installs every system and Python package recbot needs to build, run and test,
# on a fresh Debian 12 machine. Idempotent: re-running only installs what is missing.
#   --demo  only what deploy/demo.sh needs (the build's libraries and the test server's
#           Python packages): a first run is not kept waiting for PostgreSQL, GStreamer,
#           coturn or the S3 server, which only the tests use (./dev/run-tests.sh adds them).
set -euo pipefail
demo_only=false
if [ "${1:-}" = "--demo" ]; then demo_only=true; fi

# Build and link: the WebRTC stack's crypto (OpenSSL, libsrtp2), zlib (STUN CRC-32,
# compressed data channels), the decoders `recbot verify` uses (libvpx, libopus, dav1d for
# AV1, OpenH264 for H.264; libvpx and libopus also encode test media), libwebm's parser and SQLite.
# Tests: ffmpeg provides ffprobe, the second independent reader of our WebM files.
# GStreamer's webrtcbin (usrsctp, libnice) is the second independent WebRTC peer for the
# data-channel interop test; its Python bindings come from Debian, for /usr/bin/python3.
# GStreamer's rtpvp9depay and vp9dec (plugins-good) check the test server's VP9 packets.
# bench/gst_recorder.py, the webrtcbin baseline recorder for bench/bench.sh, speaks Sora
# signaling with the websockets package for /usr/bin/python3 (webmmux: plugins-good, opusparse: bad).
# coturn: the TURN server the relay tests record through (its service stays disabled; tests start it).
# iproute2 and nftables: as root, a relay test runs recbot in a network namespace whose firewall
# drops UDP (the rules live in that namespace only; the host's firewall is not touched).
# postgresql-15: the server the PostgreSQL catalog tests start (a throwaway cluster each; the
# packaged cluster is not used).
# chromium and janus: real libwebrtc publishers (headless Chromium) in a real SFU (Janus's
# VideoRoom) behind the Sora-signaling front Tests/Peers/sora_janus_server.py (the packaged
# Janus service is not used: the tests start a private one).
DEBIAN_PACKAGES=(
  pkg-config
  libssl-dev
  libsrtp2-dev
  libopus-dev
  libvpx-dev
  libdav1d-dev
  libopenh264-dev
  libwebm-dev
  libyuv-dev
  libsqlite3-dev
  zlib1g-dev
  ffmpeg
  gstreamer1.0-plugins-base
  gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad
  gstreamer1.0-nice
  gir1.2-gstreamer-1.0
  gir1.2-gst-plugins-base-1.0
  gir1.2-gst-plugins-bad-1.0
  gir1.2-nice-0.1
  python3-gi
  python3-websockets
  coturn
  iproute2
  nftables
  postgresql-15
  chromium
  janus
)

# What the demo needs: building recbot (its -dev libraries) and nothing the tests alone use.
DEMO_DEBIAN_PACKAGES=(pkg-config libssl-dev libsrtp2-dev libopus-dev libvpx-dev libdav1d-dev libopenh264-dev libwebm-dev libyuv-dev libsqlite3-dev zlib1g-dev)
DEMO_PYTHON_PACKAGES="aiortc av websockets"
if $demo_only; then DEBIAN_PACKAGES=("${DEMO_DEBIAN_PACKAGES[@]}"); fi

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all Debian packages present"
fi
# The tests start a private Janus of their own; the packaged service would hold its ports.
if ! $demo_only && [ -d /run/systemd/system ] && systemctl is-enabled --quiet janus 2>/dev/null; then
  ${SUDO:-$([ "$(id -u)" -ne 0 ] && echo sudo)} systemctl disable --now janus
fi

# PyPI: independent WebRTC peers for the interop tests (pinned in Tests/PythonSupport/requirements.txt).
here="$(cd "$(dirname "$0")/.." && pwd)"
requirements="$here/Tests/PythonSupport/requirements.txt"
if [ -f "$requirements" ]; then
  if $demo_only; then
    # The pinned lines of the demo's packages only.
    selected="$(mktemp)"
    grep -E "^($(echo $DEMO_PYTHON_PACKAGES | tr ' ' '|'))==" "$requirements" > "$selected"
    requirements="$selected"
  fi
  echo "install-deps: Python packages from Tests/PythonSupport/requirements.txt"
  python3 -m pip install --disable-pip-version-check --quiet --root-user-action=ignore -r "$requirements"
fi
