"""The evidence behind a namespace's threshold, per cosine band: how much traffic would be served in each band
(every request whose first servable candidate sits there, labelled or not: free), and the labels of such
candidates (shadows of near misses below the threshold, audits of hits above it). Newer evidence weighs more, and
both age on the stream's traffic: a request's weight halves every `HALF_LIFE_REQUESTS` newer requests of its kind, a
label's every `HALF_LIFE_LABELS` newer would-serve requests (exact hits and plain rewordings, which no band holds,
age no label). Labels do not age on their own count: once a band
opens, its requests are served and only audited, so labels arrive far more slowly while the traffic (and the
cache's twins, which change what a band's cosine means) keeps coming; a label clock would keep the labels gathered
before the band opened at full weight for as long as that (the near-twin trace's 5% wrong ÷ served). On the
traffic clock, evidence ages with the traffic that changes it. And a label weighs in proportion to how much of the
stream had been seen when it was taken (`label_weight`): a near miss labelled while the cache was young was
labelled against few neighbours, before the twins of what is asked arrived (the trace where clean early shadows
opened bands that later served twins: `docs/budget.md`).

`Totals` keeps that evidence as running totals, one event at a time (a request, a label, a label that changes its
mind), each band aged lazily to the stream's own counters: the shared store (`index.storage.evidence`) keeps one
per namespace and kind and updates it where decisions and labels are written; `collect` folds a list through it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from index.match.outcome import Kind

# Width of one band of cosine similarity; thresholds are chosen on band edges.
BAND_WIDTH = 0.01
# Observations this many newer requests of the stream back weigh half: would-serve mass, and labels (on the same
# clock, a shorter half-life: what a band's labels say must keep up with what it serves now).
HALF_LIFE_REQUESTS = 4000
HALF_LIFE_LABELS = 600
# Labels also weigh in proportion to the stream's growth since they were taken, from this many would-serve requests.
GROWTH_OFFSET = 50.0
# On requests alone a stream's mass is published again at most this many requests apart (a quarter of a half-life).
REPUBLISH_REQUESTS = 1000


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
    """One band [low, low + BAND_WIDTH): aged would-serve mass and aged right/wrong labels (both aged to the stream's
    latest request)."""

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


def collect(observations: Sequence[Observation], floor: float, half_life_requests: float = HALF_LIFE_REQUESTS,
            half_life_labels: float = HALF_LIFE_LABELS) -> Evidence:
    """Bands from `observations` (oldest first, one kind's, each labelled as it arrives): what `Totals` holds after
    them. Observations below `floor` are not evidence."""
    aging = Aging(floor, half_life_requests, half_life_labels)
    totals = Totals()
    for observation in observations:
        low = None if observation.fixed else aging.band(observation.similarity)
        if low is None and not observation.fixed:
            continue
        totals.observe(low, aging)
        if low is not None and observation.correct is not None:
            totals.label(low, observation.correct, aging)
    return totals.live(aging)


@dataclass(frozen=True)
class Aging:
    """How the totals age and where their bands start: the learner's floor and the two half-lives (in requests of
    the stream, in labels of the stream)."""

    floor: float
    half_life_requests: float = HALF_LIFE_REQUESTS
    half_life_labels: float = HALF_LIFE_LABELS
    growth_offset: float = GROWTH_OFFSET

    def band(self, similarity: float) -> float | None:
        """The lower edge of the band counting `similarity` (the top band holds 1.0), None below the floor."""
        lows = edges(self.floor)
        index = band_low(similarity, self.floor)
        return None if index < 0 or not lows else lows[min(index, len(lows) - 1)]


def label_weight(since: int, now: int, aging: Aging) -> float:
    """What a label counted at label clock `since` weighs at `now`: halved every `half_life_labels` would-serve
    requests, and in proportion to how much of the stream had been seen when it was taken (`GROWTH_OFFSET` + its
    would-serve requests then, against now): a label taken when the stream had seen a tenth of what it has now was
    taken against a cache that held a tenth of today's neighbours, and weighs a tenth."""
    if now <= since:
        return 1.0
    growth = (since + aging.growth_offset) / (now + aging.growth_offset) if aging.growth_offset > 0 else 1.0
    return float(0.5 ** ((now - since) / aging.half_life_labels) * growth)


def aged(value: float, since: int, now: int, half_life: float) -> float:
    """`value` counted at event `since`, seen at event `now`: halved every `half_life` events between."""
    return float(value * 0.5 ** ((now - since) / half_life)) if value and now != since else value


