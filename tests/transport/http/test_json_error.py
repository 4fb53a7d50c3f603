"""The REST error body shared by every protocol."""

from __future__ import annotations

import json

from gateway.transport.http.json_error import error_body


def test_error_body_survives_any_message() -> None:
    assert json.loads(error_body('bad "x"\n')) == {"error": 'bad "x"\n'}
    assert json.loads(error_body("lone \ud800")) == {"error": "lone \\ud800"}
