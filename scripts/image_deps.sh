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
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "image_deps: missing ${missing[*]} (install them with apt-get as root)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "image_deps: installed ${missing[*]}"
