"""The operator overview's page: tables and inline SVG charts drawn on the server from an `Overview`, with no
script at all. Everything traffic wrote (models, APIs, namespaces) is HTML-escaped before it reaches the page."""

from __future__ import annotations

import secrets
import time
from html import escape

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from index.records import Verdict
from service.admin_auth import SESSION_COOKIE, is_admin_token, new_session
from service.deps import RuntimeDep, require_admin
from service.errors import Unauthorized
from service.overview import NamespaceRow, Overview, Slice, ThresholdTrack, read_overview
from service.overview_savings import section as savings_section
from service.overview_thresholds import section as thresholds_section
from service.thresholds import NamespaceThreshold

PAGE_PATH = "/deja/admin/overview"
VERDICT_COLOURS = {Verdict.EXACT_HIT.value: "#2e7d32", Verdict.SEMANTIC_HIT.value: "#66bb6a",
                   Verdict.COALESCED.value: "#26a69a", Verdict.MISS.value: "#90a4ae",
                   Verdict.BYPASS.value: "#cfd8dc", "error": "#e57373"}
LINE_COLOURS = ("#1565c0", "#c62828", "#6a1b9a", "#ef6c00", "#00838f", "#558b2f", "#4e342e", "#37474f")
WIDTH = 720


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _short(namespace: str) -> str:
    return namespace[:12]


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at))


def _traffic_chart(overview: Overview) -> str:
    rows = overview.traffic
    if not rows:
        return '<p class="empty">No requests yet on this replica.</p>'
    top = max(r.requests for r in rows) or 1
    height = 30 * len(rows) + 30
    parts = [f'<svg id="chart-traffic" role="img" width="{WIDTH}" height="{height}" '
             f'viewBox="0 0 {WIDTH} {height}"><title>Requests per API by verdict</title>']
    for i, row in enumerate(rows):
        y, x = 10 + 30 * i, 110.0
        parts.append(f'<text x="0" y="{y + 15}">{_e(row.api)}</text>')
        for verdict, colour in VERDICT_COLOURS.items():
            n = row.by_verdict.get(verdict, 0)
            if n:
                w = (WIDTH - 180) * n / top
                parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="20" fill="{colour}">'
                             f'<title>{_e(verdict)}: {n}</title></rect>')
                x += w
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 15}">{row.requests}</text>')
    legend_y = height - 6
    for i, (verdict, colour) in enumerate(VERDICT_COLOURS.items()):
        parts.append(f'<rect x="{110 * i}" y="{legend_y - 10}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{110 * i + 14}" y="{legend_y}" class="small">{_e(verdict)}</text>')
    return "".join(parts) + "</svg>"


def _traffic_table(overview: Overview) -> str:
    rows = "".join(
        f"<tr><td>{_e(r.api)}</td><td>{r.requests}</td><td>{_pct(r.rate(Verdict.EXACT_HIT))}</td>"
        f"<td>{_pct(r.rate(Verdict.SEMANTIC_HIT))}</td><td>{_pct(r.rate(Verdict.COALESCED))}</td></tr>"
        for r in overview.traffic)
    return ('<table id="traffic"><tr><th>API</th><th>requests</th><th>exact hits</th><th>semantic hits</th>'
            f'<th>coalesced</th></tr>{rows}</table>')


def _budget_chart(rows: tuple[NamespaceThreshold, ...], budget: float, confidence: float) -> str:
    """Per namespace and kind, the learner's statistic against the budget: a strip to its upper bound at
    `confidence`, a dot at its estimate."""
    if not rows:
        return '<p class="empty">No namespace has evidence yet.</p>'
    scale = max([budget * 2, *(r.upper for r in rows)])
    left, span = 200, WIDTH - 260
    height = 26 * len(rows) + 36

    def x(value: float) -> float:
        return left + span * min(value, scale) / scale

    parts = [f'<svg id="chart-budget" role="img" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">'
             f"<title>Estimated wrong ÷ served and its {confidence:.0%} upper bound against the budget</title>"]
    for i, row in enumerate(rows):
        y = 8 + 26 * i
        parts.append(f'<text x="0" y="{y + 13}">{_e(_short(row.namespace))} · {_e(row.kind)}</text>'
                     f'<rect x="{left}" y="{y}" width="{x(row.upper) - left:.1f}" height="16" '
                     f'fill="{"#a5d6a7" if row.holds else "#ef9a9a"}"><title>upper bound {_pct(row.upper)}</title>'
                     f'</rect><circle cx="{x(row.estimate):.1f}" cy="{y + 8}" r="5" fill="#212121">'
                     f"<title>estimate {_pct(row.estimate)}</title></circle>")
        parts.append(f'<text x="{x(row.upper) + 6:.1f}" y="{y + 13}" class="small">{_pct(row.upper)}</text>')
    bx = x(budget)
    parts.append(f'<line x1="{bx:.1f}" y1="0" x2="{bx:.1f}" y2="{height - 20}" stroke="#b71c1c" '
                 f'stroke-dasharray="4 3"/><text x="{bx + 4:.1f}" y="{height - 6}" class="small">budget '
                 f"{_pct(budget)}</text></svg>")
    return "".join(parts)


