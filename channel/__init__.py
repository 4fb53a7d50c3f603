"""The gateway⇄worker protocol, imported by both sides of the shared-memory ring.

``messages`` (one typed message per op), ``wire`` (the binary layout of runs and their replies),
``dtypes`` (the one dtype table), ``shm/`` (the memfd segment, its rings, arenas and doorbells),
``telemetry`` (a worker's spans and figures as plain data) and ``logs`` (the one log format).
Nothing here imports the gateway, the worker process, grpc or protobuf.
"""
