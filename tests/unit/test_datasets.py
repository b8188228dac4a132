"""Sanity checks for the hand-written datasets in datasets/ (stdlib + pytest only)."""

from __future__ import annotations

import importlib
import json
import re
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "datasets"

PAIR_KINDS = {"paraphrase", "negation", "value_change", "topic_shift", "unrelated"}
CONV_SAME = {"reworded_context", "irrelevant_turn", "small_talk"}
CONV_DIFF = {"entity_change", "detail_change", "intent_flip"}
FIELDS = {"id", "a", "b", "kind", "same_answer", "domain"}
ROLES = {"system", "user", "assistant"}


def load_jsonl(name: str) -> list[dict]:
    path = DATA / name
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        assert line.strip(), f"{name}:{lineno} is blank"
        rows.append(json.loads(line))
    return rows


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip("?.! ")


def pair_key(row: dict) -> tuple[str, str]:
    if isinstance(row["a"], list):
        a = json.dumps([[m["role"], norm(m["content"])] for m in row["a"]])
        b = json.dumps([[m["role"], norm(m["content"])] for m in row["b"]])
    else:
        a, b = norm(row["a"]), norm(row["b"])
    return (a, b) if a <= b else (b, a)


def load_script(name: str) -> ModuleType:
    return importlib.import_module(f"training.data.{name}")


@pytest.fixture(scope="module")
def pairs() -> dict[str, list[dict]]:
    return {"dev": load_jsonl("pairs-dev.jsonl"), "test": load_jsonl("pairs-test.jsonl")}


@pytest.fixture(scope="module")
def convs() -> dict[str, list[dict]]:
    return {"dev": load_jsonl("conv-dev.jsonl"), "test": load_jsonl("conv-test.jsonl")}


@pytest.fixture(scope="module")
def stream() -> list[dict]:
    return load_jsonl("stream.jsonl")


