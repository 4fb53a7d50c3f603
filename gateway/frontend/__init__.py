"""A front-end process of several (``tensorgate --frontends N``): its own event loop, gRPC and
REST servers on the shared ports, batch queues and core, a channel of its own to each worker,
and the registry the supervisor pushes (:mod:`gateway.frontend.frontend_process`)."""
