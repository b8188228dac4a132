"""Threshold specs: single values, inclusive ranges, lists, and one-line errors."""

from __future__ import annotations

import pytest

from eval.thresholds import parse_thresholds


def test_range_is_inclusive_and_free_of_float_drift() -> None:
    values = parse_thresholds("0.70:0.99:0.01")
    assert len(values) == 30
    assert values[0] == 0.7 and values[-1] == 0.99
    assert 0.73 in values


def test_single_value_and_list_are_sorted_and_distinct() -> None:
    assert parse_thresholds("0.85") == (0.85,)
    assert parse_thresholds("0.9,0.8,0.9") == (0.8, 0.9)
    assert parse_thresholds("0.70:0.95:0.05") == (0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param("1.5", id="above-one"),
        pytest.param("abc", id="not-a-number"),
        pytest.param("0.9:0.8:0.01", id="backwards"),
        pytest.param("0.7:0.9", id="no-step"),
        pytest.param("0.7:0.9:0", id="zero-step"),
        pytest.param("0.7,,0.8", id="empty-item"),
    ],
)
def test_bad_specs_raise_value_error(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_thresholds(spec)
