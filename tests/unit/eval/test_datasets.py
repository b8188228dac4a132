"""Loaders: our JSONL, PAWS/QQP-style TSV, conversations, streams, and bad lines naming file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.datasets import (
    Conversation,
    DatasetError,
    DatasetFormat,
    LabeledPair,
    Message,
    load_clusters,
    load_pairs,
    load_stream,
)

FIXTURES = Path(__file__).parent / "fixtures"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_pairs_keep_every_field() -> None:
    pairs = load_pairs(FIXTURES / "pairs.jsonl")
    assert [p.kind for p in pairs] == ["paraphrase", "paraphrase", "negation", "value_change", "topic_shift",
                                       "unrelated"]
    first = pairs[0]
    assert first == LabeledPair(
        "p1", Conversation.of("How do I cancel my subscription?"),
        Conversation.of("How can I cancel my subscription?"), "paraphrase", True, "billing",
    )
    assert first.a.prompt == "How do I cancel my subscription?"
    assert first.same_context


def test_paws_tsv_maps_label_to_paraphrase_or_unrelated() -> None:
    pairs = load_pairs(FIXTURES / "paws.tsv")
    assert [(p.id, p.kind, p.same_answer) for p in pairs] == [("1", "paraphrase", True), ("2", "unrelated", False)]
    assert pairs[0].b.prompt == "How can I cancel my subscription?"


def test_qqp_tsv_reads_question_columns_and_is_duplicate() -> None:
    pairs = load_pairs(FIXTURES / "qqp.tsv", DatasetFormat.TSV)
    assert [(p.a.prompt, p.same_answer) for p in pairs] == [
        ("How do I learn Python?", True), ("How do I learn Python?", False),
    ]


def test_csv_and_jsonl_with_public_field_names(tmp_path: Path) -> None:
    csv_path = _write(tmp_path, "qqp.csv", 'question1,question2,is_duplicate\n"Hi, there?",Hello?,1\n')
    assert load_pairs(csv_path)[0].a.prompt == "Hi, there?"
    jsonl = _write(tmp_path, "mine.txt", '{"sentence1": "x y", "sentence2": "y x", "label": 0, "kind": "negation"}\n')
    pair = load_pairs(jsonl)[0]
    assert (pair.kind, pair.same_answer, pair.id) == ("negation", False, "mine.txt:1")


def test_known_kind_without_label_implies_the_label(tmp_path: Path) -> None:
    path = _write(tmp_path, "k.jsonl", '{"a": "x", "b": "y", "kind": "small_talk"}\n{"a": "x", "b": "z", '
                  '"kind": "intent_flip"}\n')
    assert [p.same_answer for p in load_pairs(path)] == [True, False]


def test_conversations_split_context_from_prompt() -> None:
    pairs = load_pairs(FIXTURES / "conv.jsonl")
    first, second, third = pairs
    assert first.a.context == (Message("system", "You are a billing assistant."),)
    assert first.a.prompt == "How do I cancel my plan?"
    assert first.same_context
    assert not second.same_context and second.a.prompt == second.b.prompt
    assert not third.same_context


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        pytest.param('{"a": "x", "b": "y", "label": 1}\n{"a": "x", "b": "y", "label": "maybe"}\n', 2,
                     "label must be 0/1", id="bad-label"),
        pytest.param('{"a": "x", "b": "y", "label": 1}\n\n{"a": "x",\n', 3, "not valid JSON", id="bad-json"),
        pytest.param('[1, 2]\n', 1, "expected a JSON object", id="not-an-object"),
        pytest.param('{"a": "x", "label": 1}\n', 1, "'b' must be", id="missing-side"),
        pytest.param('{"a": "x", "b": "y"}\n', 1, "no label", id="no-label"),
        pytest.param('{"a": "x", "b": "  ", "label": 1}\n', 1, "'b' is empty", id="empty-side"),
        pytest.param('{"a": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}], '
                     '"b": "z", "label": 1}\n', 1, "must end with a non-empty user message", id="ends-with-assistant"),
        pytest.param('{"a": [{"role": "robot", "content": "x"}], "b": "z", "label": 1}\n', 1, "role must be",
                     id="bad-role"),
        pytest.param('{"id": "d", "a": "x", "b": "y", "label": 1}\n{"id": "d", "a": "x", "b": "z", "label": 1}\n', 2,
                     "duplicate id 'd' (first on line 1)", id="duplicate-id"),
    ],
)
def test_bad_jsonl_line_names_file_line_and_problem(tmp_path: Path, text: str, line: int, problem: str) -> None:
    path = _write(tmp_path, "bad.jsonl", text)
    with pytest.raises(DatasetError) as caught:
        load_pairs(path)
    assert caught.value.line == line
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_bad_tsv_row_names_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.tsv", "sentence1\tsentence2\tlabel\nx\ty\t1\n\nx\ty\n")
    with pytest.raises(DatasetError) as caught:
        load_pairs(path)
    assert (caught.value.line, caught.value.problem) == (4, "expected 3 columns, got 2")


def test_tsv_header_without_text_columns_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.tsv", "left\tright\tlabel\nx\ty\t1\n")
    with pytest.raises(DatasetError, match="no first text column"):
        load_pairs(path)


def test_empty_and_non_utf8_files_are_dataset_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no pairs"):
        load_pairs(_write(tmp_path, "empty.jsonl", "\n"))
    binary = tmp_path / "latin1.jsonl"
    binary.write_bytes(b'{"a": "x", "b": "y", "label": 1}\n{"a": "caf\xe9", "b": "y", "label": 1}\n')
    with pytest.raises(DatasetError) as caught:
        load_pairs(binary)
    assert caught.value.line == 2


def test_stream_keeps_file_order() -> None:
    requests = load_stream(FIXTURES / "stream.jsonl")
    assert [r.seq for r in requests] == [1, 2, 3, 4, 5, 6]
    assert requests[1].intent == "refund"


def test_stream_seq_must_increase(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.jsonl", '{"seq": 2, "intent": "a", "prompt": "x"}\n{"seq": 1, "intent": "a", '
                  '"prompt": "x"}\n')
    with pytest.raises(DatasetError, match="seq 1 does not follow 2") as caught:
        load_stream(path)
    assert caught.value.line == 2


def test_stream_line_without_prompt_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.jsonl", '{"seq": 1, "intent": "a"}\n')
    with pytest.raises(DatasetError, match="'prompt' must be a non-empty string"):
        load_stream(path)


def test_stream_part_is_read_when_present(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.jsonl", '{"seq": 1, "intent": "a", "prompt": "x", "part": "test"}\n'
                  '{"seq": 2, "intent": "a", "prompt": "y"}\n')
    assert [r.part for r in load_stream(path)] == ["test", ""]


def test_clusters_become_a_seeded_trace_with_one_intent_per_cluster(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.json", '[["what is x?", "x meaning?", "what is x?"], ["how to install y"]]')
    requests = load_clusters(path, seed=3)
    assert sorted(r.prompt for r in requests) == ["how to install y", "what is x?", "x meaning?"]
    assert [r.seq for r in requests] == [1, 2, 3]
    by_prompt = {r.prompt: r.intent for r in requests}
    assert by_prompt["what is x?"] == by_prompt["x meaning?"] != by_prompt["how to install y"]
    assert load_clusters(path, seed=3) == requests


@pytest.mark.parametrize("text", ['{"a": 1}', "[]", '[["ok"], [3]]', "[oops"], ids=["object", "empty", "number",
                                                                                  "bad-json"])
def test_malformed_cluster_file_is_a_dataset_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(DatasetError):
        load_clusters(_write(tmp_path, "c.json", text))
