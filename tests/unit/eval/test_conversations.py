"""`eval conversations`: conversation pairs decided at a policy, counted per kind, misses named by reason."""

from __future__ import annotations

from eval.conversations import kind_table, miss_table, run_conversations
from eval.datasets import Conversation, LabeledPair, Message
from eval.product import matcher_for
from index.embedding.embedder import HashEmbedder
from index.match.decide import Deciders
from index.match.policy import DecisionMode, MatchPolicy

POLICY = MatchPolicy(0.9, decision=DecisionMode.THRESHOLD)
FOLLOW_UP = "Can you chase it for me?"


def chat(*texts: str) -> Conversation:
    roles = ("user", "assistant")
    return Conversation(tuple(Message(roles[i % 2], t) for i, t in enumerate((*texts, FOLLOW_UP))))


ORDER = ("My order 10427 is late.", "Order 10427 left with DHL and is delayed.")
PAIRS = (
    LabeledPair("same", chat(*ORDER), chat("Hi! Hope you are well. My order 10427 is late.", ORDER[1]),
                "chatter", True),
    LabeledPair("other", chat(*ORDER), chat("My order 10247 is late.", "Order 10247 left with DHL and is delayed."),
                "value_changed", False),
)


def test_same_answer_and_must_not_pairs_are_counted_apart_with_the_reason_of_each_miss() -> None:
    report = run_conversations(PAIRS, HashEmbedder(dim=256), matcher_for(POLICY, Deciders()))
    assert report.served_rate(True) == 1.0
    assert report.served_rate(False) == 0.0
    assert [o.why for o in report.outcomes] == ["hit", "context:value"]
    assert report.kinds() == [("chatter", True, 1, 1), ("value_changed", False, 1, 0)]
    assert kind_table(report, "t").rows[-2:] == (("all same-answer", "", "", "100.0%"),
                                                 ("all must-not", "", "", "0.0%"))
    assert miss_table(report).rows == ()
