"""The Open Inference Protocol's REST API (``/v2``): its URL grammar (:mod:`.paths`), its routes
on the HTTP server core (:mod:`.routes`) and its bodies' codecs (:mod:`.request_body`,
:mod:`.json_values`, :mod:`.response_body`)."""
