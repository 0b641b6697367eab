"""Renderings of a :class:`~.report_model.Report`: plain-text tables, CSV, JSON, and a
self-contained HTML page with SVG charts (drawn here; no script, no network).

- ``text``: totals per component, then throughput, latency and failures per bucket;
- ``csv``: the ``over_time`` table (one row per bucket and component) with a ``failed``
  column (the bucket's failed tuples), for spreadsheets and plotting tools;
- ``json``: the whole report (:meth:`Report.to_json`);
- :func:`html`: per topology, a throughput, a latency and a failures chart over time (one line
  per component) above the totals table.
"""
from __future__ import annotations

import csv
import html as html_lib
import io
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from squall.plugins.spark.report_model import COUNTS, LATENCIES, Report, bucket_label

FORMATS = ("text", "csv", "json")
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


def render(report: Report, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report.to_json(), indent=2) + "\n"
    if fmt == "csv":
        return csv_text(report)
    return text(report)


# -- text ---------------------------------------------------------------------------------------
def text(report: Report) -> str:
    b = report.bucket
    head = (f"{report.points:,} data points from {_when(report.start)} to {_when(report.end)} "
            f"(UTC), {report.topologies} topolog{'y' if report.topologies == 1 else 'ies'}")
    lines = [f"squall metrics report: {report.path}", head]
    if report.bucket_secs != report.requested_bucket_secs:
        lines.append(f"(buckets of {b}, not {bucket_label(report.requested_bucket_secs)}: the "
                     f"data points are {b} apart)")
    lines.append("")
    lines += _section("Totals per component (latencies: mean, ms)",
                      ["topology", "component", "tasks", *COUNTS,
                       *(f"{k} ms" for k in LATENCIES)],
                      [[r["topology"], r["component"], r["tasks"],
                        *(_count(r[k]) for k in COUNTS),
                        *(_ms(r[f"{k}_ms"]) for k in LATENCIES)] for r in report.totals])
    lines += _section(f"Throughput per {b} (tuples/s)",
                      [b, "topology", "component", *(f"{k}/s" for k in COUNTS)],
                      [[_when(r["bucket"]), r["topology"], r["component"],
                        *(_rate(r[f"{k}_per_s"]) for k in COUNTS)] for r in report.over_time])
    lines += _section(f"Latency per {b} (ms)", [b, "topology", "component", *LATENCIES],
                      [[_when(r["bucket"]), r["topology"], r["component"],
                        *(_ms(r[f"{k}_ms"]) for k in LATENCIES)] for r in report.over_time
                       if any(r[f"{k}_ms"] is not None for k in LATENCIES)])
    lines += _section(f"Failures per {b}", [b, "topology", "component", "failed"],
                      [[_when(r["bucket"]), r["topology"], r["component"], _count(r["failed"])]
                       for r in report.failures], empty="no failures")
    return "\n".join(lines).rstrip() + "\n"


