// Command tensorgate-grpc-gateway is a grpc-gateway reverse proxy for tensorgate: HTTP JSON
// (protobuf's JSON mapping) by the rules of deploy/transcoding/http_rules.yaml, onto tensorgate's
// gRPC port. scripts/grpc_gateway.sh generates the handlers and builds it.
//
// Usage: tensorgate-grpc-gateway -listen 127.0.0.1:0 -upstream 127.0.0.1:8500
// It prints "listening on HOST:PORT" on stdout once it accepts connections.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/runtime"
	"google.golang.org/grpc"

	health "grpc_health/v1"
	inference "inference"
	serving "tensorflow_serving/apis"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address to serve (port 0: the OS chooses)")
	upstream := flag.String("upstream", "127.0.0.1:8500", "tensorgate's gRPC address")
	flag.Parse()

	ctx := context.Background()
	mux := runtime.NewServeMux(runtime.WithMarshalerOption(runtime.MIMEWildcard,
		&runtime.JSONPb{OrigName: false, EmitDefaults: false}))
	options := []grpc.DialOption{grpc.WithInsecure()}
	for _, register := range []func(context.Context, *runtime.ServeMux, string, []grpc.DialOption) error{
		serving.RegisterPredictionServiceHandlerFromEndpoint,
		serving.RegisterModelServiceHandlerFromEndpoint,
		inference.RegisterGRPCInferenceServiceHandlerFromEndpoint,
		health.RegisterHealthHandlerFromEndpoint,
	} {
		if err := register(ctx, mux, *upstream, options); err != nil {
			log.Fatal(err)
		}
	}
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s\n", listener.Addr())
	log.Fatal(http.Serve(listener, mux))
}
