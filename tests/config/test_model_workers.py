"""``--model_workers``: name=N items, *=N for the rest, no entry meaning every worker."""

from __future__ import annotations

import pytest

from gateway.config.model_workers import DEFAULT_KEY, parse_model_workers, workers_for


def test_items_parse_with_spaces_and_empty_items_skipped() -> None:
    assert parse_model_workers("") == {}
    assert parse_model_workers(" resnet = 1 , *=2,") == {"resnet": 1, DEFAULT_KEY: 2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("resnet", "model_workers items are name=N, got 'resnet'"),
        ("=2", "model_workers items are name=N, got '=2'"),
        ("resnet=0", "model_workers gives resnet '0'; N must be >= 1"),
        ("resnet=two", "model_workers gives resnet 'two'; N must be >= 1"),
        ("resnet=1.5", "model_workers gives resnet '1.5'; N must be >= 1"),
        ("a=1,a=2", "model_workers names a twice"),
    ],
)
def test_bad_items_are_named(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_model_workers(text)
    assert str(raised.value) == message


def test_a_named_model_then_the_default_then_every_worker() -> None:
    placement = parse_model_workers("resnet=1,*=2")
    assert workers_for("resnet", placement) == 1
    assert workers_for("mlp", placement) == 2
    assert workers_for("mlp", parse_model_workers("resnet=1")) == 0  # 0: every worker
