#!/usr/bin/env bash
# Checks the container image's recipe on a host without a container runtime, by running the
# Containerfile's own steps here, and validates the Kubernetes manifests:
#   1. hadolint lints the Containerfile;
#   2. the build stage: install-packages.sh build-packages.txt, then build.sh into a staging
#      directory (a static-stdlib release build; --binary PATH uses an already built recbot);
#   3. the runtime stage: install-packages.sh runtime-packages.txt, add-user.sh; every shared
#      library the binary loads must come from runtime-packages.txt or what those depend on
#      (the Swift runtime from the toolchain counts only with --binary); then the binary runs as
#      the unprivileged user against a fresh data directory;
#   4. kubernetes-validate --strict on deploy/k8s/*.yaml.
# Needs root for steps 2-3 (apt-get, useradd); hadolint and kubernetes-validate come from PyPI
# (Tests/PythonSupport/requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=""
[ "${1:-}" = "--binary" ] && binary="$2"
here=deploy/container

echo "container: hadolint"
hadolint --failure-threshold warning "$here/Containerfile"
# Every file the Containerfile copies exists.
for source in $(sed -n 's/^COPY \(--from=[a-z]* \)\{0,1\}//p' "$here/Containerfile" | tr ' ' '\n' | grep '^deploy/'); do
  [ -e "$source" ] || { echo "container: COPY source $source does not exist"; exit 1; }
done

echo "container: build stage"
"$here/install-packages.sh" "$here/build-packages.txt"
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
if [ -n "$binary" ]; then
  install -D -m 0755 "$binary" "$staging/usr/local/bin/recbot"
else
  "$here/build.sh" "$staging"
fi

echo "container: runtime stage"
"$here/install-packages.sh" "$here/runtime-packages.txt"
"$here/add-user.sh"
python3 "$here/runtime_closure.py" "$here/runtime-packages.txt" "$staging/usr/local/bin/recbot" ${binary:+--allow-swift-toolchain}
chmod 0755 "$staging" "$staging/usr" "$staging/usr/local" "$staging/usr/local/bin"
data=$(mktemp -d)
chown recbot:recbot "$data"
run() { runuser -u recbot -- env -i PATH=/usr/bin:/bin RECBOT_DATA_DIR="$data" "$staging/usr/local/bin/recbot" "$@"; }
run --version
run sessions list --json | grep -q '^\[\]$' || { echo "container: recbot did not run as the recbot user"; exit 1; }
rm -rf "$data"

echo "container: kubernetes manifests"
kubernetes-validate --strict --quiet deploy/k8s/*.yaml
echo "container: ok"
