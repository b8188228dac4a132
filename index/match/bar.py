"""A namespace's bar, moved by the live budget: `level` steps from the prior (the judge's calibrated cut, or
the cosine threshold). A step up halves what separates the bar from 1, so a raised bar never passes 1 and means
the same in probability and similarity units; a step down gives some of it back. `index.match.bar_book` sets levels.
"""

from __future__ import annotations

import math

# Share of the room below 1 that one step up removes.
STEP = 0.5
MAX_LEVEL = 4
MIN_LEVEL = -1


def raised(bar: float, level: int) -> float:
    """`bar` moved `level` steps: up towards 1 (level > 0) or down (level < 0). An infinite bar stays."""
    if level == 0 or math.isinf(bar):
        return bar
    return max(-1.0, 1.0 - (1.0 - bar) * (1.0 - STEP) ** level)