@pytest.fixture(scope="module")
def intents() -> list[dict]:
    data = json.loads((DATA / "intents.json").read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


# --------------------------------------------------------------------------- general
def test_datasets_is_not_a_python_package() -> None:
    assert not (DATA / "__init__.py").exists()


def test_ids_unique_across_all_files(pairs: dict[str, list[dict]], convs: dict[str, list[dict]]) -> None:
    ids = [r["id"] for split in (pairs, convs) for rows in split.values() for r in rows]
    dupes = [k for k, v in Counter(ids).items() if v > 1]
    assert not dupes, dupes


# --------------------------------------------------------------------------- pairs
def test_pairs_schema(pairs: dict[str, list[dict]]) -> None:
    for split, rows in pairs.items():
        for r in rows:
            assert set(r) == FIELDS, (split, r.get("id"), set(r) ^ FIELDS)
            assert isinstance(r["id"], str) and r["id"]
            assert isinstance(r["a"], str) and r["a"].strip()
            assert isinstance(r["b"], str) and r["b"].strip()
            assert norm(r["a"]) != norm(r["b"]), r["id"]
            assert r["kind"] in PAIR_KINDS, r["id"]
            assert isinstance(r["same_answer"], bool)
            assert r["same_answer"] == (r["kind"] == "paraphrase"), r["id"]
            assert isinstance(r["domain"], str) and re.fullmatch(r"[a-z_]+", r["domain"]), r["id"]


def test_pairs_counts_and_mix(pairs: dict[str, list[dict]]) -> None:
    rows = pairs["dev"] + pairs["test"]
    assert len(rows) >= 600
    assert len({r["domain"] for r in rows}) >= 12
    kinds = Counter(r["kind"] for r in rows)
    assert set(kinds) == PAIR_KINDS
    share = {k: v / len(rows) for k, v in kinds.items()}
    assert 0.28 <= share["paraphrase"] <= 0.42
    assert 0.15 <= share["negation"] <= 0.25
    assert 0.20 <= share["value_change"] <= 0.32
    assert 0.06 <= share["topic_shift"] <= 0.14
    assert 0.06 <= share["unrelated"] <= 0.14


def test_pairs_split_ratio(pairs: dict[str, list[dict]]) -> None:
    n_dev, n_test = len(pairs["dev"]), len(pairs["test"])
    assert 0.52 <= n_dev / (n_dev + n_test) <= 0.68
    for split in ("dev", "test"):
        assert {r["kind"] for r in pairs[split]} == PAIR_KINDS
        assert len({r["domain"] for r in pairs[split]}) >= 12


def test_pairs_long_hard_negatives(pairs: dict[str, list[dict]]) -> None:
    rows = pairs["dev"] + pairs["test"]
    long_hard = [
        r
        for r in rows
        if r["kind"] in ("negation", "value_change")
        and 40 <= len(r["a"].split()) <= 120
        and 40 <= len(r["b"].split()) <= 120
    ]
    assert len(long_hard) >= 40


def test_no_pair_shared_between_dev_and_test(pairs: dict[str, list[dict]]) -> None:
    dev = {pair_key(r) for r in pairs["dev"]}
    test = {pair_key(r) for r in pairs["test"]}
    assert not dev & test


def test_no_prompt_shared_between_dev_and_test(pairs: dict[str, list[dict]]) -> None:
    """Families of near-identical pairs stay in one split, so test prompts are unseen."""
    dev = {norm(r[s]) for r in pairs["dev"] for s in ("a", "b")}
    test = {norm(r[s]) for r in pairs["test"] for s in ("a", "b")}
    assert not dev & test, sorted(dev & test)[:5]


def test_no_duplicate_pairs_within_a_file(pairs: dict[str, list[dict]]) -> None:
    for split, rows in pairs.items():
        keys = [pair_key(r) for r in rows]
        assert len(keys) == len(set(keys)), split


# --------------------------------------------------------------------------- conversations
def check_messages(msgs: object, rid: str) -> None:
    assert isinstance(msgs, list), rid
    assert 2 <= len(msgs) <= 6, rid
    for m in msgs:
        assert isinstance(m, dict) and set(m) == {"role", "content"}, rid
        assert m["role"] in ROLES, rid
        assert isinstance(m["content"], str) and m["content"].strip(), rid
    assert msgs[-1]["role"] == "user", f"{rid} does not end with a user message"
    assert all(m["role"] != "system" for m in msgs[1:]), f"{rid}: system message not first"


def test_conv_schema(convs: dict[str, list[dict]]) -> None:
    for split, rows in convs.items():
        for r in rows:
            assert set(r) == FIELDS, (split, r.get("id"))
            check_messages(r["a"], r["id"])
            check_messages(r["b"], r["id"])
            assert r["a"] != r["b"], r["id"]
            assert r["kind"] in CONV_SAME | CONV_DIFF, r["id"]
            assert isinstance(r["same_answer"], bool)
            assert r["same_answer"] == (r["kind"] in CONV_SAME), r["id"]
            assert isinstance(r["domain"], str) and r["domain"], r["id"]


def test_conv_counts(convs: dict[str, list[dict]]) -> None:
    rows = convs["dev"] + convs["test"]
    assert len(rows) >= 240
    assert len({r["domain"] for r in rows}) >= 8
    assert {r["kind"] for r in rows} == CONV_SAME | CONV_DIFF
    same = sum(r["same_answer"] for r in rows) / len(rows)
    assert 0.4 <= same <= 0.6
    n_dev = len(convs["dev"])
    assert 0.52 <= n_dev / len(rows) <= 0.68


def test_conv_has_identical_last_message_with_different_context(convs: dict[str, list[dict]]) -> None:
    rows = convs["dev"] + convs["test"]
    hard = [r for r in rows if not r["same_answer"] and r["a"][-1]["content"] == r["b"][-1]["content"]]
    assert len(hard) >= 30


def test_no_conv_pair_shared_between_dev_and_test(convs: dict[str, list[dict]]) -> None:
    dev = {pair_key(r) for r in convs["dev"]}
    test = {pair_key(r) for r in convs["test"]}
    assert not dev & test


# --------------------------------------------------------------------------- stream
def test_stream_schema_and_order(stream: list[dict]) -> None:
    assert len(stream) >= 500
    for i, r in enumerate(stream):
        assert set(r) == {"seq", "intent", "prompt", "part"} and r["part"] in {"dev", "test"}
        assert isinstance(r["seq"], int) and not isinstance(r["seq"], bool)
        assert isinstance(r["intent"], str) and r["intent"]
        assert isinstance(r["prompt"], str) and r["prompt"].strip()
        if i:
            assert r["seq"] > stream[i - 1]["seq"]


def test_stream_intents_and_repeats(stream: list[dict], intents: list[dict]) -> None:
    seen_intents = {r["intent"] for r in stream}
    assert len(seen_intents) >= 100
    known = {it["id"] for it in intents}
    assert seen_intents <= known
    seen: set[str] = set()
    repeats = 0
    for r in stream:
        repeats += r["prompt"] in seen
        seen.add(r["prompt"])
    assert 0.10 <= repeats / len(stream) <= 0.20


def test_stream_split_keeps_twin_families_together(stream: list[dict], intents: list[dict]) -> None:
    part = {r["intent"]: r["part"] for r in stream}
    assert len(part) == len({(r["intent"], r["part"]) for r in stream})  # one part per intent
    for it in intents:
        if it["twin_of"]:
            assert part[it["id"]] == part[it["twin_of"]], it["id"]
    assert 0.35 <= sum(r["part"] == "test" for r in stream) / len(stream) <= 0.65


def test_stream_prompt_maps_to_one_intent(stream: list[dict]) -> None:
    owner: dict[str, str] = {}
    for r in stream:
        key = norm(r["prompt"])
        assert owner.setdefault(key, r["intent"]) == r["intent"], r["prompt"]


def test_intents_file(intents: list[dict]) -> None:
    ids = [it["id"] for it in intents]
    assert len(ids) == len(set(ids)) >= 100
    known = set(ids)
    for it in intents:
        assert set(it) == {"id", "domain", "twin_of", "wordings"}
        assert 3 <= len(it["wordings"]) <= 8, it["id"]
        assert it["twin_of"] is None or (it["twin_of"] in known and it["twin_of"] != it["id"])
    assert sum(it["twin_of"] is not None for it in intents) >= 30


def test_twins_appear_in_stream(stream: list[dict], intents: list[dict]) -> None:
    seen = {r["intent"] for r in stream}
    for it in intents:
        if it["twin_of"]:
            assert it["id"] in seen and it["twin_of"] in seen, it["id"]


def test_stream_does_not_reuse_pair_test_sentences(stream: list[dict], pairs: dict[str, list[dict]]) -> None:
    test_prompts = {norm(r[s]) for r in pairs["test"] for s in ("a", "b")}
    clash = {r["prompt"] for r in stream if norm(r["prompt"]) in test_prompts}
    assert not clash, sorted(clash)


# --------------------------------------------------------------------------- reproducibility
def test_stream_is_reproducible(stream: list[dict]) -> None:
    mod = load_script("make_stream")
    rebuilt = mod.build(mod.load_intents(), mod.N_LINES, mod.SEED)
    assert rebuilt == stream


def test_pairs_and_convs_match_sources(pairs: dict[str, list[dict]], convs: dict[str, list[dict]]) -> None:
    mod = load_script("build_datasets")
    keys = ["id", "a", "b", "kind", "same_answer", "domain"]

    def project(rows: list[dict]) -> list[dict]:
        return sorted(({k: r[k] for k in keys} for r in rows), key=lambda r: r["id"])

    pair_fams = mod.read_pair_sources()
    mod.assign_ids("p", pair_fams)
    p_dev, p_test = mod.split_families(mod.merge_families(pair_fams), mod.SEED)
    assert project(p_dev) == project(pairs["dev"])
    assert project(p_test) == project(pairs["test"])

    conv_fams = mod.read_conv_sources()
    mod.assign_ids("c", conv_fams)
    c_dev, c_test = mod.split_families(mod.merge_families(conv_fams), mod.SEED + 1)
    assert project(c_dev) == project(convs["dev"])
    assert project(c_test) == project(convs["test"])


# --------------------------------------------------------------------------- trace2 (second hand)
@pytest.fixture(scope="module")
def trace2() -> list[dict]:
    return load_jsonl("trace2.jsonl")


@pytest.fixture(scope="module")
def trace2_intents() -> list[dict]:
    return json.loads((DATA / "trace2-intents.json").read_text(encoding="utf-8"))


def test_trace2_schema_size_and_repeats(trace2: list[dict], trace2_intents: list[dict]) -> None:
    assert len(trace2) >= 800 and len(trace2_intents) >= 150
    assert [r["seq"] for r in trace2] == list(range(1, len(trace2) + 1))
    for r in trace2:
        assert set(r) == {"seq", "intent", "prompt", "part"} and r["part"] in {"dev", "test"}
    repeats = len(trace2) - len({r["prompt"] for r in trace2})
    assert 0.10 <= repeats / len(trace2) <= 0.20
    assert {r["intent"] for r in trace2} == {it["id"] for it in trace2_intents}


def test_trace2_split_keeps_twin_families_together(trace2: list[dict], trace2_intents: list[dict]) -> None:
    part = {it["id"]: it["part"] for it in trace2_intents}
    for it in trace2_intents:
        if it["twin_of"]:
            assert part[it["twin_of"]] == it["part"], it["id"]
    for r in trace2:
        assert r["part"] == part[r["intent"]]
    test_share = sum(r["part"] == "test" for r in trace2) / len(trace2)
    assert 0.35 <= test_share <= 0.65
    dev_prompts = {norm(r["prompt"]) for r in trace2 if r["part"] == "dev"}
    assert not {norm(r["prompt"]) for r in trace2 if r["part"] == "test"} & dev_prompts


def test_trace2_is_another_hand_than_stream(trace2: list[dict], stream: list[dict]) -> None:
    theirs = {norm(r["prompt"]) for r in stream}
    assert not [r["prompt"] for r in trace2 if norm(r["prompt"]) in theirs]


def test_trace2_is_reproducible(trace2: list[dict]) -> None:
    mod = load_script("make_trace2")
    assert mod.build(mod.load_intents(), mod.N_LINES, mod.SEED) == trace2
