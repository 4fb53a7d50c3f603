"""The HTTP server core, protocol-neutral: the server and its lifecycle (``server.py``), the route
table each protocol registers its REST API with (``routes.py``), the front door of every request
(``front.py``), a call's body and deadline (``bounds.py``), connections and their limits
(``connections.py``, ``chunks.py``), JSON errors (``json_error.py``)."""