def _when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _section(title: str, headers: Sequence[str], rows: list[list[Any]],
             empty: str = "no data") -> list[str]:
    return [title, format_table(headers, rows) if rows else f"  ({empty})", ""]


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.3f}"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: text columns left-aligned, numbers right-aligned.

    >>> print(format_table(["name", "n"], [["a", "1"], ["bb", "22"]]))
      name   n
      ----  --
      a      1
      bb    22
    """
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    numeric = [all(_numeric(r[i]) for r in cells) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  " + "  ".join(v.rjust(w) if num else v.ljust(w)
                                for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]),
                      *(line(r) for r in cells)])


def _numeric(value: str) -> bool:
    return value == "-" or value.replace(",", "").replace(".", "", 1).lstrip("-").isdigit()


# -- csv ----------------------------------------------------------------------------------------
def csv_text(report: Report) -> str:
    failed = {(r["bucket"], r["topology"], r["component"]): r["failed"]
              for r in report.failures}
    columns = ["bucket", "topology", "component", *(f"{k}_per_s" for k in COUNTS),
               *(f"{k}_ms" for k in LATENCIES), "failed"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for r in report.over_time:
        key = (r["bucket"], r["topology"], r["component"])
        values = [r["bucket"].isoformat(), r["topology"], r["component"],
                  *(r[c] for c in columns[3:-1]), failed.get(key, 0)]
        writer.writerow(["" if v is None else v for v in values])
    return out.getvalue()


# -- html ---------------------------------------------------------------------------------------
def html(report: Report) -> str:
    """A self-contained page: per topology, throughput, latency and failures over time."""
    esc = html_lib.escape
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>squall metrics report</title><style>{_CSS}</style></head><body>",
             "<h1>squall metrics report</h1>",
             f"<p>{esc(report.path)}: {report.points:,} data points from "
             f"{_when(report.start)} to {_when(report.end)} (UTC), buckets of "
             f"{esc(report.bucket)}.</p>"]
    topologies = sorted({r["topology"] for r in report.totals})
    for topology in topologies:
        rows = [r for r in report.over_time if r["topology"] == topology]
        parts.append(f"<section><h2>{esc(topology)}</h2>")
        parts.append(line_chart(
            f"Throughput (tuples/s per {report.bucket})",
            _series(rows, lambda r: r["executed_per_s"] if r["executed_per_s"] is not None
                    else r["emitted_per_s"]), "throughput"))
        parts.append(line_chart(
            "Latency (ms; bolts: execute, spouts: complete)",
            _series(rows, lambda r: r["execute_ms"] if r["execute_ms"] is not None
                    else r["complete_ms"]), "latency"))
        failures = {(r["bucket"], r["component"]): r["failed"] for r in report.failures
                    if r["topology"] == topology}
        parts.append(line_chart(
            f"Failures (tuples per {report.bucket})",
            _series(rows, lambda r: failures.get((r["bucket"], r["component"]), 0.0)),
            "failures"))
        totals = [r for r in report.totals if r["topology"] == topology]
        parts.append(_html_table(["component", "tasks", *COUNTS, *(f"{k} ms" for k in LATENCIES)],
                                 [[r["component"], r["tasks"], *(_count(r[k]) for k in COUNTS),
                                   *(_ms(r[f"{k}_ms"]) for k in LATENCIES)] for r in totals]))
        parts.append("</section>")
    if not topologies:
        parts.append("<p>No data.</p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _series(rows: list[dict[str, Any]], value: Any) -> dict[str, list[tuple[datetime, float]]]:
    out: dict[str, list[tuple[datetime, float]]] = {}
    for r in rows:
        v = value(r)
        if v is not None:
            out.setdefault(r["component"], []).append((r["bucket"], float(v)))
    return out


def _html_table(headers: Sequence[str], rows: list[list[Any]]) -> str:
    esc = html_lib.escape
    head = "".join(f"<th>{esc(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


W, H, LEFT, RIGHT, TOP, BOTTOM = 720, 260, 64, 150, 28, 40


def line_chart(title: str, series: dict[str, list[tuple[datetime, float]]],
               kind: str) -> str:
    """An SVG line chart (one line per series, a legend, time and value axes)."""
    esc = html_lib.escape
    points = [p for values in series.values() for p in values]
    out = [f"<figure class='chart' data-chart='{kind}'><svg xmlns='http://www.w3.org/2000/svg' "
           f"width='{W}' height='{H}' viewBox='0 0 {W} {H}' role='img' "
           f"aria-label='{esc(title)}'>",
           f"<text x='{LEFT}' y='18' class='title'>{esc(title)}</text>"]
    x0, x1, y0, y1 = LEFT, W - RIGHT, H - BOTTOM, TOP
    out.append(f"<line x1='{x0}' y1='{y0}' x2='{x1}' y2='{y0}' class='axis'/>"
               f"<line x1='{x0}' y1='{y0}' x2='{x0}' y2='{y1}' class='axis'/>")
    if not points:
        out.append(f"<text x='{(x0 + x1) // 2}' y='{(y0 + y1) // 2}' "
                   "text-anchor='middle'>no data</text></svg></figure>")
        return "".join(out)
    t_min = min(p[0] for p in points).timestamp()
    t_max = max(p[0] for p in points).timestamp()
    v_max = max(max(p[1] for p in points), 0.0) or 1.0
    span = (t_max - t_min) or 1.0

    def sx(t: datetime) -> float:
        return x0 + (t.timestamp() - t_min) / span * (x1 - x0)

    def sy(v: float) -> float:
        return y0 - v / v_max * (y0 - y1)

    for i in range(5):
        v = v_max * i / 4
        y = sy(v)
        out.append(f"<line x1='{x0}' y1='{y:.1f}' x2='{x1}' y2='{y:.1f}' class='grid'/>"
                   f"<text x='{x0 - 6}' y='{y + 4:.1f}' text-anchor='end'>{_tick(v)}</text>")
    for t in (t_min, t_min + span / 2, t_max) if t_max > t_min else (t_min,):
        x = x0 + (t - t_min) / span * (x1 - x0)
        label = datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S")
        out.append(f"<text x='{x:.1f}' y='{y0 + 16}' text-anchor='middle'>{label}</text>")
    for i, (name, values) in enumerate(sorted(series.items())):
        color = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{sx(t):.1f},{sy(v):.1f}" for t, v in sorted(values))
        out.append(f"<polyline fill='none' stroke='{color}' stroke-width='2' "
                   f"points='{coords}' data-series='{esc(name)}'/>")
        if len(values) == 1:
            when, v = values[0]
            out.append(f"<circle cx='{sx(when):.1f}' cy='{sy(v):.1f}' r='3' fill='{color}'/>")
        ly = TOP + 14 + i * 16
        out.append(f"<rect x='{x1 + 12}' y='{ly - 9}' width='10' height='10' fill='{color}'/>"
                   f"<text x='{x1 + 28}' y='{ly}'>{esc(name)}</text>")
    out.append("</svg></figure>")
    return "".join(out)


def _tick(v: float) -> str:
    if v >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


_CSS = ("body{font-family:sans-serif;margin:2em;color:#222}svg text{font-size:11px}"
        "svg .title{font-size:13px;font-weight:bold}.axis{stroke:#444}.grid{stroke:#ddd}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
        "figure{margin:0.5em 0}")
