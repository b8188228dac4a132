"""Build index/guards/data/antonyms.tsv and english_words.txt.gz from Debian's WordNet 3.0
(`apt-get install -y wordnet-base`).

Run once when WordNet or the derivation rules change; the runtime only reads the derived table:

    python -m training.data.build_antonyms [--wordnet /usr/share/wordnet] [--out index/guards/data]

Each antonym pointer (`!`) of the four data files gives a direct word pair, and irregular inflections from
the `.exc` lists are paired with the antonym's forms (better -> worse). Marked "indirect" (noisier, so the
runtime wants them aligned): the other words of both synsets (hard -> easy, via difficult/easy) and
adjective satellites against their head's antonyms (pricey -> cheap). Multi-word lemmas are skipped: the
guards compare single tokens. Regular inflections are left to the runtime's suffix stripper.

english_words.txt.gz lists every single-word WordNet lemma and irregular form: a word outside it is
likely a product, tool or other name ("proxmox", "aiohttp"), which the value stage treats as a slot.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

HEADER = (
    "# word<TAB>antonym[<TAB>indirect], both directions, lowercased. Derived from WordNet 3.0 (Princeton\n"
    "# University) by training/data/build_antonyms.py; see WORDNET_LICENSE.txt beside this file. 'indirect' marks\n"
    "# a satellite paired with its head's antonym (cheap/expensive): noisier, so the runtime wants it aligned.\n"
)
# Regular comparative/superlative forms are added for short gradable adjectives only.
MAX_GRADABLE_LEN = 7
# Quantifiers WordNet opposes to "all"/"no" ("all" vs "any" is often a paraphrase, not a reversal).
SKIPPED = frozenset({"any", "some", "several", "both", "each", "every", "whatever", "whatsoever", "nary"})


@dataclass(frozen=True)
class Synset:
    pos: str
    words: tuple[str, ...]
    # (symbol, target key, source word index, target word index); indexes are 1-based, 0 = whole synset.
    pointers: tuple[tuple[str, tuple[str, int], int, int], ...]


def _clean(word: str) -> str:
    """Lowercase and drop WordNet's adjective position markers such as `(a)` or `(ip)`."""
    if "(" in word:
        word = word[: word.index("(")]
    return word.lower()


def parse_data_file(path: Path) -> dict[tuple[str, int], Synset]:
    synsets: dict[tuple[str, int], Synset] = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith("  ") or not line.strip():
            continue  # licence header
        fields = line.split(" | ", 1)[0].split()
        offset, pos, w_cnt = int(fields[0]), fields[2], int(fields[3], 16)
        words = tuple(_clean(fields[4 + 2 * i]) for i in range(w_cnt))
        at = 4 + 2 * w_cnt
        p_cnt = int(fields[at])
        pointers = []
        for i in range(p_cnt):
            symbol, target, tpos, st = fields[at + 1 + 4 * i : at + 5 + 4 * i]
            key = ("a" if tpos == "s" else tpos, int(target))
            pointers.append((symbol, key, int(st[:2], 16), int(st[2:], 16)))
        synsets[("a" if pos == "s" else pos, offset)] = Synset(pos, words, tuple(pointers))
    return synsets


def direct_pairs(synsets: dict[tuple[str, int], Synset]) -> set[tuple[str, str, str]]:
    """(part of speech, word, antonym) for every antonym pointer; pos "s" is folded into "a"."""
    pairs: set[tuple[str, str, str]] = set()
    for synset in synsets.values():
        for symbol, target, src, dst in synset.pointers:
            if symbol != "!" or target not in synsets:
                continue
            sources = synset.words if src == 0 else (synset.words[src - 1],)
            targets = synsets[target].words if dst == 0 else (synsets[target].words[dst - 1],)
            pos = "a" if synset.pos == "s" else synset.pos
            pairs.update((pos, a, b) for a in sources for b in targets)
    return pairs


def synset_pairs(synsets: dict[tuple[str, int], Synset]) -> set[tuple[str, str]]:
    """Indirect antonyms: every word of a synset against every word of its antonym's synset
    (difficult/hard vs easy: only "difficult" carries the pointer)."""
    pairs: set[tuple[str, str]] = set()
    for synset in synsets.values():
        for symbol, target, _src, _dst in synset.pointers:
            if symbol == "!" and target in synsets:
                pairs.update((a, b) for a in synset.words for b in synsets[target].words)
    return pairs


def satellite_pairs(synsets: dict[tuple[str, int], Synset]) -> set[tuple[str, str]]:
    """Indirect antonyms: each satellite word against the antonyms of its head adjective."""
    pairs: set[tuple[str, str]] = set()
    for synset in synsets.values():
        if synset.pos != "s":
            continue
        for symbol, head_key, _src, _dst in synset.pointers:
            head = synsets.get(head_key)
            if symbol != "&" or head is None:
                continue
            for h_symbol, opposite, _s, dst in head.pointers:
                if h_symbol != "!" or opposite not in synsets:
                    continue
                words = synsets[opposite].words
                targets = words if dst == 0 else (words[dst - 1],)
                pairs.update((a, b) for a in synset.words for b in targets)
    return pairs


def read_exceptions(wordnet: Path) -> dict[str, dict[str, set[str]]]:
    """pos -> lemma -> irregular inflected forms, from noun.exc, verb.exc and adj.exc."""
    out: dict[str, dict[str, set[str]]] = {}
    for pos, name in (("n", "noun"), ("v", "verb"), ("a", "adj")):
        forms: dict[str, set[str]] = defaultdict(set)
        for line in (wordnet / f"{name}.exc").read_text(encoding="latin-1").splitlines():
            parts = line.split()
            for lemma in parts[1:]:
                if parts[0] != lemma:
                    forms[lemma].add(parts[0])
        out[pos] = forms
    return out


