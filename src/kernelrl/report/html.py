"""A self-contained HTML report of a run directory: inline CSS and SVG, no scripts, no external resources."""

from __future__ import annotations

import html
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path

from kernelrl.report.metrics import FAST_P, Metrics, ProblemSummary, metrics_by_level, problem_summaries
from kernelrl.runs import RunStore, Step

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1d2430;max-width:1400px}
h1{font-size:1.5rem;margin-bottom:.2rem} h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #dde;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #dde;padding:.25rem .5rem;text-align:right;white-space:nowrap}
th{background:#f3f5f9} td.l,th.l{text-align:left}
.meta{color:#5b6472;font-size:.85rem} .ok{color:#137333;font-weight:600} .bad{color:#b3261e}
.note{color:#5b6472;font-style:italic} .plots{display:flex;flex-wrap:wrap;gap:2rem}
.wrap{overflow-x:auto;max-width:100%} details{margin:.3rem 0} summary{cursor:pointer;color:#5b6472;font-size:.85rem}
.st-correct{color:#137333;font-weight:600} .st-wrong_output,.st-runtime_error{color:#b3261e}
.st-hack_detected{color:#7b1fa2;font-weight:600} .st-timeout,.st-crashed{color:#c76b00}
.st-format_error,.st-compile_error,.st-unsupported{color:#6b7280}
svg text{font-size:11px;fill:#1d2430}
"""


def _fmt(value: float | None, kind: str = "num") -> str:
    if value is None:
        return "–"
    if kind == "pct":
        return f"{100 * value:.1f}%"
    if kind == "x":
        return f"{value:.2f}×"
    if kind == "int":
        return f"{int(value):,}"
    return f"{value:.3g}"


def _metrics_table(by_level: dict[str, Metrics]) -> str:
    ks = sorted({k for m in by_level.values() for k in m.pass_at_k}, key=lambda k: int(k.split("@")[1]))
    head = ["level", "problems", "attempts", "format", "compile", "correct", "solved", *ks,
            *[f"fast_{p:g} eager" for p in FAST_P], *[f"fast_{p:g} inductor" for p in FAST_P],
            "geomean × eager", "geomean × inductor", "tokens / solved", "GPU s / solved"]
    rows = []
    for name, m in by_level.items():
        cells = [name, _fmt(m.problems, "int"), _fmt(m.attempts, "int"), _fmt(m.format_rate, "pct"),
                 _fmt(m.compile_rate, "pct"), _fmt(m.correct_rate, "pct"), f"{m.solved} ({_fmt(m.solved_rate, 'pct')})",
                 *[_fmt(m.pass_at_k.get(k), "pct") for k in ks],
                 *[_fmt(v, "pct") for v in m.fast_p_eager.values()],
                 *[_fmt(v, "pct") for v in m.fast_p_inductor.values()],
                 _fmt(m.geomean_speedup_eager, "x"), _fmt(m.geomean_speedup_inductor, "x"),
                 _fmt(m.tokens_per_solved), _fmt(m.gpu_seconds_per_solved)]
        rows.append("<tr>" + "".join(f"<td{' class=l' if i == 0 else ''}>{html.escape(c)}</td>"
                                     for i, c in enumerate(cells)) + "</tr>")
    header = "<tr>" + "".join(f"<th{' class=l' if i == 0 else ''}>{html.escape(h)}</th>" for i, h in enumerate(head))
    return f"<div class=wrap><table>{header}</tr>{''.join(rows)}</table></div>"


def _count_or_value(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3g}"


def _bar_chart(title: str, labels: Sequence[str], values: Sequence[float], color: str = "#4a6fd1") -> str:
    width, bar_h, label_w = 460, 18, 150
    top = max([0, *values])
    height = 24 + bar_h * len(labels) + 8
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{html.escape(title)}"><text x="0" y="14" font-weight="bold">{html.escape(title)}</text>']
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = 24 + i * bar_h
        w = 0 if not top else (width - label_w - 50) * max(0, value) / top  # a negative value: a label only
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{html.escape(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{bar_h - 5}" fill="{color}"/>'
                     f'<text x="{label_w + w + 4:.1f}" y="{y + 13}">{_count_or_value(value)}</text>')
    parts.append("</svg>")
    return "".join(parts)


_BINS = [(0.0, 0.5, "< 0.5×"), (0.5, 0.8, "0.5–0.8×"), (0.8, 1.0, "0.8–1.0×"), (1.0, 1.25, "1.0–1.25×"),
         (1.25, 1.5, "1.25–1.5×"), (1.5, 2.0, "1.5–2×"), (2.0, 4.0, "2–4×"), (4.0, math.inf, "≥ 4×")]


def _speedup_histogram(title: str, values: Sequence[float], color: str) -> str:
    if not values:
        return f'<p class="note">{html.escape(title)}: no measured speedups (timing needs a GPU).</p>'
    counts = [sum(1 for v in values if lo <= v < hi) for lo, hi, _ in _BINS]
    return _bar_chart(f"{title} (n={len(values)})", [label for *_, label in _BINS], counts, color)


def _problem_rows(summaries: Sequence[ProblemSummary], links: dict[str, str]) -> str:
    head = ["problem", "level", "samples", "attempts", "correct samples", "best status", "best reward", "turn",
            "× eager", "× inductor", "tokens", "kernel"]
    rows = []
    for p in summaries:
        link = links.get(p.problem_id)
        cells = [html.escape(p.problem_id), "" if p.level is None else str(p.level), str(p.samples), str(p.attempts),
                 str(p.correct_samples), f'<span class="st-{html.escape(p.best_status)}">{html.escape(p.best_status)}</span>',
                 _fmt(p.best_reward), "" if p.best_turn is None else str(p.best_turn),
                 _fmt(p.speedup_vs_eager, "x"), _fmt(p.speedup_vs_inductor, "x"), _fmt(p.tokens, "int"),
                 f'<a href="{html.escape(link)}">{"best kernel" if p.solved else "best attempt (incorrect)"}</a>' if link else "–"]
        rows.append("<tr>" + "".join(f"<td{' class=l' if i in (0, 5, 11) else ''}>{c}</td>"
                                     for i, c in enumerate(cells)) + "</tr>")
    header = "".join(f"<th{' class=l' if i in (0, 5, 11) else ''}>{h}</th>" for i, h in enumerate(head))
    return f"<div class=wrap><table><tr>{header}</tr>{''.join(rows)}</table></div>"


def _per_turn_charts(steps: Sequence[Step]) -> list[str]:
    """Mean reward and correct attempts per turn: what a CPU run (no timings) shows of learning or refining."""
    turns = sorted({s.turn for s in steps})
    if not turns:
        return []
    by_turn = {t: [s for s in steps if s.turn == t] for t in turns}
    labels = [f"turn {t}" for t in turns]
    return [_bar_chart("mean reward per turn", labels, [sum(s.reward for s in by_turn[t]) / len(by_turn[t])
                                                        for t in turns], "#4a6fd1"),
            _bar_chart("correct attempts per turn", labels,
                       [sum(s.result.correct for s in by_turn[t]) for t in turns], "#2e8b57")]


def write_best_kernels(run_dir: Path, steps: Sequence[Step]) -> dict[str, str]:
    """Write each solved problem's best correct kernel to RUN_DIR/kernels/<problem id>.py, and each unsolved
    problem's best attempt with code (furthest-reaching, then latest) to RUN_DIR/attempts/best-incorrect/<problem
    id>.py, headed by its verdict: kernels/ holds only correct kernels. Returns problem id -> path relative to the
    run directory."""
    links: dict[str, str] = {}
    for summary in problem_summaries(steps):
        chosen = next((s for s in steps if s.problem_id == summary.problem_id and s.sample == summary.best_sample
                       and s.turn == summary.best_turn), None)
        if chosen is None or not chosen.code:
            with_code = [s for s in steps if s.problem_id == summary.problem_id and s.code]
            chosen = with_code[-1] if with_code else None
        if chosen is None:
            continue
        solved = chosen.result.correct
        rel = (Path("kernels") if solved else Path("attempts") / "best-incorrect") / f"{summary.problem_id}.py"
        path = run_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        what = "best kernel" if solved else "best attempt (NOT correct)"
        header = (f"# kernelrl {what} for {summary.problem_id}: sample {chosen.sample}, turn {chosen.turn}, "
                  f"{chosen.result.status.value}, reward {chosen.reward:.4g}\n")
        if not solved:
            header += f"# verdict: {chosen.result.message[:200]}\n"
        path.write_text(header + chosen.code)
        links[summary.problem_id] = rel.as_posix()
    return links


def render_html(run_dir: str | Path, out_dir: str | Path | None = None) -> str:
    """The report page; its links are relative to `out_dir`, where the page will be written (default the run
    directory), so a report written elsewhere still opens the kernels."""
    run_dir = Path(run_dir)
    store = RunStore(run_dir)
    steps = store.steps()
    config = store.read_config()
    by_level = metrics_by_level(steps)
    links = write_best_kernels(run_dir, steps)
    if out_dir is not None:
        links = {pid: Path(os.path.relpath(run_dir / rel, Path(out_dir))).as_posix() for pid, rel in links.items()}
    summaries = problem_summaries(steps)
    overall = by_level["all"]
    status_labels = list(overall.status_counts)
    correct = [s for s in steps if s.result.correct]
    best_eager = [p.speedup_vs_eager for p in summaries if p.speedup_vs_eager is not None]
    best_inductor = [p.speedup_vs_inductor for p in summaries if p.speedup_vs_inductor is not None]
    settings = {k: v for k, v in config.items() if k != "previous"}
    meta = html.escape(", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                                 for k, v in sorted(settings.items())))
    envs = sorted({f"{s.result.environment.mode} on {s.result.environment.device_name}"
                   for s in steps if s.result.environment is not None})
    body = [
        f"<h1>kernelrl run report</h1><p class=meta>{html.escape(str(run_dir.resolve()))} · generated "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} · {len(steps)} attempts, {len(correct)} correct · "
        f"{html.escape('; '.join(envs) or 'no environment recorded')}</p>"
        f"<details><summary>settings</summary><p class=meta>{meta}</p></details>",
        "<h2>Metrics per level</h2>", _metrics_table(by_level),
        "<p class=note>Rates are over attempts; pass@k, fast_p and geomean over problems (fast_p and geomean use "
        "each problem's best correct kernel; – means not measured).</p>",
        "<h2>Distributions</h2><div class=plots>",
        _bar_chart("verdicts (attempts)", status_labels, [overall.status_counts[k] for k in status_labels], "#6b7a99"),
        _speedup_histogram("best speedup vs eager per solved problem", best_eager, "#2e8b57"),
        _speedup_histogram("best speedup vs Inductor per solved problem", best_inductor, "#c77c02"),
        *_per_turn_charts(steps),
        "</div>",
        "<h2>Problems</h2>", _problem_rows(summaries, links),
    ]
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>kernelrl report: "
            f"{html.escape(run_dir.name)}</title><style>{_CSS}</style></head><body>{''.join(body)}</body></html>\n")


def write_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write RUN_DIR/report.html (or `out`) and the best kernels it links to."""
    run_dir = Path(run_dir)
    path = Path(out) if out is not None else run_dir / "report.html"
    path.write_text(render_html(run_dir, out_dir=path.resolve().parent if out is not None else None))
    return path
