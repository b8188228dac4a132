"""The overview page's sections on money and reuse: what hits saved and labelling spent per namespace, API and
model by token kind (USD or "no price"), the provider's prompt-cache share beside Deja's hits, and what stops reuse
(`index.reuse.watch`). Everything traffic wrote (namespaces, APIs, models) is HTML-escaped."""

from __future__ import annotations

from html import escape

from index.reuse.watch import NamespaceReuse
from service.ledger import SavingsRow


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _usd(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.6f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def savings_table(rows: tuple[SavingsRow, ...]) -> str:
    """Per (namespace, API, model): hits, the tokens they saved by kind, USD saved, labelling's USD, the net."""
    body = "".join(
        f'<tr><td title="{_e(r.account.namespace)}">{_e(r.account.namespace[:12] or "(none)")}</td>'
        f"<td>{_e(r.account.api)}</td><td>{_e(r.account.model)}</td><td>{r.hits}</td>"
        f"<td>{r.saved.input_tokens:,}</td><td>{r.saved.cached_input_tokens:,}</td>"
        f"<td>{r.saved.cache_write_tokens:,}</td><td>{r.saved.output_tokens:,}</td>"
        f"<td>{_usd(r.saved_usd)}</td><td>{r.labelling.total:,}</td><td>{_usd(r.labelling_usd)}</td>"
        f"<td>{_usd(r.net_usd)}</td></tr>" for r in rows if r.hits or r.labelling.total)
    return ('<table id="savings"><tr><th>namespace</th><th>API</th><th>model</th><th>hits</th><th>input</th>'
            "<th>cached input</th><th>cache write</th><th>output</th><th>saved</th><th>labelling tokens</th>"
            f'<th>labelling</th><th>net</th></tr>{body or "<tr><td colspan=12>nothing yet</td></tr>"}</table>')


def provider_cache_table(rows: tuple[SavingsRow, ...]) -> str:
    """Per (namespace, model): the forwarded requests' input tokens and the share the provider's cache served."""
    body = "".join(
        f'<tr><td title="{_e(r.account.namespace)}">{_e(r.account.namespace[:12] or "(none)")}</td>'
        f"<td>{_e(r.account.api)}</td><td>{_e(r.account.model)}</td><td>{r.forwarded.prompt_tokens:,}</td>"
        f"<td>{r.forwarded.cached_input_tokens:,}</td><td>{_pct(r.provider_cache_share)}</td></tr>"
        for r in rows if r.forwarded.total)
    return ('<table id="provider-cache"><tr><th>namespace</th><th>API</th><th>model</th><th>input forwarded</th>'
            "<th>served by the provider's cache</th><th>share</th></tr>"
            f'{body or "<tr><td colspan=6>nothing forwarded yet</td></tr>"}</table>')


def reuse_table(report: tuple[NamespaceReuse, ...]) -> str:
    """Each finding: the namespace, what splits its scopes and where, the share of its requests, the fix."""
    body = "".join(
        f'<tr><td title="{_e(ns.namespace)}">{_e(ns.namespace[:12])}</td><td>{_e(f.obstacle.value)}</td>'
        f"<td>{_e(f.where)}</td><td>{_pct(f.share)}</td><td>{f.requests} of {ns.requests}</td>"
        f"<td>{_e(f.fix)}</td></tr>" for ns in report for f in ns.findings)
    if not body:
        return '<p class="empty" id="reuse-none">Nothing seen splits a namespace\'s scopes.</p>'
    return ('<table id="reuse"><tr><th>namespace</th><th>what stops reuse</th><th>where</th><th>share</th>'
            f"<th>requests</th><th>fix</th></tr>{body}</table>")


def section(rows: tuple[SavingsRow, ...], report: tuple[NamespaceReuse, ...]) -> str:
    return (
        "<h2>Saved by hits, by token kind (this replica, since it started)</h2><p class=\"note\">A hit saves what "
        "the upstream call it replaced cost: its input, cached input, cache write and output tokens at the model's "
        "prices. Labelling (audits, second asks, label-model calls) is charged to the traffic it labels; net = saved "
        "- labelling. A model the price table lacks shows its tokens and \"no price\".</p>"
        f"{savings_table(rows)}"
        "<h3>The provider's prompt cache on forwarded requests</h3>"
        f"{provider_cache_table(rows)}"
        "<h2>What stops reuse</h2><p class=\"note\">Read from the shapes of the requests seen (hashes, never the "
        "text): what splits a namespace's traffic into scopes that cannot share answers. A report: the scope is "
        "never changed.</p>"
        f"{reuse_table(report)}")
