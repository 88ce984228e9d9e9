#!/usr/bin/env bash
# The unprivileged user recbot runs as in the image (uid/gid 10001, no shell, no password),
# owning only its data directory.
set -euo pipefail
getent group recbot >/dev/null || groupadd --gid 10001 recbot
getent passwd recbot >/dev/null || useradd --no-create-home --uid 10001 --gid recbot --home-dir /var/lib/recbot --shell /usr/sbin/nologin recbot
install -d -m 0750 -o recbot -g recbot /var/lib/recbot
