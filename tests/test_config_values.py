"""Typed config reads: a bad value is one UserError naming the key, what it must be and an example."""

from __future__ import annotations

import pytest

from audit import config_values
from audit.errors import UserError


@pytest.mark.parametrize("value", ["abc", 2.5, -3, 0, True, "", None])
def test_whole_number_refuses_what_is_not_a_count(value):
    with pytest.raises(UserError, match=r"^max_iterations=.*: give a whole number of at least 1 \(e\.g\. max_iterations=3\)$"):
        config_values.whole_number({"max_iterations": value}, "max_iterations", minimum=1)


def test_whole_number_reads_nested_keys_and_optional_nulls():
    assert config_values.whole_number({"a": {"b": 7}}, "a.b", minimum=1) == 7
    assert config_values.whole_number({"a": {"b": "7"}}, "a.b", minimum=1) == 7
    assert config_values.whole_number({"a": {"b": None}}, "a.b", minimum=1, optional=True) is None
    with pytest.raises(UserError, match="or null"):
        config_values.whole_number({"a": {"b": 0}}, "a.b", minimum=1, optional=True)


@pytest.mark.parametrize("value", [-1, 2.5, "hot", float("nan"), True])
def test_temperature_is_between_0_and_2(value):
    with pytest.raises(UserError, match=r"sampling\.temperature=.*: give a number from 0 to 2 or null"):
        config_values.temperature({"sampling": {"temperature": value}}, "sampling.temperature")


def test_good_values_pass_through():
    assert config_values.temperature({"t": 0}, "t") == 0.0
    assert config_values.temperature({"t": 2}, "t") == 2.0
    assert config_values.temperature({"t": None}, "t") is None
    assert config_values.max_tokens({"m": 500}, "m") == 500
    assert config_values.number({"x": 0.5}, "x", minimum=0.0, above=True, example=1) == 0.5
    with pytest.raises(UserError, match="above 0"):
        config_values.number({"x": 0}, "x", minimum=0.0, above=True, example=1)


@pytest.mark.parametrize("value", ["", "  ", None])
def test_model_id_must_not_be_empty(value):
    with pytest.raises(UserError, match="audited.model is empty"):
        config_values.model_id({"audited": {"model": value}}, "audited.model")
