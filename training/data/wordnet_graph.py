"""Build index/guards/data/wordnet_graph.tsv.gz, the table index/guards/wordnet.py reads, from Debian's
WordNet 3.0 (`apt-get install -y wordnet-base`):

    python -m training.data.wordnet_graph [--wordnet /usr/share/wordnet] [--out index/guards/data/wordnet_graph.tsv.gz]

Records, one a line, tab-separated (a synset id is its part of speech and offset, n02084071; adjective
satellites fold into 'a'):

    L <lemma> <synset ids>            every lemma, lower-cased, multi-word ones as written (turn_on), senses
                                      in the order of the index files (most frequent first)
    H <synset id> <hypernym ids>      pointers '@' and '@i' (instance hypernym)
    A <synset id> <antonym ids>       pointer '!', lexical pointers mapped to their target synset
    X <inflected> <base forms>        noun.exc, verb.exc and adj.exc, base forms that are lemmas only

The output is deterministic (sorted, gzip mtime 0), so running it again reproduces the file.
"""

from __future__ import annotations

import argparse
import gzip
from collections import defaultdict
from pathlib import Path

HEADER = (
    "# Derived from WordNet 3.0 (Princeton University) by training/data/wordnet_graph.py; see WORDNET_LICENSE.txt\n"
    "# beside this file. L lemma synsets | H synset hypernyms | A synset antonyms | X inflected base-forms\n"
)
POS_FILES = (("n", "noun"), ("v", "verb"), ("a", "adj"), ("r", "adv"))
EXCEPTION_FILES = ("noun", "verb", "adj")
HYPERNYM = frozenset({"@", "@i"})


def _clean(word: str) -> str:
    """Lower-case and drop WordNet's adjective position markers such as `(a)` or `(ip)`."""
    if "(" in word:
        word = word[: word.index("(")]
    return word.lower()


def _sid(pos: str, offset: str) -> str:
    return ("a" if pos == "s" else pos) + offset


def parse_data(
    wordnet: Path,
) -> tuple[dict[str, list[str]], dict[str, set[str]], dict[str, set[str]]]:
    """(lemma -> synsets in file order, synset -> hypernyms, synset -> antonyms) from the four data files."""
    lemmas: dict[str, list[str]] = defaultdict(list)
    hypernyms: dict[str, set[str]] = defaultdict(set)
    antonyms: dict[str, set[str]] = defaultdict(set)
    for _pos, name in POS_FILES:
        for line in (wordnet / f"data.{name}").read_text(encoding="latin-1").splitlines():
            if line.startswith("  ") or not line.strip():
                continue  # licence header
            fields = line.split(" | ", 1)[0].split()
            sid = _sid(fields[2], fields[0])
            w_cnt = int(fields[3], 16)
            for i in range(w_cnt):
                word = _clean(fields[4 + 2 * i])
                if sid not in lemmas[word]:
                    lemmas[word].append(sid)
            at = 4 + 2 * w_cnt
            for i in range(int(fields[at])):
                symbol, offset, tpos, _source_target = fields[at + 1 + 4 * i : at + 5 + 4 * i]
                if symbol in HYPERNYM:
                    hypernyms[sid].add(_sid(tpos, offset))
                elif symbol == "!":
                    antonyms[sid].add(_sid(tpos, offset))
    return lemmas, hypernyms, antonyms


def sense_order(wordnet: Path) -> dict[str, list[str]]:
    """lemma -> synsets in the index files' order (by tagged frequency), all parts of speech together."""
    order: dict[str, list[str]] = defaultdict(list)
    for pos, name in POS_FILES:
        for line in (wordnet / f"index.{name}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            fields = line.split()
            synset_cnt = int(fields[2])
            order[fields[0].lower()].extend(pos + offset for offset in fields[-synset_cnt:])
    return order


def read_exceptions(wordnet: Path, lemmas: dict[str, list[str]]) -> dict[str, list[str]]:
    """inflected -> base forms (that are lemmas), the three .exc lists merged."""
    out: dict[str, list[str]] = defaultdict(list)
    for name in EXCEPTION_FILES:
        for line in (wordnet / f"{name}.exc").read_text(encoding="latin-1").splitlines():
            parts = [p.lower() for p in line.split()]
            if not parts:
                continue
            for base in parts[1:]:
                if base != parts[0] and base in lemmas and base not in out[parts[0]]:
                    out[parts[0]].append(base)
    return {k: v for k, v in out.items() if v}


def build(wordnet: Path) -> str:
    lemmas, hypernyms, antonyms = parse_data(wordnet)
    order = sense_order(wordnet)
    lines = [HEADER]
    for lemma in sorted(lemmas):
        rank = {sid: i for i, sid in enumerate(order.get(lemma, ()))}
        ids = sorted(lemmas[lemma], key=lambda s: rank.get(s, len(rank)))
        lines.append(f"L\t{lemma}\t{' '.join(ids)}\n")
    for kind, table in (("H", hypernyms), ("A", antonyms)):
        lines.extend(f"{kind}\t{sid}\t{' '.join(sorted(table[sid]))}\n" for sid in sorted(table))
    exceptions = read_exceptions(wordnet, lemmas)
    lines.extend(f"X\t{word}\t{' '.join(exceptions[word])}\n" for word in sorted(exceptions))
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"))
    parser.add_argument("--out", type=Path, default=Path("index/guards/data/wordnet_graph.tsv.gz"))
    args = parser.parse_args()
    text = build(args.wordnet)
    args.out.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    counts: dict[str, int] = defaultdict(int)
    for line in text.splitlines():
        counts[line[:1]] += 1
    summary = ", ".join(f"{k} {counts[k]}" for k in "LHAX")
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes): {summary}")


if __name__ == "__main__":
    main()
