#!/usr/bin/env bash
# Installs what building and running the container images needs (scripts/image.py, `make image`,
# `make test-image`), when it is missing: podman with runc (the runtime deploy/podman/containers.conf
# names) and the CNI plugins it uses for `-p`, and mmdebstrap, which bootstraps the base image
# from Debian's packages where no container registry can be reached.
# Idempotent: does nothing when every tool is present. Needs root and apt-get; otherwise it says
# what is missing and exits 0 (the image tests then skip, saying why).
set -euo pipefail
declare -A packages=([podman]=podman [runc]=runc [mmdebstrap]=mmdebstrap)
missing=()
for tool in "${!packages[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${packages[$tool]}")
done
[ -e /usr/lib/cni/portmap ] || missing+=(containernetworking-plugins)
. "$(dirname "$0")/apt_missing.sh" image_deps
