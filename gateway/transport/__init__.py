"""The protocol-neutral front door: the gRPC gate, admission, bearer tokens, quiet logging, and
the HTTP server core (``http/``). Each protocol package hands it a
:class:`~gateway.transport.surface.ProtocolSurface` (its gRPC services, its REST API); nothing here
knows TF Serving's or the Open Inference Protocol's messages."""
