#!/usr/bin/env bash
# Installs the Debian packages listed in a file (one per line, # comments), without
# recommendations, and cleans apt's lists. The Containerfile's stages run this, and so does
# check.sh on the host, so both install exactly the same set.
set -euo pipefail
list="$1"
mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list")
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  rm -rf /var/lib/apt/lists/*
fi
