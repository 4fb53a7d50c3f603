"""The Open Inference Protocol (KServe V2): codecs and mapping onto the transport-agnostic core.

A sibling of :mod:`gateway.tfserving`: neither imports the other. Only the modules of this package
read or write V2 protobuf fields and V2 JSON; the contracts are written down in ``README.md``.
"""

PROTOCOL = "v2"
"""This protocol's name, as the front door and observability's call records carry it."""
