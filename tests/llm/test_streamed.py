"""Reading a stream's event lines (pure): data, comments, [DONE], and events that are no chunk."""

from __future__ import annotations

import pytest

from audit.llm.streamed import DONE, chunk_json, event_data
from audit.llm.types import MalformedEvent


def test_only_data_lines_carry_data_and_one_leading_space_is_not_part_of_it() -> None:
    assert event_data('data: {"id": "g"}') == '{"id": "g"}'
    assert event_data('data:{"id": "g"}') == '{"id": "g"}'
    assert event_data("data: [DONE]") == DONE
    assert event_data(": OPENROUTER PROCESSING") is None  # a comment keeps the connection alive
    assert event_data("") is None and event_data("event: message") is None


@pytest.mark.parametrize("data", ['{"id": "gen-cut', "42", "[1, 2]", "null", ""])
def test_an_event_that_is_not_a_json_object_is_malformed(data: str) -> None:
    with pytest.raises(MalformedEvent, match="not a JSON object"):
        chunk_json(data)


def test_a_chunk_is_read_as_its_json_object() -> None:
    assert chunk_json('{"id": "g", "choices": []}') == {"id": "g", "choices": []}
