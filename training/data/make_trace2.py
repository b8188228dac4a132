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

Usage: python -m training.data.make_trace2 [--lines 800] [--seed 11]
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

from training.data import intent_trace

ROOT = Path(__file__).resolve().parents[2]

SRC = ROOT / "datasets" / "src" / "trace2"
OUT = ROOT / "datasets" / "trace2.jsonl"
OUT_INTENTS = ROOT / "datasets" / "trace2-intents.json"
SEED = 11
N_LINES = 800
REPEAT_SHARE = 0.15


def load_intents(src: Path = SRC) -> list[dict]:
    return intent_trace.load_intents(src)


def split(intents: list[dict], seed: int) -> dict[str, str]:
    """Intent id -> part; the deal starts on a side drawn from `seed`."""
    return intent_trace.deal_parts(intents, random.Random(seed))


def build(intents: list[dict], n_lines: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    parts = split(intents, seed)
    order = [it["id"] for it in intents]
    rng.shuffle(order)
    weight = {intent: 1.0 / (rank + 1) for rank, intent in enumerate(order)}
    wordings = {it["id"]: it["wordings"] for it in intents}
    lines = intent_trace.trace(order, weight, wordings, n_lines, REPEAT_SHARE, rng)
    return [line | {"part": parts[line["intent"]]} for line in lines]


def compiled(intents: list[dict], seed: int) -> list[dict]:
    parts, family = split(intents, seed), intent_trace.families(intents)
    return [{"id": it["id"], "domain": it["domain"], "twin_of": it["twin_of"], "family": family[it["id"]],
             "part": parts[it["id"]], "wordings": it["wordings"]} for it in sorted(intents, key=lambda x: x["id"])]


def main() -> int:
    args = intent_trace.parse_args(__doc__, N_LINES, SEED)
    intents = load_intents()
    lines = build(intents, args.lines, args.seed)
    intent_trace.write(lines, OUT, compiled(intents, args.seed), OUT_INTENTS)
    repeats = intent_trace.repeats(lines)
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
