"""Threshold specs on the command line: `0.85`, `0.70:0.99:0.01` (inclusive range) or `0.8,0.85,0.9`.

Every threshold is a minimum cosine similarity in [-1, 1].
"""

from __future__ import annotations

# Values are rounded so 0.7 + 3 * 0.01 prints and compares as 0.73, not 0.7299999999999999.
DECIMALS = 6
MAX_STEPS = 10_000


def parse_thresholds(spec: str) -> tuple[float, ...]:
    """Ascending distinct thresholds; raises ValueError with a one-line reason."""
    values: list[float] = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty threshold in {spec!r}")
        values.extend(_range(part) if ":" in part else [_number(part)])
    for value in values:
        if not -1.0 <= value <= 1.0:
            raise ValueError(f"threshold {value} is not a cosine similarity in [-1, 1]")
    return tuple(sorted(set(values)))


def _range(part: str) -> list[float]:
    pieces = part.split(":")
    if len(pieces) != 3:
        raise ValueError(f"a range is START:STOP:STEP, got {part!r}")
    start, stop, step = (_number(piece) for piece in pieces)
    if step <= 0 or stop < start:
        raise ValueError(f"range {part!r} needs STEP > 0 and START <= STOP")
    steps = round((stop - start) / step, 9)
    count = int(steps) + 1
    if count > MAX_STEPS:
        raise ValueError(f"range {part!r} has more than {MAX_STEPS} values")
    return [round(start + i * step, DECIMALS) for i in range(count)]


def _number(text: str) -> float:
    try:
        return round(float(text), DECIMALS)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
