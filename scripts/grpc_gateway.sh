#!/usr/bin/env bash
# Builds build/grpc-gateway/tensorgate-grpc-gateway, a grpc-gateway reverse proxy for tensorgate's
# gRPC services with the HTTP rules of deploy/transcoding/http_rules.yaml (`make grpc-gateway`).
# Offline: Debian's Go toolchain (golang-go), grpc-gateway 1.6 (protoc-gen-grpc-gateway and its
# runtime), protoc-gen-go 1.3 and the Go packages under /usr/share/gocode, in GOPATH mode with
# GOPROXY=off. The protos are a descriptor set `make descriptor-set` writes (build/tensorgate.pb),
# fed to protoc with --descriptor_set_in, each proto directory a Go package.
# Usage: scripts/grpc_gateway.sh [DESCRIPTORS [OUT]] (defaults build/tensorgate.pb,
# build/grpc-gateway; the binary is OUT/tensorgate-grpc-gateway). Env: PYTHON (default .venv's,
# with protobuf), GOCACHE (default OUT/cache).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
plain="$(realpath "${1:-$root/build/tensorgate.pb}")"
out="$(mkdir -p "${2:-$root/build/grpc-gateway}" && cd "${2:-$root/build/grpc-gateway}" && pwd)"
gopath="$out/gopath"
gen="$gopath/src"
rm -rf "$gopath/src" && mkdir -p "$gopath/src/tensorgate-grpc-gateway"

# protoc-gen-go 1.3 predates proto3 `optional` (predict.proto has some): the Go code is generated
# from a copy of the set with those fields plain and their synthetic oneofs dropped. The wire
# format is the same; only the proxy loses their presence bit (an unset field reads as its zero).
descriptors="$out/tensorgate-go.pb"
files=$("${PYTHON:-$root/.venv/bin/python}" - "$plain" "$descriptors" <<'PY'
import sys
from google.protobuf import descriptor_pb2
s = descriptor_pb2.FileDescriptorSet.FromString(open(sys.argv[1], "rb").read())
def plain(message):
    synthetic = set()
    for field in message.field:
        if field.proto3_optional:
            synthetic.add(field.oneof_index)
            field.ClearField("proto3_optional")
            field.ClearField("oneof_index")
    kept = [o for i, o in enumerate(message.oneof_decl) if i not in synthetic]
    assert all(i not in synthetic for f in message.field if f.HasField("oneof_index") for i in [f.oneof_index])
    assert len(kept) == len(message.oneof_decl) - len(synthetic) and not (synthetic and kept)
    del message.oneof_decl[:]
    message.oneof_decl.extend(kept)
    for nested in message.nested_type:
        plain(nested)
for f in s.file:
    # Each file's Go package: its directory (the import path, under $gopath/src), named for its
    # last element (tensorflow/core/protobuf holds two proto packages); google/protobuf's from
    # golang-goprotobuf (ptypes), which protoc-gen-go 1.3 and grpc-gateway 1.6 are built against.
    directory = f.name.rsplit("/", 1)[0]
    if directory == "google/protobuf":
        directory = "github.com/golang/protobuf/ptypes/" + f.name.split("/")[-1][: -len(".proto")]
    f.options.go_package = f"{directory};{directory.split('/')[-1]}"
    for message in f.message_type:
        plain(message)
open(sys.argv[2], "wb").write(s.SerializeToString())
print(" ".join(f.name for f in s.file))
PY
)
for file in $files; do
  case "$file" in google/protobuf/*) continue ;; esac
  nice -n 19 protoc --descriptor_set_in="$descriptors" \
    --go_out="plugins=grpc:$gen" "$file"
done
nice -n 19 protoc --descriptor_set_in="$descriptors" \
  --grpc-gateway_out="logtostderr=true,grpc_api_configuration=$root/deploy/transcoding/http_rules.yaml:$gen" \
  tensorflow_serving/apis/prediction_service.proto tensorflow_serving/apis/model_service.proto
for file in inference/grpc_service.proto grpc_health/v1/health.proto; do
  nice -n 19 protoc --descriptor_set_in="$descriptors" \
    --grpc-gateway_out="logtostderr=true,grpc_api_configuration=$root/deploy/transcoding/http_rules.yaml:$gen" \
    "$file"
done

cp "$root/deploy/transcoding/grpc-gateway/main.go" "$gopath/src/tensorgate-grpc-gateway/"
cd "$gopath/src/tensorgate-grpc-gateway"
GOPATH="$gopath:/usr/share/gocode" GO111MODULE=off GOPROXY=off GOFLAGS= GOCACHE="${GOCACHE:-$out/cache}" \
  nice -n 19 go build -o "$out/tensorgate-grpc-gateway" .
echo "wrote $out/tensorgate-grpc-gateway"
