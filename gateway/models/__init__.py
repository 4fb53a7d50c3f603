"""The model lifecycle (the supervisor's side): versions on disk, policies, labels, polling,
reload, loads with retries. It owns the registry that the request core reads
(:mod:`gateway.serving.registry`)."""
