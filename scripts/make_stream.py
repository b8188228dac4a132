"""Generate datasets/stream.jsonl, a replay trace of prompts in arrival order.

Input: ``datasets/src/intents/<domain>.txt`` (hand-written by the Deja team)::

    ## intent_id [twin_of=other_intent_id]
    - wording 1
    - wording 2

Every wording of an intent has the same answer; different intents never share
an answer.  ``twin_of`` marks a near twin: an intent one negation or one value
away from another one (enable/disable 2FA, Roth limit 2024/2025, ...).

Output:
* ``datasets/stream.jsonl``: ``{"seq", "intent", "prompt"}`` per line.
* ``datasets/intents.json``: the compiled intents (id, domain, twin_of, wordings).

How the trace is built (fully determined by SEED):
1. Intents get a Zipf-like popularity (weight 1/rank**ZIPF_S); intents with
   more wordings are given the higher ranks, ties broken by a seeded shuffle.
2. Every intent appears at least once; the remaining "fresh" lines are drawn
   from the popularity weights.  A fresh line is always a new string: first
   the hand-written wordings, then light surface variants of them (lower-cased,
   trailing punctuation dropped), as real users type.  An intent never gets
   more fresh lines than it has distinct strings.
3. REPEAT_SHARE of the lines are byte-identical repeats of an earlier line,
   picked with the same popularity skew, at random positions.

4. Every line carries the ``part`` (``dev`` / ``test``) of its intent: families (an intent and its
   ``twin_of`` links) are dealt per domain alternately to dev and test with their own seeded RNG (the same
   rule as ``make_trace2.py``), so replaying ``--part test`` replays intents never tuned on.

Usage: python scripts/make_stream.py [--lines 600] [--seed 7]
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
SRC = ROOT / "datasets" / "src" / "intents"
OUT = ROOT / "datasets" / "stream.jsonl"
OUT_INTENTS = ROOT / "datasets" / "intents.json"
SEED = 7
N_LINES = 600
REPEAT_SHARE = 0.15
ZIPF_S = 1.0


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def load_intents() -> list[dict]:
    intents: list[dict] = []
    for path in sorted(SRC.glob("*.txt")):
        cur: dict | None = None
        for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            line = raw.strip()
            if not line or (line.startswith("#") and not line.startswith("##")):
                continue
            if line.startswith("## "):
                parts = line[3:].split()
                cur = {"id": parts[0], "domain": path.stem, "twin_of": None, "wordings": []}
                for extra in parts[1:]:
                    key, _, val = extra.partition("=")
                    if key != "twin_of" or not val:
                        raise SystemExit(f"{path.name}:{lineno}: bad header option {extra!r}")
                    cur["twin_of"] = val
                intents.append(cur)
            elif line.startswith("- ") and cur is not None:
                cur["wordings"].append(line[2:].strip())
            else:
                raise SystemExit(f"{path.name}:{lineno}: cannot parse {raw!r}")
    validate(intents)
    return intents


def validate(intents: list[dict]) -> None:
    ids = [i["id"] for i in intents]
    dup = [k for k, v in Counter(ids).items() if v > 1]
    if dup:
        raise SystemExit(f"duplicate intent ids: {dup}")
    known = set(ids)
    seen: dict[str, str] = {}
    for it in intents:
        if not 3 <= len(it["wordings"]) <= 8:
            raise SystemExit(f"{it['id']}: needs 3-8 wordings, has {len(it['wordings'])}")
        if it["twin_of"] and it["twin_of"] not in known:
            raise SystemExit(f"{it['id']}: twin_of unknown intent {it['twin_of']!r}")
        if it["twin_of"] == it["id"]:
            raise SystemExit(f"{it['id']}: twin_of itself")
        for w in it["wordings"]:
            key = norm(w).rstrip("?.! ")
            if key in seen:
                raise SystemExit(f"wording {w!r} used by {seen[key]} and {it['id']}")
            seen[key] = it["id"]


def surface_variants(text: str) -> list[str]:
    stripped = text.rstrip("?.!").rstrip()
    out = [text, stripped, text[:1].lower() + text[1:], stripped.lower()]
    return list(dict.fromkeys(v for v in out if v))


def build(intents: list[dict], n_lines: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    order = intents[:]
    rng.shuffle(order)
    order.sort(key=lambda it: -len(it["wordings"]))  # stable: shuffle breaks ties
    weight = {it["id"]: 1.0 / (rank + 1) ** ZIPF_S for rank, it in enumerate(order)}
    written = {it["id"]: set(it["wordings"]) for it in intents}

    # distinct strings per intent: wordings first (random order), then variants
    pool: dict[str, list[str]] = {}
    used_global: set[str] = set()
    for it in order:
        words = it["wordings"][:]
        rng.shuffle(words)
        variants = [v for w in words for v in surface_variants(w)[1:]]
        rng.shuffle(variants)
        strings = []
        for s in words + variants:
            if s not in used_global:
                strings.append(s)
                used_global.add(s)
        pool[it["id"]] = strings

    n_repeat = round(REPEAT_SHARE * n_lines)
    n_fresh = n_lines - n_repeat
    if n_fresh < len(order):
        raise SystemExit("too few lines to show every intent once")
    fresh_count = {it["id"]: 1 for it in order}
    ids = [it["id"] for it in order]
    for _ in range(n_fresh - len(order)):
        open_ids = [i for i in ids if fresh_count[i] < len(pool[i])]
        pick = rng.choices(open_ids, weights=[weight[i] for i in open_ids])[0]
        fresh_count[pick] += 1

    fresh = [(i, pool[i][k]) for i in ids for k in range(fresh_count[i])]
    rng.shuffle(fresh)
    # make sure an intent's first appearance uses a hand-written wording, not a variant
    first_seen: dict[str, int] = {}
    for pos, (i, _) in enumerate(fresh):
        first_seen.setdefault(i, pos)
    for i, pos in first_seen.items():
        k = next(k for k, (j, s) in enumerate(fresh) if j == i and s in written[i])
        fresh[pos], fresh[k] = fresh[k], fresh[pos]

    repeat_slots = set(rng.sample(range(1, n_lines), n_repeat))
    lines: list[dict] = []
    it_fresh = iter(fresh)
    for seq in range(n_lines):
        if seq in repeat_slots:
            # popular intents are repeated more; any earlier wording of the intent may recur
            earlier: dict[str, list[str]] = {}
            for x in lines:
                seen_prompts = earlier.setdefault(x["intent"], [])
                if x["prompt"] not in seen_prompts:
                    seen_prompts.append(x["prompt"])
            cands = sorted(earlier)
            intent = rng.choices(cands, weights=[weight[c] for c in cands])[0]
            prompt = rng.choice(earlier[intent])
        else:
            intent, prompt = next(it_fresh)
        lines.append({"seq": seq + 1, "intent": intent, "prompt": prompt})
    parts = split(intents, seed)
    return [line | {"part": parts[line["intent"]]} for line in lines]


def split(intents: list[dict], seed: int) -> dict[str, str]:
    """Intent id -> part (``dev`` / ``test``); twin-linked families are never split."""
    parent = {it["id"]: it["id"] for it in intents}

    def root(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for it in intents:
        if it["twin_of"]:
            a, b = sorted((root(it["id"]), root(it["twin_of"])))
            parent[b] = a
    rng = random.Random(f"split-{seed}")
    by_domain: dict[str, list[str]] = {}
    for it in intents:
        families = by_domain.setdefault(it["domain"], [])
        if root(it["id"]) not in families:
            families.append(root(it["id"]))
    part_of: dict[str, str] = {}
    turn = rng.randrange(2)
    for domain in sorted(by_domain):
        families = by_domain[domain]
        rng.shuffle(families)
        for family in families:
            part_of[family] = ("dev", "test")[turn]
            turn ^= 1
    return {it["id"]: part_of[root(it["id"])] for it in intents}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=N_LINES)
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args()
    intents = load_intents()
    lines = build(intents, args.lines, args.seed)

    with OUT.open("w", encoding="utf-8") as fh:
        for row in lines:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    compiled = [
        {"id": it["id"], "domain": it["domain"], "twin_of": it["twin_of"], "wordings": it["wordings"]}
        for it in sorted(intents, key=lambda it: it["id"])
    ]
    OUT_INTENTS.write_text(json.dumps(compiled, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")

    seen: set[str] = set()
    repeats = 0
    for row in lines:
        repeats += row["prompt"] in seen
        seen.add(row["prompt"])
    per_intent = Counter(r["intent"] for r in lines)
    twins = sum(1 for it in intents if it["twin_of"])
    print(f"{len(lines)} lines, {len(per_intent)} intents seen of {len(intents)}, twins {twins}")
    print(f"byte-identical repeats: {repeats} ({repeats / len(lines):.1%})")
    print("top intents: " + ", ".join(f"{k}={v}" for k, v in per_intent.most_common(8)))
    print(f"wrote {OUT.relative_to(ROOT)} and {OUT_INTENTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
