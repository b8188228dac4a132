"""The overview page's section on learned thresholds: per namespace the threshold in force, what it rests on and the
labels that would move it, and a chart of its evidence per band (requests, and the posterior wrong rate against
the budget). Everything traffic wrote is HTML-escaped."""

from __future__ import annotations

from html import escape

from service.thresholds import NamespaceThreshold

WIDTH = 720


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _opt(value: object | None) -> str:
    return "–" if value is None else _e(value)


def threshold_table(rows: tuple[NamespaceThreshold, ...]) -> str:
    if not rows:
        return '<p class="empty">No namespace has evidence yet: every namespace serves at the prior.</p>'
    body = "".join(
        f'<tr><td title="{_e(r.namespace)}">{_e(r.namespace[:12])}</td><td>{_e(r.kind)}</td><td>{r.threshold:.2f}</td>'
        f"<td>{r.prior:.2f}</td><td>{100 * r.estimate:.2f}%</td><td>{100 * r.upper:.2f}%</td>"
        f"<td>{'yes' if r.holds else 'no'}</td><td>{r.labels}</td>"
        f"<td>{_opt(r.next_down)}</td><td>{_opt(r.labels_to_move)}</td><td>{_opt(r.requests_to_move)}</td></tr>"
        for r in rows)
    return ('<table id="thresholds"><tr><th>namespace</th><th>kind</th><th>threshold in force</th><th>prior</th>'
            "<th>estimated wrong ÷ served</th><th>upper bound</th><th>budget holds</th><th>labels</th>"
            f"<th>next down</th><th>labels to move</th><th>requests to move</th></tr>{body}</table>")


def band_chart(row: NamespaceThreshold, budget: float) -> str:
    """Columns: would-serve requests per band (grey), the share labelled wrong (red); dots: the band's posterior
    wrong rate against the budget; the threshold in force marked."""
    bands = row.bands
    if not bands:
        return ""
    top = max(max(b.requests for b in bands), 1.0)
    height, bottom, width = 180, 150, (WIDTH - 60) / len(bands)
    parts = [f'<svg class="chart-bands" role="img" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">'
             f"<title>Evidence per band of namespace {_e(row.namespace)}</title>"]
    for i, b in enumerate(bands):
        x = 40 + i * width
        h = 120 * b.requests / top
        labelled = b.right + b.wrong
        wrong_h = h * (b.wrong / labelled) if labelled else 0.0
        rate_y = bottom - 120 * min(1.0, b.wrong_rate / max(4 * budget, 1e-9))
        parts.append(f'<rect x="{x:.1f}" y="{bottom - h:.1f}" width="{width - 2:.1f}" height="{h:.1f}" fill="#b0bec5">'
                     f"<title>{b.low:.2f}: {b.requests:.1f} requests, {b.right:.1f} right, {b.wrong:.1f} wrong, "
                     f"wrong rate {100 * b.wrong_rate:.1f}%</title></rect>"
                     f'<rect x="{x:.1f}" y="{bottom - wrong_h:.1f}" width="{width - 2:.1f}" height="{wrong_h:.1f}" '
                     f'fill="#e57373"/><circle cx="{x + width / 2:.1f}" cy="{rate_y:.1f}" r="3" fill="#1565c0"/>')
        if abs(b.low - row.threshold) < 1e-6:
            parts.append(f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{bottom}" stroke="#2e7d32" '
                         'stroke-width="2"/>')
    budget_y = bottom - 120 / 4
    parts.append(f'<line x1="40" y1="{budget_y:.1f}" x2="{WIDTH - 20}" y2="{budget_y:.1f}" stroke="#1565c0" '
                 'stroke-dasharray="4 3"/>'
                 f'<text x="40" y="{height - 6}" class="small">{bands[0].low:.2f}</text>'
                 f'<text x="{WIDTH - 60}" y="{height - 6}" class="small">{bands[-1].low:.2f}</text>'
                 f'<text x="40" y="14" class="small">{_e(row.namespace[:12])}: threshold {row.threshold:.2f}</text>'
                 "</svg>")
    return "".join(parts)


def section(rows: tuple[NamespaceThreshold, ...], budget: float) -> str:
    note = ("<p class=\"note\">Each namespace's cosine threshold, learned from its own evidence: near misses below "
            "it labelled by shadows, audits of hits above it. Chart per namespace: grey, would-serve requests per "
            "band; red, the share labelled wrong; blue dot, the band's estimated wrong rate (dashed line: the "
            "budget); green line, the threshold in force.</p>")
    return note + threshold_table(rows) + "".join(band_chart(r, budget) for r in rows[:8])
