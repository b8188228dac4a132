"""Build datasets/pairs-*.jsonl and datasets/conv-*.jsonl from the hand-written sources.

Sources (all sentences written by the Deja team):

* ``datasets/src/pairs/<domain>.txt`` -- single-turn pairs, one per line::

      KIND ||| prompt a ||| prompt b

  KIND is P (paraphrase), N (negation), V (value_change), T (topic_shift) or
  U (unrelated).  Blank lines separate *families* (pairs built around the same
  base prompt); a family always lands in a single split.  ``#`` starts a comment.

* ``datasets/src/conv/<domain>.txt`` -- conversation pairs::

      @@ family-name
      == base
      S: system message
      U: user message
      A: assistant message
      U: final user message
      == reworded_context
      U: ...

  Every section after a ``== base`` section is paired with the most recent base
  (a = base, b = variant) and its header names the kind.  A section header may
  end with ``swap`` (``== entity_change swap``) to put the variant in ``a``.

Families that share a prompt, or contain near-identical prompts (word-set
Jaccard >= 0.8), are merged.  The split is deterministic (SEED below): families
are shuffled, assigned greedily to dev (~60%) or test (~40%) and then refined by
a local search so that every (domain, kind) cell stays close to the 60/40 ratio.

Usage:  python -m training.data.build_datasets [--check]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "datasets"
SRC = DATA / "src"
SEED = 20240611
DEV_SHARE = 0.6

PAIR_KINDS = {
    "P": "paraphrase",
    "N": "negation",
    "V": "value_change",
    "T": "topic_shift",
    "U": "unrelated",
}
CONV_KINDS_SAME = {"reworded_context", "irrelevant_turn", "small_talk"}
CONV_KINDS_DIFF = {"entity_change", "detail_change", "intent_flip"}
ROLES = {"S": "system", "U": "user", "A": "assistant"}


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


# --------------------------------------------------------------------------- pairs
def read_pair_sources() -> list[list[dict]]:
    """Return families (lists of pair dicts without ids)."""
    families: list[list[dict]] = []
    for path in sorted((SRC / "pairs").glob("*.txt")):
        domain = path.stem
        current: list[dict] = []
        for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            line = raw.strip()
            if line.startswith("#"):
                continue
            if not line:
                if current:
                    families.append(current)
                    current = []
                continue
            parts = [p.strip() for p in line.split("|||")]
            if len(parts) != 3 or parts[0] not in PAIR_KINDS or not parts[1] or not parts[2]:
                raise SystemExit(f"{path}:{lineno}: malformed pair line: {raw!r}")
            kind = PAIR_KINDS[parts[0]]
            if norm(parts[1]) == norm(parts[2]):
                raise SystemExit(f"{path}:{lineno}: a and b are identical")
            current.append(
                {
                    "a": parts[1],
                    "b": parts[2],
                    "kind": kind,
                    "same_answer": kind == "paraphrase",
                    "domain": domain,
                    "_src": f"{path.name}:{lineno}",
                }
            )
        if current:
            families.append(current)
    return families


# --------------------------------------------------------------------------- convs
def _finish_section(section: dict, base: list[dict] | None, fam: list[dict] | None, domain: str) -> list[dict] | None:
    """Validate a parsed conversation section; return the (possibly new) base."""
    msgs = section["messages"]
    where = section["where"]
    if not 2 <= len(msgs) <= 6:
        raise SystemExit(f"{where}: conversation must have 2-6 messages, has {len(msgs)}")
    if msgs[-1]["role"] != "user":
        raise SystemExit(f"{where}: conversation must end with a user message")
    if section["kind"] == "base":
        return msgs
    if base is None or fam is None:
        raise SystemExit(f"{where}: variant before any base")
    kind = section["kind"]
    a, b = (msgs, base) if section["swap"] else (base, msgs)
    if json.dumps(a) == json.dumps(b):
        raise SystemExit(f"{where}: variant identical to base")
    fam.append(
        {
            "a": a,
            "b": b,
            "kind": kind,
            "same_answer": kind in CONV_KINDS_SAME,
            "domain": domain,
            "_src": where,
        }
    )
    return base


def read_conv_sources() -> list[list[dict]]:
    families: list[list[dict]] = []
    for path in sorted((SRC / "conv").glob("*.txt")):
        domain = path.stem
        fam: list[dict] | None = None
        base: list[dict] | None = None
        section: dict | None = None
        for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            line = raw.strip()
            where = f"{path.name}:{lineno}"
            if not line or line.startswith("#"):
                continue
            if line.startswith(("@@", "==")) and section is not None:
                base = _finish_section(section, base, fam, domain)
                section = None
            if line.startswith("@@"):
                if fam:
                    families.append(fam)
                fam, base = [], None
                continue
            if line.startswith("=="):
                head = line[2:].split()
                kind = head[0]
                if kind != "base" and kind not in CONV_KINDS_SAME | CONV_KINDS_DIFF:
                    raise SystemExit(f"{where}: unknown kind {kind!r}")
                section = {"kind": kind, "swap": "swap" in head[1:], "messages": [], "where": where}
                continue
            m = re.match(r"^([SUA]):\s*(.+)$", line)
            if not m or section is None:
                raise SystemExit(f"{where}: malformed line {raw!r}")
            section["messages"].append({"role": ROLES[m.group(1)], "content": m.group(2).strip()})
        if section is not None:
            base = _finish_section(section, base, fam, domain)
        if fam:
            families.append(fam)
    return families


# --------------------------------------------------------------------------- split
def _tokens(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z0-9']+", text.lower()))


def _prompt_texts(pair: dict) -> list[str]:
    out = []
    for side in (pair["a"], pair["b"]):
        out.append(side if isinstance(side, str) else " ".join(m["content"] for m in side))
    return out


def merge_families(families: list[list[dict]], near: float = 0.8) -> list[list[dict]]:
    """Merge families that share a prompt (after normalization) or a near-identical one.

    Two prompts are near-identical when the Jaccard overlap of their word sets is at
    least ``near``.  Merging is transitive (union-find) and only happens within a
    domain, so a prompt and its near copies can never straddle dev and test.
    """
    parent = list(range(len(families)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    prompts = []  # (family index, domain, normalized text, tokens)
    for i, fam in enumerate(families):
        for pair in fam:
            for text in _prompt_texts(pair):
                prompts.append((i, pair["domain"], norm(text).rstrip("?.! "), _tokens(text)))
    by_text: dict[tuple[str, str], int] = {}
    for i, dom, text, _ in prompts:
        j = by_text.setdefault((dom, text), i)
        parent[find(i)] = find(j)
    for x in range(len(prompts)):
        i, dom, _, tok = prompts[x]
        for y in range(x + 1, len(prompts)):
            j, dom2, _, tok2 = prompts[y]
            if dom != dom2 or find(i) == find(j):
                continue
            if len(tok & tok2) / max(1, len(tok | tok2)) >= near:
                parent[find(i)] = find(j)
    merged: dict[int, list[dict]] = {}
    for i, fam in enumerate(families):
        merged.setdefault(find(i), []).extend(fam)
    return list(merged.values())


def split_families(families: list[list[dict]], seed: int) -> tuple[list[dict], list[dict]]:
    """Family-level split, stratified by domain and kind.

    Families are shuffled with ``seed`` and assigned greedily (biggest first) to
    dev or test; the assignment is then refined by deterministic local search
    (flip one family, or swap two families of the same domain) while the squared
    deviation from the 60/40 targets -- per (domain, kind), per kind and per
    domain -- decreases.  A family never straddles the two splits.
    """
    rng = random.Random(seed)
    fams = families[:]
    rng.shuffle(fams)
    counts = [Counter(p["kind"] for p in fam) for fam in fams]
    doms = [fam[0]["domain"] for fam in fams]
    dk_total: Counter = Counter()
    k_total: Counter = Counter()
    d_total: Counter = Counter()
    for c, d in zip(counts, doms, strict=True):
        for k, v in c.items():
            dk_total[(d, k)] += v
            k_total[k] += v
            d_total[d] += v

    # counts of the dev side, updated incrementally
    dk: Counter = Counter()
    kk: Counter = Counter()
    dd: Counter = Counter()

    def move(i: int, sign: int) -> None:
        for k, v in counts[i].items():
            dk[(doms[i], k)] += sign * v
            kk[k] += sign * v
            dd[doms[i]] += sign * v

    def cost() -> float:
        err = sum((dk[x] - DEV_SHARE * t) ** 2 for x, t in dk_total.items())
        err += 2 * sum((kk[x] - DEV_SHARE * t) ** 2 for x, t in k_total.items())
        err += sum((dd[x] - DEV_SHARE * t) ** 2 for x, t in d_total.items())
        return err

    def flip(i: int) -> None:
        move(i, 1 if assign[i] == 1 else -1)
        assign[i] ^= 1

    assign = [1] * len(fams)  # 0 = dev, 1 = test; everything starts in test
    for i in sorted(range(len(fams)), key=lambda i: -sum(counts[i].values())):
        before = cost()
        flip(i)
        if cost() > before:
            flip(i)
    best = cost()

    def improves(*moved: int) -> bool:
        """Flip the `moved` families; keep that if the cost falls, else flip them back."""
        nonlocal best
        for i in moved:
            flip(i)
        c = cost()
        if c < best - 1e-9:
            best = c
            return True
        for i in moved:
            flip(i)
        return False

    improved = True
    while improved:
        improved = False
        for i in range(len(fams)):
            improved |= improves(i)
        for i in range(len(fams)):
            for j in range(i + 1, len(fams)):
                if assign[i] != assign[j] and doms[i] == doms[j]:
                    improved |= improves(i, j)
    dev = [p for fam, a in zip(fams, assign, strict=True) if a == 0 for p in fam]
    test = [p for fam, a in zip(fams, assign, strict=True) if a == 1 for p in fam]
    return dev, test


def assign_ids(prefix: str, families: list[list[dict]]) -> None:
    seen: Counter = Counter()
    for fam in families:
        for p in fam:
            seen[p["domain"]] += 1
            p["id"] = f"{prefix}-{p['domain']}-{seen[p['domain']]:03d}"


def dump(path: Path, rows: list[dict]) -> None:
    keys = ["id", "a", "b", "kind", "same_answer", "domain"]
    with path.open("w", encoding="utf-8") as fh:
        for r in sorted(rows, key=lambda r: r["id"]):
            fh.write(json.dumps({k: r[k] for k in keys}, ensure_ascii=False) + "\n")


def check_duplicates(families: list[list[dict]], what: str) -> None:
    seen: dict[str, str] = {}
    for fam in families:
        for p in fam:
            key = json.dumps([p["a"], p["b"]]).lower()
            rkey = json.dumps([p["b"], p["a"]]).lower()
            for k in (key, rkey):
                if k in seen:
                    raise SystemExit(f"{what}: duplicate pair {p['_src']} == {seen[k]}")
            seen[key] = p["_src"]


def words(text: str) -> int:
    return len(text.split())


def report(name: str, rows: list[dict]) -> None:
    kinds = Counter(r["kind"] for r in rows)
    print(f"{name}: {len(rows)} pairs  " + ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="validate sources, write nothing")
    args = ap.parse_args()

    pair_fams = read_pair_sources()
    check_duplicates(pair_fams, "pairs")
    assign_ids("p", pair_fams)
    conv_fams = read_conv_sources()
    check_duplicates(conv_fams, "conv")
    assign_ids("c", conv_fams)

    p_dev, p_test = split_families(merge_families(pair_fams), SEED)
    c_dev, c_test = split_families(merge_families(conv_fams), SEED + 1)

    all_pairs = p_dev + p_test
    long_hard = [
        p
        for p in all_pairs
        if p["kind"] in ("negation", "value_change") and 40 <= words(p["a"]) <= 120 and 40 <= words(p["b"]) <= 120
    ]
    long_para = [p for p in all_pairs if p["kind"] == "paraphrase" and words(p["a"]) >= 40 and words(p["b"]) >= 40]
    report("pairs-dev", p_dev)
    report("pairs-test", p_test)
    report("conv-dev", c_dev)
    report("conv-test", c_test)
    kinds = Counter(p["kind"] for p in all_pairs)
    print("pairs mix: " + ", ".join(f"{k}={v / len(all_pairs):.1%}" for k, v in sorted(kinds.items())))
    per_domain = Counter(p["domain"] for p in all_pairs)
    print("pairs per domain: " + ", ".join(f"{k}={v}" for k, v in sorted(per_domain.items())))
    print(f"long (40-120 words) negation/value_change pairs: {len(long_hard)}; long paraphrases: {len(long_para)}")
    all_conv = c_dev + c_test
    same = sum(p["same_answer"] for p in all_conv)
    print(f"conv same-answer share: {same / max(1, len(all_conv)):.1%}")

    if not args.check:
        dump(DATA / "pairs-dev.jsonl", p_dev)
        dump(DATA / "pairs-test.jsonl", p_test)
        dump(DATA / "conv-dev.jsonl", c_dev)
        dump(DATA / "conv-test.jsonl", c_test)
        print("written to", DATA)
    return 0


if __name__ == "__main__":
    sys.exit(main())