@dataclass
class BandTotals:
    """One band's running totals: would-serve mass aged to the stream's `mass_at`-th request, right and wrong
    labels aged to its `labels_at`-th would-serve request (`Totals.observations`), and the mass as of the stream's
    last publication (`served`)."""

    mass: float = 0.0
    mass_at: int = 0
    right: float = 0.0
    wrong: float = 0.0
    labels_at: int = 0
    served: float = 0.0


@dataclass
class Totals:
    """One evidence stream (a namespace's kind) as running totals. `requests` and `labels` count the events so
    far (the clocks the aging runs on); `observations` and `labelled` are the undecayed counts `Evidence` reports;
    `fixed` is the aged mass of hits served whatever the threshold. `publish` freezes the mass the learner reads
    (`published`), so every replica that reads a publication reads the same evidence: a stream publishes when its
    labels change and, on requests alone, once they grew by an eighth since its last publication (`stale`)."""

    requests: int = 0
    labels: int = 0
    observations: int = 0
    labelled: int = 0
    fixed: float = 0.0
    served_fixed: float = 0.0
    served_observations: int = 0
    served_requests: int = 0
    bands: dict[float, BandTotals] = field(default_factory=dict)

    @property
    def stale(self) -> bool:
        """Requests alone have moved the mass enough to publish it again: by an eighth since the last publication
        (every request at first), at most every `REPUBLISH_REQUESTS`."""
        grown = self.requests - self.served_requests
        return grown > 0 and grown >= min(max(1, self.served_requests // 8), REPUBLISH_REQUESTS)

    def observe(self, low: float | None, aging: Aging) -> None:
        """One request of the stream: would-serve in the band at `low`, or (None) served whatever the threshold."""
        self.requests += 1
        self.fixed = aged(self.fixed, self.requests - 1, self.requests, aging.half_life_requests)
        if low is None:
            self.fixed += 1.0
            return
        band = self.bands.setdefault(low, BandTotals())
        band.mass = aged(band.mass, band.mass_at, self.requests, aging.half_life_requests) + 1.0
        band.mass_at = self.requests
        self.observations += 1

    def label(self, low: float, correct: bool, aging: Aging) -> int:
        """A newly labelled decision in the band at `low`; returns the stream's label clock (its would-serve requests)
        at the time it was counted (what `relabel` needs to find its weight again)."""
        self.labels += 1
        self.labelled += 1
        band = self._labels_now(low, aging)
        if correct:
            band.right += 1.0
        else:
            band.wrong += 1.0
        return self.observations

    def relabel(self, low: float, seq: int, correct: bool, aging: Aging) -> None:
        """The decision counted at label clock `seq` (in the band at `low`) is now labelled `correct` (a label of
        higher precedence, or the same source again, said otherwise): its aged weight changes sides."""
        band = self._labels_now(low, aging)
        weight = label_weight(seq, self.observations, aging)
        if correct:
            band.wrong, band.right = max(0.0, band.wrong - weight), band.right + weight
        else:
            band.right, band.wrong = max(0.0, band.right - weight), band.wrong + weight

    def _labels_now(self, low: float, aging: Aging) -> BandTotals:
        band = self.bands.setdefault(low, BandTotals())
        factor = label_weight(band.labels_at, self.observations, aging)
        band.right, band.wrong = band.right * factor, band.wrong * factor
        band.labels_at = self.observations
        return band

    def publish(self, aging: Aging) -> None:
        """Freeze the mass as it is now: what `published` reports until the next publication."""
        for band in self.bands.values():
            band.served = aged(band.mass, band.mass_at, self.requests, aging.half_life_requests)
        self.served_fixed = self.fixed
        self.served_observations = self.observations
        self.served_requests = self.requests

    def live(self, aging: Aging) -> Evidence:
        """Everything as it is now."""
        mass = {low: aged(b.mass, b.mass_at, self.requests, aging.half_life_requests) for low, b in self.bands.items()}
        return self._evidence(aging, mass, self.observations, self.fixed)

    def published(self, aging: Aging) -> Evidence:
        """The labels as they are, the mass as of the last publication."""
        mass = {low: b.served for low, b in self.bands.items()}
        return self._evidence(aging, mass, self.served_observations, self.served_fixed)

    def _evidence(self, aging: Aging, mass: dict[float, float], observations: int, fixed: float) -> Evidence:
        bands = []
        for low in edges(aging.floor):
            band = self.bands.get(low)
            if band is None:
                bands.append(Band(low, 0.0, 0.0, 0.0))
                continue
            factor = label_weight(band.labels_at, self.observations, aging)
            right, wrong = band.right * factor, band.wrong * factor
            bands.append(Band(low, mass[low], right, wrong))
        return Evidence(tuple(bands), observations, self.labelled, fixed)
