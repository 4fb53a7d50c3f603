#!/usr/bin/env bash
# Installs the system tools the test suite and bench drive for real, when they are missing:
#   prometheus (scrapes /monitoring/prometheus/metrics) and its promtool (checks and unit-tests
#   deploy/observability's rules), kubectl (renders deploy/k8s), h2load from nghttp2-client
#   (bench load generator), chromium (renders the API docs pages, tests/e2e/test_api_docs.py).
# Idempotent: does nothing when every tool is present. Needs root and apt-get; otherwise it says
# what is missing and exits 0 (the tests that need a tool then skip, naming it).
set -euo pipefail
declare -A packages=([prometheus]=prometheus [promtool]=prometheus [kubectl]=kubectl
  [h2load]=nghttp2-client [chromium]=chromium)
missing=()
for tool in "${!packages[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${packages[$tool]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "system_deps: missing ${missing[*]} (install them with apt-get as root)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "system_deps: installed ${missing[*]}"
