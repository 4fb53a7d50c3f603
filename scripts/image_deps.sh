#!/usr/bin/env bash
# Installs what building and running the container images needs (scripts/image.py, `make image`,
# `make test-image`), when it is missing: podman with runc (the runtime deploy/podman/containers.conf
# names) and the CNI plugins it uses for `-p`; mmdebstrap, which bootstraps the base image from
# Debian's packages where no container registry can be reached, with arch-test, which it needs for
# a foreign architecture; and qemu-user-static, which runs the other architecture's programs
# (arm64 on an amd64 machine, or amd64 on an arm64 one) for its builds and containers.
# Then it registers qemu for that architecture with binfmt_misc (mounting it first if needed),
# with the F flag, so that it works inside a container's root: Debian's qemu-user-static leaves
# that to systemd-binfmt or binfmt-support, which a container or CI machine may not run.
# Idempotent: does nothing when every tool is present and qemu registered. Needs root and apt-get;
# otherwise it says what is missing and what to do, and exits 0 (the image tests then skip,
# saying why).
set -euo pipefail
declare -A packages=([podman]=podman [runc]=runc [mmdebstrap]=mmdebstrap [arch-test]=arch-test)
case "$(uname -m)" in
  x86_64) foreign=aarch64 native=amd64 ;;
  aarch64) foreign=x86_64 native=arm64 ;;
  *) foreign= ;;
esac
[ -n "$foreign" ] && packages[qemu-$foreign-static]=qemu-user-static
missing=()
for tool in "${!packages[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${packages[$tool]}")
done
[ -e /usr/lib/cni/portmap ] || missing+=(containernetworking-plugins)
# In a subshell: apt_missing.sh exits when it is done.
(. "$(dirname "$0")/apt_missing.sh" image_deps)
[ -n "$foreign" ] || exit 0

binfmt=/proc/sys/fs/binfmt_misc
handler=$binfmt/qemu-$foreign
conf=/usr/lib/binfmt.d/qemu-$foreign.conf
cannot() {
  echo "image_deps: $1: images of the other architecture ($foreign) cannot be built or run" \
    "here. As root on this machine (or on the host of this container): mount -t binfmt_misc" \
    "binfmt_misc $binfmt; apt-get install qemu-user-static; cat $conf > $binfmt/register." \
    "Or build this machine's architecture only: make image IMAGE_ARCH=$native" >&2
  exit 0
}
if [ ! -e "$binfmt/status" ]; then
  [ "$(id -u)" = 0 ] || cannot "binfmt_misc is not mounted and this is not root"
  mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null \
    || cannot "binfmt_misc cannot be mounted at $binfmt (an unprivileged container?)"
  echo "image_deps: mounted binfmt_misc at $binfmt"
fi
if [ -e "$handler" ] && ! grep -q '^flags:.*F' "$handler"; then
  # Registered without F (binfmt-support's default once): containers cannot find the interpreter.
  [ "$(id -u)" = 0 ] || cannot "$handler lacks the F flag and this is not root"
  echo -1 >"$handler"
fi
if [ ! -e "$handler" ]; then
  [ -r "$conf" ] || cannot "$conf is missing (qemu-user-static is not installed)"
  [ "$(id -u)" = 0 ] || cannot "qemu-$foreign is not registered and this is not root"
  cat "$conf" >"$binfmt/register" 2>/dev/null || cannot "registering $conf failed"
  echo "image_deps: registered qemu-$foreign with binfmt_misc"
fi
if ! grep -q '^enabled' "$handler"; then
  echo 1 >"$handler" 2>/dev/null || cannot "$handler is disabled"
fi
