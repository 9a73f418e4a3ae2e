"""The given reading's speed tricks change no outcome: ``load_payload`` is ``json.loads`` (with jiter
and without it), and a payload ``only_text`` lets through is one the full reading would have left alone."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_course import payload_reading
from pi_course.payload_reading import PayloadReader, load_payload, only_text

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture(params=["jiter", "json's scanner"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test of load_payload runs with jiter and without it (the browser edition's parse)."""
    assert payload_reading.from_json is not None, "the dev environment installs jiter"
    if request.param != "jiter":
        monkeypatch.setattr(payload_reading, "from_json", None)


@pytest.mark.usefixtures("parser")
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(JSON, st.sampled_from(["", " ", "\n", "\t "]), st.sampled_from(["", " ", "\n", "x", "]"]))
def test_load_payload_is_json_loads_on_any_text(value: object, before: str, after: str) -> None:
    text = before + json.dumps(value) + after
    try:
        expected = json.loads(text)
    except ValueError as error:
        with pytest.raises(ValueError) as raised:
            load_payload(text)
        assert type(raised.value) is type(error) and str(raised.value) == str(error)
    else:
        assert load_payload(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        *["", "[DONE]", "{", '{"a": }', "\ufeff{}", "Infinity", "1 2", ' {"a": 1}\n', "NaN", "1e400"],
        *['"a\x01"', '"\\ud800"', '"\ud800"', "123456789012345678901234567890", '{"a": 1, "a": 2}', "-0.0"],
    ],
)
@pytest.mark.usefixtures("parser")
def test_load_payload_is_json_loads_on_edge_cases(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            load_payload(text)
    else:
        assert repr(load_payload(text)) == repr(expected)  # 10**29 is not 1e29, -0.0 is not 0


TEXT_PAYLOAD = {"id": "x", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}
DELTAS = st.dictionaries(
    st.sampled_from(["content", "role", "refusal", "reasoning_content", "tool_calls"]),
    st.none() | st.text(max_size=3) | st.lists(st.fixed_dictionaries({"type": st.just("text")}), max_size=1),
    max_size=3,
)
CHOICES = st.fixed_dictionaries(
    {"delta": DELTAS | st.none()},
    optional={
        "index": st.sampled_from([0, 1, 0.0, False, None, "0"]),
        "finish_reason": st.sampled_from([None, "stop", "content_filter"]),
    },
)
PAYLOADS = st.fixed_dictionaries(
    {"choices": st.lists(CHOICES, max_size=2)},
    optional={
        "usage": st.none() | st.fixed_dictionaries({"prompt_tokens": st.integers(0, 5)}),
        "error": st.none() | st.text(max_size=3),
        "citations": st.lists(st.text(max_size=2), max_size=2),
    },
)


def reading_of(reader: PayloadReader) -> tuple[object, ...]:
    return (reader.usage_sent.counts, reader.ignored.sizes, reader.refusal, reader.finish_reason)


@settings(deadline=None)
@given(PAYLOADS, st.booleans())
def test_a_payload_only_text_lets_through_is_one_the_full_reading_leaves_alone(
    payload: dict[str, object], read_quirks: bool
) -> None:
    if not only_text(payload):
        return
    reader = PayloadReader(read_quirks=read_quirks)
    before = reading_of(reader)
    read = copy.deepcopy(payload)
    assert reader.read(read) is False  # not changed, not skipped, nothing raised
    assert read == payload and reading_of(reader) == before


def test_only_text_takes_the_common_payload_and_nothing_with_more_in_it() -> None:
    assert only_text(copy.deepcopy(TEXT_PAYLOAD))
    for change in (
        lambda p: p.update(usage={"prompt_tokens": 1}),
        lambda p: p.update(error="overloaded"),
        lambda p: p["choices"][0].update(index=1),
        lambda p: p["choices"][0].update(index=False),
        lambda p: p["choices"][0].update(finish_reason="stop"),
        lambda p: p["choices"][0]["delta"].update(refusal="no"),
        lambda p: p["choices"][0]["delta"].update(content=[{"type": "text", "text": "hi"}]),
        lambda p: p["choices"].append({"index": 1, "delta": {}}),
    ):
        payload = copy.deepcopy(TEXT_PAYLOAD)
        change(payload)
        assert not only_text(payload), payload
