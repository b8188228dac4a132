"""The live false-hit budget over HTTP: a trace replayed in order through a real gateway at its defaults (the
guarded rule, audits at DEJA_AUDIT_RATE) whose stub upstream answers per intent, once with the LLM label judge
(`DEJA_LABEL_MODEL`, answered by the intents) and once with today's answer comparison, side by side. Per half of
the trace: correct and wrong ÷ served; at the end: what `GET /deja/budget` reports (the tallies, and the learner's
upper bound on wrong ÷ served at its confidence) beside the true wrong ÷ served, and the label and audit calls per
1,000 requests.

    .venv/bin/python -m bench.budget [--stream datasets/trace2.jsonl] [--limit N] [--answer-variation]
        [--labeller-error RATE]

`--answer-variation`: the stub words one answer differently each call (a different closing sentence, the same
content), as a sampled model does; `--labeller-error RATE`: the label judge errs at RATE and the gateway is told so
(`DEJA_LABEL_MODEL_ERROR_RATE`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from eval.datasets import StreamRequest, load_stream
from support.services import REPO, GatewayProcess
from support.stub_upstream import StubUpstream, intent_answer

ADMIN = {"Authorization": "Bearer admin-secret"}
LABEL_MODEL = "label-judge"


def replay(url: str, requests: Sequence[StreamRequest]) -> list[tuple[str, bool]]:
    """(verdict, correct answer) per request, in order: correct when it has the intent's content (whatever its
    closing sentence)."""
    out = []
    with httpx.Client(base_url=url, timeout=60, headers={"Authorization": "Bearer sk-bench"}) as client:
        for request in requests:
            body = {"model": "stub-model", "messages": [{"role": "user", "content": request.prompt}]}
            response = client.post("/v1/chat/completions", json=body)
            response.raise_for_status()
            text = response.json()["choices"][0]["message"]["content"]
            out.append((response.headers["x-deja-cache"], text.startswith(intent_answer(request.intent))))
    return out


def part(results: Sequence[tuple[str, bool]]) -> dict[str, Any]:
    served = [ok for verdict, ok in results if verdict.startswith("hit")]
    semantic = [ok for verdict, ok in results if verdict == "hit-semantic"]
    n = len(results)
    return {"requests": n, "served": len(served), "correct": round(sum(served) / n, 4) if n else None,
            "wrong_over_served": round(served.count(False) / len(served), 4) if served else None,
            "semantic": len(semantic), "semantic_wrong": semantic.count(False)}


def settle(url: str, quiet: float = 3.0, timeout: float = 120.0) -> dict[str, Any]:
    """The budget report once no new audit has arrived for `quiet` seconds."""
    deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
    report: dict[str, Any] = {}
    while time.monotonic() < deadline:
        report = httpx.get(url + "/deja/budget", headers=ADMIN, timeout=30).json()
        audited = [row["audited"] for row in report["namespaces"]]
        if audited != last:
            last, since = audited, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
        time.sleep(0.5)
    return report


def metric(text: str, prefix: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


def run(requests: Sequence[StreamRequest], label_model: str | None, tmp: Path, vary: bool = False,
        labeller_error: float = 0.0) -> dict[str, Any]:
    data_dir = tmp / (label_model or "answer-comparison")
    data_dir.mkdir()
    with StubUpstream(answers={r.prompt: r.intent for r in requests}, vary=vary) as stub:
        stub.state.labels.error_rate = labeller_error
        # The budget's upkeep pass every half second: `settle` reads what the last pass stored.
        env = {"DEJA_UPSTREAM_URL": stub.url, "DEJA_DATA_DIR": str(data_dir), "DEJA_ADMIN_TOKEN": "admin-secret",
               "DEJA_LOG_LEVEL": "warning", "DEJA_THRESHOLD_INTERVAL_SECONDS": "0.5"}
        if label_model:
            env["DEJA_LABEL_MODEL"] = label_model
            env["DEJA_LABEL_MODEL_ERROR_RATE"] = str(labeller_error)
        gateway = GatewayProcess(env, data_dir / "gateway.log").start()
        try:
            started = time.monotonic()
            results = replay(gateway.url, requests)
            report = settle(gateway.url)
            evidence = httpx.get(gateway.url + "/deja/budget/evidence", headers=ADMIN, timeout=30).json()
            metrics = httpx.get(gateway.url + "/metrics", timeout=30).text
        finally:
            gateway.stop()
        label_calls = sum(1 for c in stub.state.chat_calls() if json.loads(c["body"]).get("model") == LABEL_MODEL)
    half = len(results) // 2
    whole = part(results)
    rows = report["namespaces"]
    cosine = [row for row in report["thresholds"] if row["kind"] == "cosine"]
    true_rate = whole["semantic_wrong"] / whole["semantic"] if whole["semantic"] else None
    per_k = 1000 / len(requests)
    return {
        "label_model": label_model, "seconds": round(time.monotonic() - started, 1),
        "first_half": part(results[:half]), "second_half": part(results[half:]), "whole": whole,
        "last_quarter_semantic": part(results[len(results) - len(results) // 4:])["semantic"],
        "budget": rows, "upper": cosine[0]["upper"] if cosine else None, "true_semantic_wrong_over_served": true_rate,
        "true_below_upper": None if true_rate is None or not cosine else true_rate <= cosine[0]["upper"],
        "threshold_moves": len(evidence["threshold_moves"]), "differences": evidence["differences"][:10],
        "label_calls_per_1k": round(label_calls * per_k, 1),
        "audit_calls_per_1k": round(metric(metrics, 'deja_audits_total{outcome="done"}') * per_k, 1),
        "extra_audits_per_1k": round(metric(metrics, "deja_extra_audits_total{") * per_k, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", type=Path, default=REPO / "datasets" / "trace2.jsonl")
    parser.add_argument("--limit", type=int, default=None, help="replay only the first N requests")
    parser.add_argument("--answer-variation", action="store_true", help="answers vary between calls")
    parser.add_argument("--labeller-error", type=float, default=0.0, help="the label judge's error rate")
    args = parser.parse_args()
    requests = load_stream(args.stream)[: args.limit]
    with tempfile.TemporaryDirectory(prefix="deja-budget-") as tmp:
        runs = [run(requests, model, Path(tmp), args.answer_variation, args.labeller_error)
                for model in (LABEL_MODEL, None)]
    print(json.dumps({"stream": args.stream.name, "requests": len(requests), "runs": runs}, indent=2))
    print("side by side (label model / answer comparison):")
    for key in ("first_half", "second_half"):
        a, b = runs[0][key], runs[1][key]
        print(f"  {key}: correct {a['correct']} / {b['correct']}, wrong ÷ served {a['wrong_over_served']} / "
              f"{b['wrong_over_served']}")
    print(f"  last quarter's semantic hits: {runs[0]['last_quarter_semantic']} / {runs[1]['last_quarter_semantic']}")
    for r in runs:
        shown = [(row["audited"], row["wrong"]) for row in r["budget"]]
        print(f"  {r['label_model'] or 'answer comparison'}: /deja/budget (audited, wrong) {shown}, the learner's "
              f"upper bound {r['upper']}, true semantic wrong rate {r['true_semantic_wrong_over_served']}, "
              f"threshold moves {r['threshold_moves']}")


if __name__ == "__main__":
    main()