def _budget_table(rows: tuple[NamespaceRow, ...]) -> str:
    body = "".join(
        f'<tr><td title="{_e(r.namespace)}">{_e(_short(r.namespace))}</td><td>{_e(r.api)}</td><td>{r.decisions}</td>'
        f"<td>{r.served}</td><td>{r.audited}</td><td>{r.wrong}</td></tr>" for r in rows)
    return ('<table id="namespaces"><tr><th>namespace</th><th>API</th><th>semantic decisions</th><th>served</th>'
            f"<th>audited</th><th>wrong</th></tr>{body}</table>")


def _tracks_chart(tracks: tuple[ThresholdTrack, ...]) -> str:
    if not tracks:
        return '<p class="empty">No namespace has a threshold to draw yet.</p>'
    times = [t for track in tracks for t, _ in track.points]
    values = [v for track in tracks for _, v in track.points]
    t0, t1 = min(times), max(max(times), min(times) + 1)
    low, high = min(values) - 0.01, min(1.0, max(values) + 0.01)
    high = max(high, low + 0.02)
    height, left, bottom = 220, 60, 190

    def point(t: float, v: float) -> str:
        return f"{left + (WIDTH - left - 160) * (t - t0) / (t1 - t0):.1f},{bottom - 170 * (v - low) / (high - low):.1f}"

    parts = [f'<svg id="chart-thresholds" role="img" width="{WIDTH}" height="{height}" '
             f'viewBox="0 0 {WIDTH} {height}"><title>Each namespace\'s cosine threshold over time</title>'
             f'<line x1="{left}" y1="{bottom}" x2="{WIDTH - 160}" y2="{bottom}" stroke="#777"/>'
             f'<text x="0" y="{bottom}" class="small">{low:.3f}</text>'
             f'<text x="0" y="24" class="small">{high:.3f}</text>'
             f'<text x="{left}" y="{height - 4}" class="small">{_e(_clock(t0))}</text>'
             f'<text x="{WIDTH - 300}" y="{height - 4}" class="small">{_e(_clock(t1))} UTC</text>']
    for i, track in enumerate(tracks[: len(LINE_COLOURS)]):
        colour = LINE_COLOURS[i]
        steps: list[str] = []
        for j, (t, v) in enumerate(track.points):
            if j:  # a step: hold the previous threshold until the move
                steps.append(point(t, track.points[j - 1][1]))
            steps.append(point(t, v))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(steps)}">'
                     f"<title>{_e(track.namespace)}</title></polyline>"
                     f'<text x="{WIDTH - 150}" y="{20 + 16 * i}" fill="{colour}" class="small">'
                     f"{_e(_short(track.namespace))} {track.points[-1][1]:.3f}</text>")
    return "".join(parts) + "</svg>"