def gradable_forms(adjective: str) -> set[str]:
    """-er/-est forms of a short adjective (high -> higher, big -> bigger, early -> earlier)."""
    if len(adjective) > MAX_GRADABLE_LEN or not adjective.isalpha():
        return set()
    stem = adjective
    if stem.endswith("y") and len(stem) > 3:
        stem = stem[:-1] + "i"
    elif stem.endswith("e"):
        stem = stem[:-1]
    elif (
        len(stem) >= 3
        and stem[-1] not in "aeiouwxy"
        and stem[-2] in "aeiou"
        and stem[-3] not in "aeiou"
    ):
        stem = stem + stem[-1]
    return {stem + "er", stem + "est"}


def _degree(form: str) -> str:
    return "superlative" if form.endswith("st") else "comparative"


def inflected_pairs(
    pos: str, a: str, b: str, irregular: dict[str, dict[str, set[str]]]
) -> set[tuple[str, str]]:
    """Irregular forms paired with irregular forms; adjectives also get -er/-est, degree for degree."""
    exc = irregular.get(pos, {})
    a_forms, b_forms = exc.get(a, set()), exc.get(b, set())
    if pos != "a":
        return {(x, y) for x in a_forms | {a} for y in b_forms | {b}}
    a_forms, b_forms = a_forms | gradable_forms(a), b_forms | gradable_forms(b)
    return {(x, y) for x in a_forms for y in b_forms if _degree(x) == _degree(y)}


def _usable(a: str, b: str) -> bool:
    """Single words (no multi-word or hyphenated lemmas), not the quantifiers WordNet opposes to 'all'."""
    return a.isalpha() and b.isalpha() and a != b and a not in SKIPPED and b not in SKIPPED


def expand(
    direct: set[tuple[str, str, str]],
    satellites: set[tuple[str, str]],
    irregular: dict[str, dict[str, set[str]]],
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(direct pairs, indirect pairs), each closed under reversal; a pair is in one set only."""
    out: set[tuple[str, str]] = set()
    for pos, a, b in direct:
        if _usable(a, b):
            out.add((a, b))
            out.update(p for p in inflected_pairs(pos, a, b, irregular) if _usable(*p))
    out |= {(b, a) for a, b in out}
    indirect = {(a, b) for a, b in satellites if _usable(a, b)}
    indirect = (indirect | {(b, a) for a, b in indirect}) - out
    return out, indirect


def vocabulary(wordnet: Path) -> set[str]:
    """Single-word lemmas of the four index files plus the irregular forms of the .exc lists."""
    words: set[str] = set()
    for name in ("noun", "verb", "adj", "adv"):
        for line in (wordnet / f"index.{name}").read_text(encoding="latin-1").splitlines():
            if not line.startswith(" "):
                words.add(line.split(" ", 1)[0].lower())
        exc = wordnet / f"{name}.exc"
        for line in exc.read_text(encoding="latin-1").splitlines():
            words.update(part.lower() for part in line.split())
    return {w for w in words if w.isalpha()}


def license_text(wordnet: Path) -> str:
    """The licence block that opens every WordNet data file."""
    lines = []
    for line in (wordnet / "data.adj").read_text(encoding="latin-1").splitlines():
        if not line.startswith("  "):
            break
        lines.append(line[2:].split(" ", 1)[1].rstrip() if " " in line[2:] else "")
    return "\n".join(lines).strip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[2] / "index/guards/data")
    parser.add_argument(
        "--satellites", action=argparse.BooleanOptionalAction, default=True,
        help="also pair adjective satellites with their head's antonyms (cheap -> expensive)",
    )
    args = parser.parse_args(argv)
    if not (args.wordnet / "data.adj").exists():
        print(f"WordNet not found under {args.wordnet} (apt-get install -y wordnet-base)", file=sys.stderr)
        return 1
    # Offsets are unique within a data file and each file holds one part of speech ("s" folded into "a"),
    # so (pos, offset) keys are unique across the four files.
    synsets: dict[tuple[str, int], Synset] = {}
    for name in ("noun", "verb", "adj", "adv"):
        synsets.update(parse_data_file(args.wordnet / f"data.{name}"))
    satellites = synset_pairs(synsets) | (satellite_pairs(synsets) if args.satellites else set())
    direct, indirect = expand(direct_pairs(synsets), satellites, read_exceptions(args.wordnet))
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [(a, b, "") for a, b in direct] + [(a, b, "\tindirect") for a, b in indirect]
    body = "".join(f"{a}\t{b}{tag}\n" for a, b, tag in sorted(rows))
    (args.out / "antonyms.tsv").write_text(HEADER + body, encoding="utf-8")
    vocab = "".join(f"{w}\n" for w in sorted(vocabulary(args.wordnet)))
    (args.out / "english_words.txt.gz").write_bytes(gzip.compress(vocab.encode("utf-8"), mtime=0))
    (args.out / "WORDNET_LICENSE.txt").write_text(
        "index/guards/data/antonyms.tsv and english_words.txt.gz are derived from WordNet 3.0. Its licence:\n\n"
        + license_text(args.wordnet),
        encoding="utf-8",
    )
    print(f"wrote {len(direct)} direct and {len(indirect)} indirect directed pairs to {args.out / 'antonyms.tsv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
