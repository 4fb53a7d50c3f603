"""A small Python client for TF Serving's gRPC API (tensorgate or TF Serving), sync and async.

``from gateway.client import Client, AsyncClient``; ``python -m gateway.client`` calls a model from
the command line. The package imports nothing of the server: only the generated protos, the tensor
codec and the error model.
"""

from gateway.client.api import DEFAULT_TARGET, AsyncClient, Client
from gateway.client.convert import DEFAULT_SIGNATURE, metadata_dict, predict_request, status_list

__all__ = [
    "DEFAULT_SIGNATURE",
    "DEFAULT_TARGET",
    "AsyncClient",
    "Client",
    "metadata_dict",
    "predict_request",
    "status_list",
]
