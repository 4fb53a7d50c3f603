#!/usr/bin/env bash
# Installs the system tools the test suite and bench drive for real, when they are missing:
#   prometheus (scrapes /monitoring/prometheus/metrics) and its promtool (checks and unit-tests
#   deploy/observability's rules), kubectl (renders deploy/k8s), h2load from nghttp2-client
#   (bench load generator), chromium (renders the API docs pages, tests/e2e/test_api_docs.py),
#   and what scripts/grpc_gateway.sh builds grpc-gateway with, offline (tests/deploy/
#   test_transcoding.py, which fails without it): Go, protoc, protoc-gen-go 1.3 and
#   protoc-gen-grpc-gateway 1.6 with their Go sources under /usr/share/gocode.
# Idempotent: does nothing when every tool is present. Needs root and apt-get; otherwise it says
# what is missing and exits 0: under `make test` the tests that need a missing tool then fail,
# naming it (tests/support/tools.py); run on their own, they skip.
set -euo pipefail
declare -A packages=([prometheus]=prometheus [promtool]=prometheus [kubectl]=kubectl
  [h2load]=nghttp2-client [chromium]=chromium [go]=golang-go [protoc]=protobuf-compiler
  [protoc-gen-go]=protoc-gen-go-1-3 [protoc-gen-grpc-gateway]=golang-grpc-gateway
  [node]=nodejs [npm]=npm)
declare -A sources=([github.com/grpc-ecosystem/grpc-gateway/runtime]=golang-github-grpc-ecosystem-grpc-gateway-dev
  [google.golang.org/grpc]=golang-google-grpc-dev [github.com/golang/protobuf/jsonpb]=golang-goprotobuf-dev)
missing=()
for tool in "${!packages[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${packages[$tool]}")
done
for source in "${!sources[@]}"; do
  [ -d "/usr/share/gocode/src/$source" ] || missing+=("${sources[$source]}")
done
( . "$(dirname "$0")/apt_missing.sh" system_deps )
AZURITE=azurite@3.37.0
if ! command -v azurite-blob >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v npm >/dev/null 2>&1; then
    echo "system_deps: missing azurite-blob (npm install -g $AZURITE as root)" >&2
  else
    npm install -g --silent --no-fund --no-audit "$AZURITE" >/dev/null
    echo "system_deps: installed $AZURITE"
  fi
fi