def _timeline_chart(slices: tuple[Slice, ...]) -> str:
    if not slices:
        return '<p class="empty">No semantic decision logged yet.</p>'
    top = max(s.served + s.not_served for s in slices) or 1
    height, bottom, width = 200, 170, (WIDTH - 40) / len(slices)
    parts = [f'<svg id="chart-timeline" role="img" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">'
             "<title>Semantic decisions over time: served and not served</title>"]
    for i, s in enumerate(slices):
        x = 30 + i * width
        served_h, missed_h = 150 * s.served / top, 150 * s.not_served / top
        parts.append(f'<rect x="{x:.1f}" y="{bottom - served_h:.1f}" width="{width - 2:.1f}" height="{served_h:.1f}" '
                     f'fill="#66bb6a"><title>{s.served} served</title></rect>'
                     f'<rect x="{x:.1f}" y="{bottom - served_h - missed_h:.1f}" width="{width - 2:.1f}" '
                     f'height="{missed_h:.1f}" fill="#90a4ae"><title>{s.not_served} not served</title></rect>')
    parts.append(f'<text x="30" y="{height - 8}" class="small">{_e(_clock(slices[0].start))}</text>'
                 f'<text x="{WIDTH - 200}" y="{height - 8}" class="small">{_e(_clock(slices[-1].end))} UTC</text>'
                 f'<text x="0" y="20" class="small">{top}</text></svg>')
    return "".join(parts)


STYLE = ("body{font:14px system-ui,sans-serif;margin:24px;color:#212121}h1{font-size:20px}h2{font-size:16px;"
         "margin-top:28px}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;"
         "text-align:right}td:first-child,th:first-child{text-align:left}svg text{font:12px system-ui,sans-serif}"
         "svg .small{font-size:11px}.empty{color:#777}.note{color:#555;max-width:760px}")


def render(overview: Overview, nonce: str) -> str:
    """The whole page; `nonce` admits its one inline style under the page's CSP."""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Deja · overview</title>'
        f'<style nonce="{_e(nonce)}">{STYLE}</style></head><body>'
        f"<h1>Deja overview</h1><p class=\"note\">Decision <b>{_e(overview.decision)}</b>, false-hit budget "
        f'<b id="budget-value">{_pct(overview.budget)}</b>, at {_e(_clock(overview.now))} UTC. '
        '<a href="/deja/label">Label decisions</a></p>'
        "<h2>Traffic per API (this replica, since it started)</h2>"
        f"{_traffic_chart(overview)}{_traffic_table(overview)}"
        f"{savings_section(overview.savings, overview.reuse)}"
        "<h2>The budget per namespace and kind</h2><p class=\"note\">Wrong ÷ served at the threshold in force, "
        f"as the learner reads it: the strip reaches its {overview.confidence:.0%} upper bound (green: within the "
        "budget, the budget holds; red: over), the dot is the estimate; dashed line: the budget.</p>"
        f"{_budget_chart(overview.thresholds, overview.budget, overview.confidence)}"
        "<h3>Served hits per namespace and API</h3>"
        f"{_budget_table(overview.namespaces)}"
        "<h2>The threshold per namespace</h2>"
        f"{thresholds_section(overview.thresholds, overview.budget)}"
        "<h2>The threshold over time</h2><p class=\"note\">Each namespace's cosine threshold in force as its "
        "evidence moves it, both ways.</p>"
        f"{_tracks_chart(overview.tracks)}"
        f"<h2>Semantic decisions over time</h2>{_timeline_chart(overview.timeline)}"
        "</body></html>")


overview_router = APIRouter()


@overview_router.get(PAGE_PATH, include_in_schema=False)
async def overview_page(request: Request, rt: RuntimeDep, token: str | None = None) -> Response:
    """As the label page: `?token=` trades the admin token for the session cookie and redirects; otherwise the
    page needs that session (or a bearer header). It runs no script: the charts are inline SVG drawn here."""
    settings = rt.settings
    if token is not None:
        if not is_admin_token(settings, token):
            raise Unauthorized("A valid admin token is required.")
        redirect = RedirectResponse(PAGE_PATH, status_code=303, headers={"Cache-Control": "no-store"})
        redirect.set_cookie(SESSION_COOKIE, new_session(settings, rt.clock()),
                            max_age=int(settings.admin_session_seconds), path="/deja", httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return redirect
    require_admin(request, rt)
    overview = await run_in_threadpool(read_overview, rt)
    nonce = secrets.token_urlsafe(18)
    csp = (f"default-src 'none'; style-src 'nonce-{nonce}'; img-src 'none'; base-uri 'none'; form-action 'none'; "
           "frame-ancestors 'none'")
    return HTMLResponse(render(overview, nonce), headers={
        "Content-Security-Policy": csp, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff"})
