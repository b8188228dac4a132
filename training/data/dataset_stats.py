"""Print markdown count tables for the files in datasets/ (pasted into datasets/README.md).

Usage: python -m training.data.dataset_stats
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from training.data import intent_trace

ROOT = Path(__file__).resolve().parents[2]

DATA = ROOT / "datasets"
PAIR_KINDS = ["paraphrase", "negation", "value_change", "topic_shift", "unrelated"]
CONV_KINDS = ["reworded_context", "irrelevant_turn", "small_talk", "entity_change", "detail_change", "intent_flip"]


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line]


def table(prefix: str, kinds: list[str]) -> str:
    dev, test = load(f"{prefix}-dev.jsonl"), load(f"{prefix}-test.jsonl")
    domains = sorted({r["domain"] for r in dev + test})
    head = "| domain | " + " | ".join(f"{k} (dev/test)" for k in kinds) + " | total (dev/test) |"
    lines = [head, "|" + "---|" * (len(kinds) + 2)]

    def cell(rows_dev: list[dict], rows_test: list[dict], kind: str | None) -> str:
        d = sum(1 for r in rows_dev if kind is None or r["kind"] == kind)
        t = sum(1 for r in rows_test if kind is None or r["kind"] == kind)
        return f"{d}/{t}"

    for dom in [*domains, "**all**"]:
        rd = dev if dom == "**all**" else [r for r in dev if r["domain"] == dom]
        rt = test if dom == "**all**" else [r for r in test if r["domain"] == dom]
        cells = [cell(rd, rt, k) for k in kinds] + [cell(rd, rt, None)]
        lines.append(f"| {dom} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def stream_stats() -> str:
    rows = load("stream.jsonl")
    intents = json.loads((DATA / "intents.json").read_text(encoding="utf-8"))
    repeats = intent_trace.repeats(rows)
    per_intent = Counter(r["intent"] for r in rows)
    twins = sum(1 for it in intents if it["twin_of"])
    domains = Counter(it["domain"] for it in intents)
    top = ", ".join(f"{k} {v}" for k, v in per_intent.most_common(5))
    rare = sum(1 for v in per_intent.values() if v <= 2)
    return "\n".join(
        [
            f"- lines: {len(rows)}; distinct prompts: {len(rows) - repeats}",
            f"- intents: {len(intents)} authored, {len(per_intent)} present in the trace, over {len(domains)} domains",
            f"- intents marked `twin_of`: {twins}",
            f"- byte-identical repeats of an earlier line: {repeats} ({repeats / len(rows):.1%})",
            f"- most frequent intents: {top}; {rare} intents appear at most twice",
        ]
    )


def main() -> None:
    print("### pairs-dev.jsonl / pairs-test.jsonl\n")
    print(table("pairs", PAIR_KINDS))
    print("\n### conv-dev.jsonl / conv-test.jsonl\n")
    print(table("conv", CONV_KINDS))
    print("\n### stream.jsonl\n")
    print(stream_stats())


if __name__ == "__main__":
    main()
