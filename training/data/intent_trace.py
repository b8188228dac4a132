"""Hand-written intent sources and the replay trace built from them, shared by `make_stream.py` and
`make_trace2.py` (each keeps its own sources, seed, popularity and split RNG).

Source format, one file per domain (``<domain>.txt``)::

    ## intent_id [twin_of=other_intent_id]
    - wording 1
    - wording 2
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from pathlib import Path


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip("?.! ")


def load_intents(src: Path) -> list[dict]:
    """The intents of every ``*.txt`` under `src` (validated): id, domain, twin_of, wordings."""
    intents: list[dict] = []
    for path in sorted(src.glob("*.txt")):
        current: dict | None = None
        for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            line = raw.strip()
            if not line or (line.startswith("#") and not line.startswith("##")):
                continue
            if line.startswith("## "):
                name, *extra = line[3:].split()
                current = {"id": name, "domain": path.stem, "twin_of": None, "wordings": []}
                for option in extra:
                    key, _, value = option.partition("=")
                    if key != "twin_of" or not value:
                        raise SystemExit(f"{path.name}:{lineno}: bad header option {option!r}")
                    current["twin_of"] = value
                intents.append(current)
            elif line.startswith("- ") and current is not None:
                current["wordings"].append(line[2:].strip())
            else:
                raise SystemExit(f"{path.name}:{lineno}: cannot parse {raw!r}")
    validate(intents)
    return intents


def validate(intents: list[dict]) -> None:
    ids = [it["id"] for it in intents]
    duplicates = [k for k, v in Counter(ids).items() if v > 1]
    if duplicates:
        raise SystemExit(f"duplicate intent ids: {duplicates}")
    seen: dict[str, str] = {}
    for it in intents:
        if not 3 <= len(it["wordings"]) <= 8:
            raise SystemExit(f"{it['id']}: needs 3-8 wordings, has {len(it['wordings'])}")
        if it["twin_of"] is not None and (it["twin_of"] not in ids or it["twin_of"] == it["id"]):
            raise SystemExit(f"{it['id']}: bad twin_of {it['twin_of']!r} (unknown or itself)")
        for wording in it["wordings"]:
            key = norm(wording)
            if key in seen:
                raise SystemExit(f"wording {wording!r} used by {seen[key]} and {it['id']}")
            seen[key] = it["id"]


def families(intents: list[dict]) -> dict[str, str]:
    """Intent id -> family id (the smallest id of its twin-linked component)."""
    parent = {it["id"]: it["id"] for it in intents}

    def root(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for it in intents:
        if it["twin_of"] is not None:
            a, b = sorted((root(it["id"]), root(it["twin_of"])))
            parent[b] = a
    return {it["id"]: root(it["id"]) for it in intents}


def deal_parts(intents: list[dict], rng: random.Random) -> dict[str, str]:
    """Intent id -> part (``dev`` / ``test``): families are dealt per domain, alternating, starting on a side
    drawn from `rng`, so twin-linked intents are never split."""
    family = families(intents)
    by_domain: dict[str, list[str]] = {}
    for it in intents:
        members = by_domain.setdefault(it["domain"], [])
        if family[it["id"]] not in members:
            members.append(family[it["id"]])
    part_of_family: dict[str, str] = {}
    turn = rng.randrange(2)
    for domain in sorted(by_domain):
        members = by_domain[domain]
        rng.shuffle(members)
        for fam in members:
            part_of_family[fam] = ("dev", "test")[turn]
            turn ^= 1
    return {it["id"]: part_of_family[family[it["id"]]] for it in intents}


def surface_variants(text: str) -> list[str]:
    """How users type a wording too: trailing punctuation dropped, lower-cased (never `text` itself)."""
    stripped = text.rstrip("?.!").rstrip()
    out = [stripped, text[:1].lower() + text[1:], stripped.lower()]
    return [v for v in dict.fromkeys(out) if v and v != text]


def trace(order: list[str], weight: dict[str, float], wordings: dict[str, list[str]], n_lines: int,
          repeat_share: float, rng: random.Random) -> list[dict]:
    """`n_lines` of ``{"seq", "intent", "prompt"}``. Every intent of `order` appears once; the other fresh lines
    are drawn by `weight`, each a string not seen before (the wordings first, then their surface variants);
    `repeat_share` of the lines repeat an earlier line byte for byte, drawn by `weight` too."""
    pool: dict[str, list[str]] = {}
    used: set[str] = set()
    for intent in order:
        words = wordings[intent][:]
        rng.shuffle(words)
        variants = [v for w in words for v in surface_variants(w)]
        rng.shuffle(variants)
        pool[intent] = [s for s in dict.fromkeys(words + variants) if s not in used]
        used.update(pool[intent])

    n_repeat = round(repeat_share * n_lines)
    if n_lines - n_repeat < len(order):
        raise SystemExit("too few lines to show every intent once")
    count = dict.fromkeys(order, 1)
    for _ in range(n_lines - n_repeat - len(order)):
        open_ids = [i for i in order if count[i] < len(pool[i])]
        count[rng.choices(open_ids, weights=[weight[i] for i in open_ids])[0]] += 1
    fresh = [(i, pool[i][k]) for i in order for k in range(count[i])]
    rng.shuffle(fresh)
    # An intent's first appearance is one of its hand-written wordings, never a surface variant.
    first: dict[str, int] = {}
    for pos, (intent, _) in enumerate(fresh):
        first.setdefault(intent, pos)
    for intent, pos in first.items():
        k = next(k for k, (j, s) in enumerate(fresh) if j == intent and s in wordings[intent])
        fresh[pos], fresh[k] = fresh[k], fresh[pos]

    repeat_slots = set(rng.sample(range(1, n_lines), n_repeat))
    lines: list[dict] = []
    earlier: dict[str, list[str]] = {}
    stream = iter(fresh)
    for seq in range(1, n_lines + 1):
        if seq - 1 in repeat_slots:
            candidates = sorted(earlier)
            intent = rng.choices(candidates, weights=[weight[c] for c in candidates])[0]
            prompt = rng.choice(earlier[intent])
        else:
            intent, prompt = next(stream)
            earlier.setdefault(intent, []).append(prompt)
        lines.append({"seq": seq, "intent": intent, "prompt": prompt})
    return lines


def repeats(lines: list[dict]) -> int:
    """Lines whose prompt is byte-identical to an earlier line's."""
    return len(lines) - len({line["prompt"] for line in lines})


def parse_args(doc: str, lines: int, seed: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--lines", type=int, default=lines)
    parser.add_argument("--seed", type=int, default=seed)
    return parser.parse_args()


def write(lines: list[dict], out: Path, compiled: list[dict], out_intents: Path) -> None:
    """The trace as JSON lines to `out`, the compiled intents as one JSON array to `out_intents`."""
    with out.open("w", encoding="utf-8") as fh:
        for row in lines:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    out_intents.write_text(json.dumps(compiled, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
