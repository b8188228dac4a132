"""The reuse report: per namespace, from the shapes of the requests seen on this replica (`index.reuse.shape`),
what splits its traffic into scopes that cannot share answers: a system prompt that varies only by a volatile span,
a tool list sent in several orders, a sampling parameter split across values, one system prompt sent to several
models. Each finding names where, the share of the namespace's requests it affects and the fix in one sentence.
It is a report: the scope is never changed."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

from index.request.keys import CanonicalRequest
from index.reuse.shape import UNSET, RequestShape, Shaper, SystemShape

# A finding needs this many requests behind it, and a split this share of the namespace's requests.
MIN_REQUESTS = 20
MIN_SHARE = 0.05
# Memory per replica stays bounded: namespaces, groups per namespace, variants and values counted per group.
MAX_NAMESPACES = 10_000
MAX_GROUPS = 256
MAX_VARIANTS = 1024
MAX_VALUES = 16
MAX_SHAPES = 10_000


class Obstacle(StrEnum):
    VARYING_SYSTEM_PROMPT = "varying_system_prompt"
    TOOL_ORDER = "tool_order"
    SAMPLING_SPLIT = "sampling_split"
    MODEL_SPLIT = "model_split"


@dataclass(frozen=True)
class Finding:
    obstacle: Obstacle
    requests: int  # the namespace's requests it affects
    share: float  # of the namespace's requests seen
    variants: int  # scopes they were split into (at least; counting stops at MAX_VARIANTS)
    where: str
    fix: str


@dataclass(frozen=True)
class NamespaceReuse:
    namespace: str
    requests: int
    findings: tuple[Finding, ...]


@dataclass
class _SystemGroup:
    """Requests whose system prompts agree once their volatile spans are masked."""

    length: int
    spans: list[tuple[str, int, set[str]]]  # (kind, offset, values seen)
    requests: int = 0
    variants: set[str] = field(default_factory=set)
    models: Counter[str] = field(default_factory=Counter)

    def add(self, system: SystemShape, model: str) -> None:
        self.requests += 1
        if len(self.variants) < MAX_VARIANTS:
            self.variants.add(system.exact)
        self.models[model] += 1
        for (_, _, values), span in zip(self.spans, system.spans, strict=False):
            if len(values) < MAX_VALUES:
                values.add(span.value)


@dataclass
class _Namespace:
    requests: int = 0
    systems: dict[str, _SystemGroup] = field(default_factory=dict)
    tools: dict[tuple[str, ...], tuple[int, set[tuple[str, ...]]]] = field(default_factory=dict)
    sampling: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, shape: RequestShape) -> None:
        self.requests += 1
        system = shape.system
        group = self.systems.get(system.masked)
        if group is None and len(self.systems) < MAX_GROUPS:
            group = self.systems[system.masked] = _SystemGroup(
                system.length, [(s.kind, s.offset, set()) for s in system.spans])
        if group is not None:
            group.add(system, shape.model)
        if shape.tools:
            key = tuple(sorted(shape.tools))
            n, orders = self.tools.get(key, (0, set()))
            if key in self.tools or len(self.tools) < MAX_GROUPS:
                if len(orders) < MAX_VARIANTS:
                    orders.add(shape.tools)
                self.tools[key] = (n + 1, orders)
        for name, value in shape.sampling:  # requests without the parameter count as UNSET when read
            values = self.sampling.get(name)
            if values is None:
                values = self.sampling[name] = Counter()
            values[value if value in values or len(values) < MAX_VALUES else "other"] += 1


def _where(kind: str, offset: int, length: int) -> str:
    place = "at the start" if offset < max(40, length // 10) else (
        "at the end" if offset >= length * 0.9 else "in the middle")
    return f"a {kind} {place} of the system prompt (character {offset} of {length})"


def _system_findings(ns: _Namespace) -> list[Finding]:
    found = []
    for group in ns.systems.values():
        varying = [(kind, offset) for kind, offset, values in group.spans if len(values) > 1]
        if len(group.variants) > 1 and varying and group.requests >= MIN_REQUESTS:
            kind, offset = varying[0]
            after = group.length - offset
            found.append(Finding(
                Obstacle.VARYING_SYSTEM_PROMPT, group.requests, group.requests / ns.requests, len(group.variants),
                _where(kind, offset, group.length),
                f"Move the {kind} out of the system prompt (into the last user message, or drop it): for Deja every "
                f"value of it is a scope of its own, and for the provider's prompt cache it spoils the {after} "
                "characters from it on."))
        top = group.models.most_common(1)
        others = group.requests - (top[0][1] if top else 0)
        if len(group.models) > 1 and group.requests >= MIN_REQUESTS and others >= MIN_SHARE * ns.requests:
            models = ", ".join(sorted(group.models))
            found.append(Finding(
                Obstacle.MODEL_SPLIT, others, others / ns.requests, len(group.models),
                f"one system prompt sent to {len(group.models)} models ({models})",
                "Send each application's traffic to one model (end the A/B test, or route by task): an answer is "
                "only ever reused for the model that gave it."))
    return found


def _tool_findings(ns: _Namespace) -> list[Finding]:
    found = []
    for tools, (n, orders) in ns.tools.items():
        if len(orders) > 1 and n >= MIN_REQUESTS:
            found.append(Finding(
                Obstacle.TOOL_ORDER, n, n / ns.requests, len(orders),
                f"the same {len(tools)} tools sent in {len(orders)} orders",
                "Send the tool list in one fixed order (sorted by name): each order is a scope of its own for Deja "
                "and a different prefix for the provider's prompt cache."))
    return found


def _sampling_findings(ns: _Namespace) -> list[Finding]:
    found = []
    for name, sent in ns.sampling.items():
        values = sent + Counter({UNSET: ns.requests - sum(sent.values())})
        (top, top_n), = values.most_common(1)
        others = ns.requests - top_n
        if len(values) > 1 and ns.requests >= MIN_REQUESTS and others >= MIN_SHARE * ns.requests:
            shown = ", ".join(f"{v} ({n})" for v, n in values.most_common(4))
            found.append(Finding(
                Obstacle.SAMPLING_SPLIT, others, others / ns.requests, len(values),
                f"{name} split across {len(values)} values: {shown}",
                f"Settle on one value of {name} (most requests send {top if top != UNSET else 'none'}): each value "
                "keeps a cache of its own."))
    return found


class ReuseWatch:
    """Fed every keyed request with a credential (on the event loop); read by the overview and the admin API (in
    worker threads)."""

    def __init__(self) -> None:
        self._shaper = Shaper()
        self._shapes: dict[str, RequestShape] = {}  # by exact key, oldest first
        self._namespaces: dict[str, _Namespace] = {}
        self._lock = threading.Lock()

    def observe(self, namespace: str, request: CanonicalRequest, exact: str | None = None) -> None:
        """`exact`: the request's exact key when known; a request seen before is not shaped again."""
        shape = self._shapes.get(exact) if exact is not None else None
        if shape is None:
            shape = self._shaper.shape(request)
            if exact is not None:
                self._shapes[exact] = shape
                if len(self._shapes) > MAX_SHAPES:
                    self._shapes.pop(next(iter(self._shapes)))
        with self._lock:
            ns = self._namespaces.get(namespace)
            if ns is None:
                if len(self._namespaces) >= MAX_NAMESPACES:
                    return
                ns = self._namespaces[namespace] = _Namespace()
            ns.add(shape)

    def report(self) -> tuple[NamespaceReuse, ...]:
        """Every namespace seen, its findings largest share first."""
        with self._lock:
            out = []
            for namespace, ns in sorted(self._namespaces.items()):
                findings = _system_findings(ns) + _tool_findings(ns) + _sampling_findings(ns)
                findings.sort(key=lambda f: (-f.share, f.obstacle.value))
                out.append(NamespaceReuse(namespace, ns.requests, tuple(findings)))
            return tuple(out)
