"""TF Serving's API: its gRPC services and REST API over the serving core, and their codecs."""

PROTOCOL = "tfserving"
"""This protocol's name, as the front door and observability's call records carry it."""
