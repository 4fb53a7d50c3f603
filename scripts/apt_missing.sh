# Sourced by scripts/*_deps.sh after they have listed the Debian packages of missing tools in the
# array `missing`: installs them with apt-get when root, otherwise says what is missing (to
# stderr, prefixed with $1, the caller's name) and exits 0. Exits 0 at once when nothing is missing.
name=$1
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "$name: missing ${missing[*]} (install them with apt-get as root)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "$name: installed ${missing[*]}"
