"""The evidence behind a namespace's threshold, per cosine band: how much traffic would be served in each band
(every request whose first servable candidate sits there, labelled or not: free), and the labels of such
candidates (shadows of near misses below the threshold, audits of hits above it). Newer evidence weighs more:
each observation's weight halves every `half_life` newer ones, so the threshold can follow a cache that grows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from index.match.outcome import Kind

# Width of one band of cosine similarity; thresholds are chosen on band edges.
BAND_WIDTH = 0.01
# Observations this many newer ones back weigh half (would-serve requests and labels age apart: labels are rarer).
HALF_LIFE_REQUESTS = 4000
HALF_LIFE_LABELS = 1500


@dataclass(frozen=True)
class Observation:
    """One decision that would serve its candidate at a threshold at or below `similarity` (a cosine hit, or a
    near miss whose candidate passed every other step), with its label when it has one."""

    similarity: float
    correct: bool | None = None
    # A hit served whatever the threshold (a plain rewording served on its content): it counts among what the
    # namespace serves, not in a band.
    fixed: bool = False
    # Whose evidence it is: each kind of difference has its own bands and threshold.
    kind: Kind = Kind.COSINE


@dataclass(frozen=True)
class Band:
    """One band [low, low + BAND_WIDTH): aged would-serve mass and aged right/wrong labels."""

    low: float
    mass: float
    right: float
    wrong: float

    @property
    def labels(self) -> float:
        return self.right + self.wrong


@dataclass(frozen=True)
class Evidence:
    """A namespace's bands from `floor` up (ascending, one per band edge) and how many labels arrive per
    would-serve request (for "time to trust" in requests)."""

    bands: tuple[Band, ...]
    observations: int
    labels: int
    # Aged count of hits served whatever the threshold (their wrong rate is taken as nil).
    fixed: float = 0.0

    @property
    def label_rate(self) -> float:
        return self.labels / self.observations if self.observations else 0.0


def band_low(similarity: float, floor: float) -> int:
    """The index of the band holding `similarity` (0 = the band starting at `floor`)."""
    return math.floor((similarity - floor) / BAND_WIDTH + 1e-9)


def edges(floor: float, ceiling: float = 1.0) -> tuple[float, ...]:
    """Band edges from `floor` to below `ceiling`, rounded so that they print and compare as typed."""
    count = round((ceiling - floor) / BAND_WIDTH)
    return tuple(round(floor + i * BAND_WIDTH, 6) for i in range(count))


def by_kind(observations: Sequence[Observation]) -> dict[Kind, list[Observation]]:
    """Each kind's observations (oldest first); what every kind serves whatever its threshold (exact hits, plain
    rewordings) counts in the cosine kind's mass."""
    found: dict[Kind, list[Observation]] = {}
    for observation in observations:
        found.setdefault(Kind.COSINE if observation.fixed else observation.kind, []).append(observation)
    return found


def collect(observations: Sequence[Observation], floor: float, half_life_requests: float = HALF_LIFE_REQUESTS,
            half_life_labels: float = HALF_LIFE_LABELS) -> Evidence:
    """Bands from `observations` (oldest first, one kind's). Observations below `floor` are not evidence."""
    lows = edges(floor)
    mass, right, wrong = [0.0] * len(lows), [0.0] * len(lows), [0.0] * len(lows)
    newer_requests = newer_labels = 0
    labels = 0
    kept = 0
    fixed = 0.0
    for observation in reversed(observations):
        if observation.fixed:
            fixed += 0.5 ** (newer_requests / half_life_requests)
            newer_requests += 1
            continue
        index = band_low(observation.similarity, floor)
        if index < 0:
            continue
        index = min(index, len(lows) - 1)
        kept += 1
        mass[index] += 0.5 ** (newer_requests / half_life_requests)
        newer_requests += 1
        if observation.correct is None:
            continue
        weight = 0.5 ** (newer_labels / half_life_labels)
        newer_labels += 1
        labels += 1
        if observation.correct:
            right[index] += weight
        else:
            wrong[index] += weight
    bands = tuple(Band(low, m, r, w) for low, m, r, w in zip(lows, mass, right, wrong, strict=True))
    return Evidence(bands, kept, labels, fixed)
