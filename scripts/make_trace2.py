"""Generate datasets/trace2.jsonl, a second replay trace written by a different hand than stream.jsonl.

Input: ``datasets/src/trace2/<domain>.txt`` (same format as ``src/intents``)::

    ## intent_id [twin_of=other_intent_id]
    - wording 1
    - wording 2

The wordings are chatbot traffic as people type it: terse search-style queries, typos, abbreviations and
informal names, long pasted questions quoting error messages, and near-twin intents that need another answer
(freeze / unfreeze, upgrade / downgrade, oldest / newest first, kids / seniors, NYC->LA / LA->NYC, 5% / 7%).

Output:
* ``datasets/trace2.jsonl``: ``{"seq", "intent", "prompt", "part"}`` per line, ``part`` is ``dev`` or ``test``.
* ``datasets/trace2-intents.json``: the compiled intents (id, domain, twin_of, family, part, wordings).

How the trace is built (fully determined by SEED):
1. Families: an intent and its near twins (``twin_of`` links, both ways) form one family. Families are shuffled
   and dealt per domain alternately to ``test`` and ``dev``, so about half the intents of every domain are in
   the test part and no test intent (nor its twin) is ever seen in dev. Replaying ``--part test`` alone is
   replaying traffic nobody tuned on.
2. Intents get Zipf-like popularity (weight 1/rank); ranks are a seeded shuffle, so popular intents are spread
   across domains and parts.
3. Every intent appears at least once; the other fresh lines are drawn by popularity. A fresh line is a string
   not seen before: the hand-written wordings first, then surface variants (lower case, trailing ``?``/``.``
   dropped). REPEAT_SHARE of the lines are byte-identical repeats of an earlier line of the same intent.

Usage: python scripts/make_trace2.py [--lines 800] [--seed 11]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "datasets" / "src" / "trace2"
OUT = ROOT / "datasets" / "trace2.jsonl"
OUT_INTENTS = ROOT / "datasets" / "trace2-intents.json"
SEED = 11
N_LINES = 800
REPEAT_SHARE = 0.15


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip("?.! ")


def load_intents(src: Path = SRC) -> list[dict]:
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
            raise SystemExit(f"{it['id']}: bad twin_of {it['twin_of']!r}")
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


def split(intents: list[dict], seed: int) -> dict[str, str]:
    """Intent id -> part. Families are dealt per domain, alternating, starting on a seeded side."""
    rng = random.Random(seed)
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
    stripped = text.rstrip("?.!").rstrip()
    out = [stripped, text[:1].lower() + text[1:], stripped.lower()]
    return [v for v in dict.fromkeys(out) if v and v != text]


def build(intents: list[dict], n_lines: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    parts = split(intents, seed)
    order = [it["id"] for it in intents]
    rng.shuffle(order)
    weight = {intent: 1.0 / (rank + 1) for rank, intent in enumerate(order)}
    wordings = {it["id"]: it["wordings"] for it in intents}
    pool: dict[str, list[str]] = {}
    used: set[str] = set()
    for intent in order:
        words = wordings[intent][:]
        rng.shuffle(words)
        variants = [v for w in words for v in surface_variants(w)]
        rng.shuffle(variants)
        pool[intent] = [s for s in dict.fromkeys(words + variants) if s not in used]
        used.update(pool[intent])

    n_repeat = round(REPEAT_SHARE * n_lines)
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
        lines.append({"seq": seq, "intent": intent, "prompt": prompt, "part": parts[intent]})
    return lines


def compiled(intents: list[dict], seed: int) -> list[dict]:
    parts, family = split(intents, seed), families(intents)
    return [{"id": it["id"], "domain": it["domain"], "twin_of": it["twin_of"], "family": family[it["id"]],
             "part": parts[it["id"]], "wordings": it["wordings"]} for it in sorted(intents, key=lambda x: x["id"])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=N_LINES)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    intents = load_intents()
    lines = build(intents, args.lines, args.seed)
    with OUT.open("w", encoding="utf-8") as fh:
        for row in lines:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    OUT_INTENTS.write_text(json.dumps(compiled(intents, args.seed), ensure_ascii=False, indent=1) + "\n",
                           encoding="utf-8")
    repeats = len(lines) - len({r["prompt"] for r in lines})
    per_part = Counter(r["part"] for r in lines)
    intents_per_part = Counter(p for p in split(intents, args.seed).values())
    print(f"{len(lines)} lines, {len(intents)} intents, twins {sum(1 for it in intents if it['twin_of'])}")
    print(f"byte-identical repeats: {repeats} ({repeats / len(lines):.1%})")
    print(f"lines per part: {dict(per_part)}; intents per part: {dict(intents_per_part)}")
    print("top intents: " + ", ".join(f"{k}={v}" for k, v in Counter(r["intent"] for r in lines).most_common(6)))
    print(f"wrote {OUT.relative_to(ROOT)} and {OUT_INTENTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
