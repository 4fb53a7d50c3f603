"""The protocol-neutral front door: the gRPC gate, admission, bearer tokens, quiet logging, and
the HTTP server core (``http/``). Each protocol package registers its gRPC services and HTTP routes
here; nothing here knows TF Serving's or the Open Inference Protocol's messages."""
