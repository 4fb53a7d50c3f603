"""Smoke-test a running server: ``python -m gateway.client --target HOST:PORT --model digits``.

Sends one embedded 8x8 image (a "0" from scikit-learn's digits data, grey levels 0..16, as the
bundled ``models/digits`` model expects) and prints the outputs as JSON on stdout, e.g.
``{"label": [0], "probabilities": [[0.99, ...]]}``. ``--call metadata`` / ``--call status``
print the model's metadata or version status instead. Exit status 1 on an RPC error, with the
gRPC code and message on stderr.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

import grpc
import numpy as np

from gateway.client import DEFAULT_SIGNATURE, DEFAULT_TARGET, Client

DIGIT_ZERO: tuple[float, ...] = (
    *(0.0, 0.0, 5.0, 13.0, 9.0, 1.0, 0.0, 0.0),
    *(0.0, 0.0, 13.0, 15.0, 10.0, 15.0, 5.0, 0.0),
    *(0.0, 3.0, 15.0, 2.0, 0.0, 11.0, 8.0, 0.0),
    *(0.0, 4.0, 12.0, 0.0, 0.0, 8.0, 8.0, 0.0),
    *(0.0, 5.0, 8.0, 0.0, 0.0, 9.0, 8.0, 0.0),
    *(0.0, 4.0, 11.0, 0.0, 1.0, 12.0, 7.0, 0.0),
    *(0.0, 2.0, 14.0, 5.0, 10.0, 12.0, 0.0, 0.0),
    *(0.0, 0.0, 6.0, 13.0, 10.0, 0.0, 0.0, 0.0),
)
"""``load_digits().data[0]`` (its label is 0), row-major."""


def _jsonable(value: Any) -> Any:
    """``json.dumps`` fallback: bytes as TF Serving's REST ``{"b64": ...}``."""
    if isinstance(value, bytes):
        return {"b64": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gateway.client", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--target", default=DEFAULT_TARGET, help="host:port of the gRPC API")
    parser.add_argument("--model", default="digits", help="model name")
    parser.add_argument("--version", type=int, default=None, help="model version (default: latest)")
    parser.add_argument("--signature_name", default=DEFAULT_SIGNATURE)
    parser.add_argument("--input_name", default="images", help="input that gets the image")
    parser.add_argument("--timeout", type=float, default=10.0, help="deadline in seconds")
    parser.add_argument("--call", choices=("predict", "metadata", "status"), default="predict")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one call and print its result as JSON; returns the exit status."""
    args = _parser().parse_args(argv)
    result: Any
    try:
        with Client(args.target, timeout=args.timeout) as client:
            if args.call == "metadata":
                result = client.metadata(args.model, version=args.version)
            elif args.call == "status":
                result = client.status(args.model, version=args.version)
            else:
                image = np.asarray([DIGIT_ZERO], dtype=np.float32)
                outputs = client.predict(
                    args.model,
                    {args.input_name: image},
                    version=args.version,
                    signature_name=args.signature_name,
                )
                result = {name: array.tolist() for name, array in sorted(outputs.items())}
    except grpc.RpcError as exc:
        sys.stderr.write(f"{exc.code().name}: {exc.details()}\n")
        return 1
    sys.stdout.write(json.dumps(result, default=_jsonable) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
