"""The Open Inference Protocol's REST API (``/v2``): its URL grammar (:mod:`.paths`) and its
routes on the HTTP server core (:mod:`.routes`); the bodies' codecs are
:mod:`gateway.v2.rest.request_body` and :mod:`gateway.v2.rest.response_body`."""
