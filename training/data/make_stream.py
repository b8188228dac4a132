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

Usage: python -m training.data.make_stream [--lines 600] [--seed 7]
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

from training.data import intent_trace

ROOT = Path(__file__).resolve().parents[2]

SRC = ROOT / "datasets" / "src" / "intents"
OUT = ROOT / "datasets" / "stream.jsonl"
OUT_INTENTS = ROOT / "datasets" / "intents.json"
SEED = 7
N_LINES = 600
REPEAT_SHARE = 0.15
ZIPF_S = 1.0


def load_intents() -> list[dict]:
    return intent_trace.load_intents(SRC)


def build(intents: list[dict], n_lines: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    order = intents[:]
    rng.shuffle(order)
    order.sort(key=lambda it: -len(it["wordings"]))  # stable: shuffle breaks ties
    weight = {it["id"]: 1.0 / (rank + 1) ** ZIPF_S for rank, it in enumerate(order)}
    wordings = {it["id"]: it["wordings"] for it in intents}
    lines = intent_trace.trace([it["id"] for it in order], weight, wordings, n_lines, REPEAT_SHARE, rng)
    parts = split(intents, seed)
    return [line | {"part": parts[line["intent"]]} for line in lines]


def split(intents: list[dict], seed: int) -> dict[str, str]:
    """Intent id -> part (``dev`` / ``test``); twin-linked families are never split."""
    return intent_trace.deal_parts(intents, random.Random(f"split-{seed}"))


def main() -> int:
    args = intent_trace.parse_args(__doc__, N_LINES, SEED)
    intents = load_intents()
    lines = build(intents, args.lines, args.seed)
    compiled = [{"id": it["id"], "domain": it["domain"], "twin_of": it["twin_of"], "wordings": it["wordings"]}
                for it in sorted(intents, key=lambda it: it["id"])]
    intent_trace.write(lines, OUT, compiled, OUT_INTENTS)
    repeats = intent_trace.repeats(lines)
    per_intent = Counter(r["intent"] for r in lines)
    twins = sum(1 for it in intents if it["twin_of"])
    print(f"{len(lines)} lines, {len(per_intent)} intents seen of {len(intents)}, twins {twins}")
    print(f"byte-identical repeats: {repeats} ({repeats / len(lines):.1%})")
    print("top intents: " + ", ".join(f"{k}={v}" for k, v in per_intent.most_common(8)))
    print(f"wrote {OUT.relative_to(ROOT)} and {OUT_INTENTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
