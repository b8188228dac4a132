"""Check a veto stack the way the panel does (`python -m training.veto_check`): the guarded rule at the default
threshold and below, the learned veto on and off, on every held-out source (real users' first), one row each.

`--stack judge,pair,cosine,bias` tries a stack without writing it; default: the shipped one. Prints, per source
and threshold, correct and wrong ÷ served with the veto and without it, and what the veto cost in points.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from eval.cli_common import settings_from_env
from eval.embedding import EmbedderName, make_embedder
from eval.panel import PanelReport, run_panel, veto_columns, veto_name
from eval.sources import Source, all_sources
from index.judge.model import load_judge
from index.judge.pair_model import PairStage

ROOT = Path(__file__).resolve().parent.parent
# The held-out parts: test parts, OSSChat (test only) and QQP's both parts (never trained on).
HELD_OUT = ("OSSChat clusters", "QQP pairs", "Redis LangCache", "PAWS-Wiki", "trace2", "stream", "our pairs",
            "minimal pairs")


def _held_out(source: Source) -> bool:
    if source.name not in HELD_OUT:
        return False
    return source.part == "test" or source.name in ("QQP pairs", "stream")


def stage_with(stack: tuple[float, float, float, float] | None) -> PairStage:
    stage = PairStage()
    if stack is not None:
        judge, pair, cosine, bias = stack
        stage.combination = dataclasses.replace(stage.combination, w_judge=judge, w_pair=pair, w_cosine=cosine,
                                                bias=bias)
    return stage


def lines(report: PanelReport, thresholds: list[float]) -> list[str]:
    out = []
    for row in report.rows:
        parts = []
        for t in thresholds:
            on, off = row.cell(veto_name(t, True)), row.cell(veto_name(t, False))
            if on is None or off is None or on.correct_rate is None or off.correct_rate is None:
                continue
            cost = 100 * (off.correct_rate - on.correct_rate)
            parts.append(f"{t:.2f}: on {100 * on.correct_rate:.1f}%/{100 * (on.wrong_per_served or 0):.1f}% "
                         f"off {100 * off.correct_rate:.1f}%/{100 * (off.wrong_per_served or 0):.1f}% "
                         f"cost {cost:+.1f}")
        out.append(f"{row.source} ({row.part}) [{row.origin}] | " + " | ".join(parts))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.veto_check", description=__doc__)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--stack", type=lambda s: tuple(float(v) for v in s.split(",")), default=None)
    parser.add_argument("--veto-below", type=float, default=0.6)
    parser.add_argument("--source", action="append", default=None, help="only sources whose name contains this")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    found, _ = all_sources(args.shared, ROOT / "datasets")
    chosen = [s for s in found if _held_out(s) and (not args.source or any(n in s.name for n in args.source))]
    policy = dataclasses.replace(settings_from_env().policy(), veto_below=args.veto_below)
    entrants = veto_columns(policy, load_judge(), stage_with(args.stack), args.veto_below)
    report = run_panel(chosen, make_embedder(EmbedderName.MINILM_ONNX), entrants, policy.describe())
    thresholds = sorted({e.policy.min_similarity for e in entrants if e.policy is not None}, reverse=True)
    for line in lines(report, thresholds):
        print(line, flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in report.rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
