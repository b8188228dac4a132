"""`eval calibrate`: the budget's bound against known truth in simulated namespaces (registered on the eval app by
`eval.cli`); exit 1 when a bound covers less often than its confidence or what is served passes the budget."""

from __future__ import annotations

from typing import Annotated

import typer


def calibrate(
    seeds: Annotated[int, typer.Option(min=1, help="Seeds per scenario.")] = 8,
    requests: Annotated[int | None, typer.Option(min=200, help="Requests per run (default: each scenario's).")] = None,
) -> None:
    """Coverage of the budget's upper bound and the realised wrong ÷ served, per simulated scenario (cache growth,
    twins arriving late, bursts, drift, label noise, few and many labels); no model, seconds per seed."""
    import sys

    from eval.calibration import calibrate as run
    from eval.calibration import misses
    from eval.cli_common import out

    rows = run(seeds=seeds, requests=requests)
    console = out()
    console.print("scenario | seeds | passes | coverage | wrong ÷ served whole | second half | correct | "
                  "mean bound | mean truth")
    for s in rows:
        console.print(f"{s.scenario} | {s.seeds} | {s.passes} | {s.coverage:.1%} | {s.wrong_per_served:.2%} | "
                      f"{s.wrong_per_served_late:.2%} | {s.correct:.1%} | {s.mean_upper:.2%} | {s.mean_truth:.2%}")
    broken = misses(rows)
    if broken:
        print("\n".join(broken), file=sys.stderr)
        raise typer.Exit(1)
