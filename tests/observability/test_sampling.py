"""The standard samplers decided by rule (``Sampling``) agree with the SDK's sampler objects, and
W3C ``traceparent`` parsing agrees with the SDK's propagator, for every input tried."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.trace import SpanKind, get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from channel.telemetry import parse_w3c
from gateway.observability.span_export import RecordExporter
from gateway.observability.tracing import Sampling, Tracing, _sampling, default_resource

PROPAGATOR = TraceContextTextMapPropagator()
RULES = [
    Sampling(parent_based, ratio)
    for parent_based in (False, True)
    for ratio in (0.0, 1e-9, 0.25, 0.5, 0.999, 1.0)
]
HEX = "0123456789abcdef"


def _hex(size: int) -> st.SearchStrategy[str]:
    return st.text(HEX, min_size=size, max_size=size)


TRACEPARENTS = st.one_of(
    st.builds(
        lambda v, t, s, f, tail: f"{v}-{t}-{s}-{f}{tail}",
        st.sampled_from(["00", "01", "cc", "ff", "0g", "0"]),
        st.one_of(_hex(32), st.just("0" * 32), _hex(31), st.just("A" * 32)),
        st.one_of(_hex(16), st.just("0" * 16)),
        st.sampled_from(["00", "01", "03", "ff", "1"]),
        st.sampled_from(["", "-", "-future", "x", " ", "\t", "  -z"]),
    ),
    st.builds(lambda pad, tp: pad + tp, st.sampled_from([" ", "\t", " \t"]), _hex(55)),
    st.text(max_size=60),
)


@given(TRACEPARENTS)
@example(f"00-{'a' * 32}-{'b' * 16}-01x")
@example(f"00-{'a' * 32}-{'b' * 16}-01-extra")
@example(f"cc-{'a' * 32}-{'b' * 16}-01-future")
@example(f" \t00-{'a' * 32}-{'b' * 16}-01\t ")
@example(f"ff-{'a' * 32}-{'b' * 16}-01")
@example(f"00-{'0' * 32}-{'b' * 16}-01")
def test_traceparent_parsing_agrees_with_the_sdk_propagator(header: str) -> None:
    parent = get_current_span(PROPAGATOR.extract({"traceparent": header})).get_span_context()
    parsed = parse_w3c(header)
    if not parent.is_valid:
        assert parsed is None
        return
    assert parsed is not None
    trace_id, span_id, flags = parsed
    assert (int(trace_id, 16), int(span_id, 16), flags) == (
        parent.trace_id,
        parent.span_id,
        int(parent.trace_flags),
    )


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"parent_based={r.parent_based}-{r.ratio}")
@given(
    trace_id=st.integers(1, 2**128 - 1),
    parent_flags=st.one_of(st.none(), st.sampled_from([0, 1, 2, 3])),
)
def test_the_rule_decides_as_the_sdk_sampler(
    rule: Sampling, trace_id: int, parent_flags: int | None
) -> None:
    context = None
    if parent_flags is not None:
        header = f"00-{trace_id:032x}-{'1' * 16}-{parent_flags:02x}"
        context = PROPAGATOR.extract({"traceparent": header})
    decision = rule.sdk().should_sample(context, trace_id, "rpc", SpanKind.SERVER)
    assert rule.sampled(trace_id, parent_flags) == (decision.decision == Decision.RECORD_AND_SAMPLE)


@pytest.mark.parametrize(
    ("name", "arg", "expected"),
    [
        ("always_on", "", Sampling(False, 1.0)),
        ("always_off", "", None),
        ("traceidratio", "0.25", Sampling(False, 0.25)),
        ("traceidratio", "0", None),
        ("parentbased_always_on", "", Sampling(True, 1.0)),
        ("parentbased_always_off", "", Sampling(True, 0.0)),
        ("parentbased_traceidratio", "0.5", Sampling(True, 0.5)),
    ],
)
def test_each_otel_sampler_name_maps_to_its_rule(
    name: str, arg: str, expected: Sampling | None
) -> None:
    env = {"OTEL_TRACES_SAMPLER": name, "OTEL_TRACES_SAMPLER_ARG": arg}
    assert _sampling(env) == expected


@given(
    trace_id=st.integers(1, 2**128 - 1),
    sampled=st.booleans(),
    state=st.sampled_from(["", "vendor=x", "a=1,b=2", "bad state", "k=v,,k2=v2"]),
)
def test_a_continued_span_keeps_the_caller_s_trace_state_as_the_sdk_parses_it(
    trace_id: int, sampled: bool, state: str
) -> None:
    resource = default_resource()
    exporter = RecordExporter(_Unused(), resource)  # type: ignore[arg-type]
    tracing = Tracing(_Unused(), Sampling(True, 0.0), resource)  # type: ignore[arg-type]
    header = f"00-{trace_id:032x}-{'2' * 16}-{'01' if sampled else '00'}"
    span = tracing.start("rpc", SpanKind.SERVER, 1, header, state, {})
    if not sampled:
        assert span is None
        return
    assert span is not None and span.trace_id == trace_id and span.parent_id == int("2" * 16, 16)
    carrier = {"traceparent": header, "tracestate": state}
    expected = get_current_span(PROPAGATOR.extract(carrier)).get_span_context().trace_state
    assert dict(exporter.forms.trace_state(span.trace_state) or {}) == dict(expected)


class _Unused:
    """A processor or exporter the test never reaches."""

    def on_end(self, span: object) -> None:
        raise AssertionError("not exported in this test")

    def shutdown(self) -> None:
        pass
