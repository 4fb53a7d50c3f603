"""The gateway⇄worker protocol, imported by both sides of the shared-memory ring.

``messages`` (the catalogue and the encoding: ``requests`` gateway → worker, ``replies`` worker →
gateway, ``descriptors`` for the tensors they name, ``json_fields`` for the JSON ops' checks),
``wire`` (the binary layout of runs and their replies; ``span_wire`` for the worker's spans,
``binary`` for the primitives), ``dtypes`` (the one dtype table), ``shm/`` (the memfd segment,
its rings, arenas, output area and doorbells), ``telemetry`` (a worker's spans and figures as
plain data) and ``logs`` (the one log format). Nothing here imports the gateway, the worker
process, grpc or protobuf.
"""
