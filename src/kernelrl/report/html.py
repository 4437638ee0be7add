"""A self-contained HTML report of a run directory: inline CSS and SVG, no scripts, no external resources.

Files the report writes next to the run: `kernels/<problem id>.py` (each solved problem's best correct kernel,
and nothing else) and `attempts/best-incorrect/<problem id>.py` (each unsolved problem's best attempt with
code, headed by its verdict). All run-provided text (problem ids, messages, settings) is escaped; links are
relative to the directory the page is written to.
"""

from __future__ import annotations

import html
import json
import math
import os
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from kernelrl.report.metrics import FAST_P, Metrics, ProblemSummary, metrics_by_level, problem_summaries
from kernelrl.runs import RunStore, Step

KERNELS = "kernels"
BEST_INCORRECT = "attempts/best-incorrect"

# one colour per verdict, used for the text classes (st-<status>) and the chart segments
STATUS_COLORS = {
    "correct": "#137333",
    "wrong_output": "#a50e0e", "runtime_error": "#d93025",
    "hack_detected": "#7b1fa2",
    "timeout": "#e37400", "crashed": "#a15c00",
    "compile_error": "#5f6368", "format_error": "#80868b", "unsupported": "#9aa0a6",
}
_STATUS_ORDER = list(STATUS_COLORS)
_OTHER_COLOR = "#6b7a99"

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1d2430;
max-width:1400px}
h1{font-size:1.5rem;margin-bottom:.2rem}
h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #dde;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #dde;padding:.25rem .5rem;text-align:right;white-space:nowrap}
th{background:#f3f5f9} td.l,th.l{text-align:left}
td.msg{white-space:normal;overflow-wrap:anywhere;min-width:20ch;max-width:60ch;font-size:.8rem;color:#3c4350}
.meta{color:#5b6472;font-size:.85rem;overflow-wrap:anywhere} .note{color:#5b6472;font-style:italic}
.plots{display:flex;flex-wrap:wrap;gap:2rem} .plots svg{max-width:100%;height:auto}
.wrap{overflow-x:auto;max-width:100%} details{margin:.3rem 0}
summary{cursor:pointer;color:#5b6472;font-size:.85rem}
details pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.8rem;background:#f6f7fa;padding:.5rem}
svg text{font-size:11px;fill:#1d2430}
""" + "".join(f".st-{s}{{color:{c};font-weight:600}}" for s, c in STATUS_COLORS.items()) + "\n"


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


def _status(status: str) -> str:
    """A verdict as coloured text."""
    s = html.escape(status)
    return f'<span class="st-{s}">{s}</span>'


def _metrics_table(by_level: dict[str, Metrics]) -> str:
    ks = sorted({k for m in by_level.values() for k in m.pass_at_k}, key=lambda k: int(k.split("@")[1]))
    head = ["level", "problems", "attempts", "format", "compile", "correct", "solved", *ks,
            *[f"fast_{p:g} eager" for p in FAST_P], *[f"fast_{p:g} inductor" for p in FAST_P],
            "geomean × eager", "geomean × inductor", "tokens / solved", "GPU s / solved"]
    rows = []
    for name, m in by_level.items():
        cells = [name, _fmt(m.problems, "int"), _fmt(m.attempts, "int"), _fmt(m.format_rate, "pct"),
                 _fmt(m.compile_rate, "pct"), _fmt(m.correct_rate, "pct"),
                 f"{m.solved} ({_fmt(m.solved_rate, 'pct')})", *[_fmt(m.pass_at_k.get(k), "pct") for k in ks],
                 *[_fmt(v, "pct") for v in m.fast_p_eager.values()],
                 *[_fmt(v, "pct") for v in m.fast_p_inductor.values()],
                 _fmt(m.geomean_speedup_eager, "x"), _fmt(m.geomean_speedup_inductor, "x"),
                 _fmt(m.tokens_per_solved), _fmt(m.gpu_seconds_per_solved)]
        rows.append("<tr>" + "".join(f"<td{' class=l' if i == 0 else ''}>{html.escape(c)}</td>"
                                     for i, c in enumerate(cells)) + "</tr>")
    header = "<tr>" + "".join(f"<th{' class=l' if i == 0 else ''}>{html.escape(h)}</th>"
                              for i, h in enumerate(head))
    return f"<div class=wrap><table>{header}</tr>{''.join(rows)}</table></div>"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = (),
           cls: str = "") -> str:
    """Cells are HTML already (escape text before)."""
    header = "".join(f"<th{' class=l' if i in left else ''}>{h}</th>" for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f"<td{' class=l' if i in left else ''}>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<div class=wrap><table{f' class={cls}' if cls else ''}><tr>{header}</tr>{body}</table></div>"


def _count_or_value(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3g}"


_WIDTH, _BAR_H, _LABEL_W, _VALUE_W = 460, 18, 150, 50


def _svg_open(title: str, height: int) -> str:
    t = html.escape(title)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" viewBox="0 0 '
            f'{_WIDTH} {height}" role="img" aria-label="{t}"><text x="0" y="14" '
            f'font-weight="bold">{t}</text>')


def _bar_chart(title: str, labels: Sequence[str], values: Sequence[float], color: str = "#4a6fd1",
               colors: Sequence[str] | None = None, classes: Sequence[str] | None = None) -> str:
    """Horizontal bars, one `<g class=bar>` per label; negative values grow left of a zero line."""
    lo, hi = min([0, *values]), max([0, *values])
    span = hi - lo
    plot_w = _WIDTH - _LABEL_W - _VALUE_W
    zero = _LABEL_W + (plot_w * -lo / span if span else 0)
    height = 24 + _BAR_H * len(labels) + 8
    parts = [_svg_open(title, height)]
    if lo < 0:
        parts.append(f'<line x1="{zero:.1f}" y1="22" x2="{zero:.1f}" y2="{height - 6}" stroke="#9aa0a6"/>')
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = 24 + i * _BAR_H
        end = zero + (plot_w * value / span if span else 0)
        fill = colors[i] if colors else (color if value >= 0 else "#b3261e")
        cls = f' class="st-{html.escape(classes[i])}"' if classes else ""
        parts.append(f'<g class="bar"><text x="{_LABEL_W - 6}" y="{y + 13}" '
                     f'text-anchor="end">{html.escape(label)}</text><rect{cls} x="{min(zero, end):.1f}" '
                     f'y="{y + 2}" width="{abs(end - zero):.1f}" height="{_BAR_H - 5}" fill="{fill}"/><text '
                     f'x="{max(zero, end) + 4:.1f}" y="{y + 13}">{_count_or_value(value)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _ordered_statuses(counts: Sequence[Counter[str]]) -> list[str]:
    present = {s for c in counts for s in c}
    return [s for s in _STATUS_ORDER if s in present] + sorted(present - set(_STATUS_ORDER))


def _verdict_chart(title: str, labels: Sequence[str], counts: Sequence[Counter[str]]) -> str:
    """One stacked bar per label (`<g class=bar>`), a segment per verdict coloured by status, and a legend."""
    statuses = _ordered_statuses(counts)
    top = max([0, *(sum(c.values()) for c in counts)])
    plot_w = _WIDTH - _LABEL_W - _VALUE_W
    per_row = 3
    legend_rows = math.ceil(len(statuses) / per_row)
    height = 24 + _BAR_H * len(labels) + 8 + 16 * legend_rows
    parts = [_svg_open(title, height)]
    for i, (label, count) in enumerate(zip(labels, counts, strict=True)):
        y = 24 + i * _BAR_H
        parts.append(f'<g class="bar"><text x="{_LABEL_W - 6}" y="{y + 13}" text-anchor="end">'
                     f'{html.escape(label)}</text>')
        x = float(_LABEL_W)
        for s in statuses:
            if not count[s]:
                continue
            w = plot_w * count[s] / top
            parts.append(f'<rect class="st-{html.escape(s)}" x="{x:.1f}" y="{y + 2}" width="{w:.1f}" '
                         f'height="{_BAR_H - 5}" fill="{STATUS_COLORS.get(s, _OTHER_COLOR)}">'
                         f'<title>{html.escape(s)}: {count[s]}</title></rect>')
            x += w
        parts.append(f'<text x="{x + 4:.1f}" y="{y + 13}">{sum(count.values())}</text></g>')
    y0 = 24 + _BAR_H * len(labels) + 8
    for j, s in enumerate(statuses):
        x, y = (j % per_row) * (_WIDTH // per_row), y0 + (j // per_row) * 16
        parts.append(f'<rect x="{x}" y="{y}" width="10" height="10" '
                     f'fill="{STATUS_COLORS.get(s, _OTHER_COLOR)}"/><text x="{x + 14}" '
                     f'y="{y + 9}">{html.escape(s)}</text>')
    parts.append("</svg>")
    return "".join(parts)


_BINS = [(0.0, 0.5, "< 0.5×"), (0.5, 0.8, "0.5–0.8×"), (0.8, 1.0, "0.8–1.0×"),
         (1.0, 1.25, "1.0–1.25×"), (1.25, 1.5, "1.25–1.5×"), (1.5, 2.0, "1.5–2×"),
         (2.0, 4.0, "2–4×"), (4.0, math.inf, "≥ 4×")]


def _speedup_histogram(title: str, values: Sequence[float], color: str) -> str:
    if not values:
        return f'<p class="note">{html.escape(title)}: no measured speedups (timing needs a GPU).</p>'
    counts = [sum(1 for v in values if lo <= v < hi) for lo, hi, _ in _BINS]
    return _bar_chart(f"{title} (n={len(values)})", [label for *_, label in _BINS], counts, color)


def _progress_charts(steps: Sequence[Step], attr: str) -> list[str]:
    """Verdicts and mean reward per turn (or per sample): what a run shows of refining (or of sampling)
    without any timing, as on a CPU."""
    keys = sorted({getattr(s, attr) for s in steps})
    groups: dict[int, list[Step]] = defaultdict(list)
    for s in steps:
        groups[getattr(s, attr)].append(s)
    labels = [f"{attr} {k}" for k in keys]
    counts = [Counter(s.result.status.value for s in groups[k]) for k in keys]
    rewards = [sum(s.reward for s in groups[k]) / len(groups[k]) for k in keys]
    return [_verdict_chart(f"verdicts per {attr}", labels, counts),
            _bar_chart(f"mean reward per {attr}", labels, rewards, "#4a6fd1")]


def _problem_rows(summaries: Sequence[ProblemSummary], links: dict[str, str], best: dict[str, Step]) -> str:
    head = ["problem", "level", "samples", "attempts", "correct samples", "best status", "best reward",
            "turn", "× eager", "× inductor", "tokens", "kernel", "verdict message"]
    left = (0, 5, 11, 12)
    rows = []
    for p in summaries:
        link = links.get(p.problem_id)
        step = best.get(p.problem_id)
        message = step.result.message if step is not None and not p.solved else ""
        short = message if len(message) <= 300 else message[:300] + "…"
        cells = [html.escape(p.problem_id), "" if p.level is None else str(p.level), str(p.samples),
                 str(p.attempts), str(p.correct_samples), _status(p.best_status),
                 _fmt(p.best_reward), "" if p.best_turn is None else str(p.best_turn),
                 _fmt(p.speedup_vs_eager, "x"), _fmt(p.speedup_vs_inductor, "x"), _fmt(p.tokens, "int"),
                 f'<a href="{html.escape(link)}">'
                 f'{"best kernel" if p.solved else "best attempt (incorrect)"}</a>'
                 if link else "–", html.escape(short)]
        rows.append("<tr>"
                    + "".join(f"<td{' class=msg' if i == 12 else ' class=l' if i in left else ''}>{c}</td>"
                              for i, c in enumerate(cells))
                    + "</tr>")
    header = "".join(f"<th{' class=l' if i in left else ''}>{h}</th>" for i, h in enumerate(head))
    return f"<div class=wrap><table><tr>{header}</tr>{''.join(rows)}</table></div>"


def best_steps(steps: Sequence[Step]) -> dict[str, Step]:
    """Problem id -> the attempt the run keeps for it: a solved problem's best correct attempt; an unsolved
    problem's best attempt (furthest-reaching, then highest reward), or its latest attempt with code when that
    one has none. Problems with no code at all are left out."""
    by_problem: dict[str, list[Step]] = defaultdict(list)
    for s in steps:
        by_problem[s.problem_id].append(s)
    chosen: dict[str, Step] = {}
    for summary in problem_summaries(steps):
        mine = by_problem[summary.problem_id]
        best = next((s for s in mine if s.sample == summary.best_sample and s.turn == summary.best_turn),
                    None)
        if best is None or not best.code:
            with_code = [s for s in mine if s.code]
            best = with_code[-1] if with_code else None
        if best is not None:
            chosen[summary.problem_id] = best
    return chosen


def _relative_file(problem_id: str) -> PurePosixPath | None:
    """`<problem id>.py` as a path inside a folder, or None for an id that would leave it."""
    parts = problem_id.split("/")
    if any(part in ("", ".", "..") or "\\" in part or "\0" in part for part in parts):
        return None
    return PurePosixPath(*parts[:-1], parts[-1] + ".py")


def _comment(text: str, limit: int = 2000) -> str:
    text = text if len(text) <= limit else text[:limit] + "…"
    return "".join(f"# {line}".rstrip() + "\n" for line in (text.splitlines() or [""]))


def write_best_kernels(run_dir: Path, steps: Sequence[Step]) -> dict[str, str]:
    """Write each solved problem's best correct kernel to RUN_DIR/kernels/<problem id>.py and each unsolved
    problem's best attempt with code to RUN_DIR/attempts/best-incorrect/<problem id>.py, headed by its
    verdict: kernels/ holds only correct kernels. A problem's file in the other folder (it was solved since,
    or an older kernelrl put an incorrect attempt in kernels/) is removed. Returns problem id -> path relative
    to the run directory (POSIX)."""
    run_dir = Path(run_dir)
    links: dict[str, str] = {}
    for problem_id, chosen in best_steps(steps).items():
        name = _relative_file(problem_id)
        if name is None:
            continue
        solved = chosen.result.correct
        rel, other = ((KERNELS / name, BEST_INCORRECT / name) if solved
                      else (BEST_INCORRECT / name, KERNELS / name))
        (run_dir / other).unlink(missing_ok=True)
        path = run_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        what = "best kernel" if solved else "best attempt (NOT correct: this problem was not solved)"
        header = _comment(f"kernelrl {what} for {problem_id}: sample {chosen.sample}, turn {chosen.turn}, "
                          f"{chosen.result.status.value}, reward {chosen.reward:.4g}")
        if not solved:
            header += _comment(f"verdict: {chosen.result.status.value} at stage {chosen.result.stage.value}: "
                               f"{chosen.result.message}")
        path.write_text(header + (chosen.code or ""))
        links[problem_id] = rel.as_posix()
    return links


def _href(target: Path, base: Path) -> str:
    """A link to `target` from a page in `base`: a relative, percent-encoded path (a file URL where no
    relative path exists, as across Windows drives)."""
    try:
        rel = os.path.relpath(os.path.abspath(target), os.path.abspath(base))
    except ValueError:
        return Path(os.path.abspath(target)).as_uri()
    return quote(Path(rel).as_posix())


_RUN_FILES = ("trajectories.jsonl", "metrics.json", "eval_results.json", "config.json")


def render_html(run_dir: str | Path, out_dir: str | Path | None = None) -> str:
    """The report page; its links are relative to `out_dir`, where the page will be written (default the run
    directory), so a report written elsewhere still opens the kernels, attempts and trajectories."""
    run_dir = Path(run_dir)
    base = Path(out_dir) if out_dir is not None else run_dir
    store = RunStore(run_dir)
    steps = store.steps()
    config = store.read_config()
    by_level = metrics_by_level(steps)
    links = {pid: _href(run_dir / rel, base) for pid, rel in write_best_kernels(run_dir, steps).items()}
    best = best_steps(steps)
    summaries = problem_summaries(steps)
    overall = by_level["all"]
    status_labels = _ordered_statuses([Counter(overall.status_counts)])
    correct = [s for s in steps if s.result.correct]
    best_eager = [p.speedup_vs_eager for p in summaries if p.speedup_vs_eager is not None]
    best_inductor = [p.speedup_vs_inductor for p in summaries if p.speedup_vs_inductor is not None]
    settings = {k: v for k, v in config.items() if k != "previous"}
    envs = sorted({f"{s.result.environment.mode} on {s.result.environment.device_name}"
                   for s in steps if s.result.environment is not None})
    files = " · ".join(f'<a href="{html.escape(_href(run_dir / f, base))}">{f}</a>'
                       for f in _RUN_FILES if (run_dir / f).is_file())
    samples = {s.sample for s in steps}
    body = [
        f"<h1>kernelrl run report</h1><p class=meta>{html.escape(str(run_dir.resolve()))} · generated "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} · {len(steps)} attempts, {len(correct)} correct · "
        f"{html.escape('; '.join(envs) or 'no environment recorded')}</p>",
        f"<p class=meta>files: {files}</p>" if files else "",
        "<details><summary>settings</summary><pre>"
        f"{html.escape(json.dumps(settings, indent=1, sort_keys=True, default=str))}</pre></details>",
        "<h2>Metrics per level</h2>", _metrics_table(by_level),
        "<p class=note>Rates are over attempts; pass@k, fast_p and geomean over problems (fast_p and geomean "
        "use each problem's best correct kernel; – means not measured).</p>",
        "<h2>Distributions</h2><div class=plots>",
        _bar_chart("verdicts (attempts)", status_labels, [overall.status_counts[k] for k in status_labels],
                   colors=[STATUS_COLORS.get(k, _OTHER_COLOR) for k in status_labels], classes=status_labels)
        if status_labels else "",
        _speedup_histogram("best speedup vs eager per solved problem", best_eager, "#2e8b57"),
        _speedup_histogram("best speedup vs Inductor per solved problem", best_inductor, "#c77c02"),
        "</div>",
        "<h2>Per turn and per sample</h2><div class=plots>",
        *(_progress_charts(steps, "turn") if steps else []),
        *(_progress_charts(steps, "sample") if len(samples) > 1 else []),
        "</div>",
        "<h2>Problems</h2>", _problem_rows(summaries, links, best),
        f"<p class=note>Best kernels are in {KERNELS}/ (correct only); an unsolved problem's best attempt is "
        f"in {BEST_INCORRECT}/, headed by its verdict.</p>", ]
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>kernelrl report: "
            f"{html.escape(run_dir.name)}</title><style>{_CSS}</style></head>"
            f"<body>{''.join(body)}</body></html>\n")


def write_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write RUN_DIR/report.html (or `out`, its links relative to where it is) and the best kernels and
    attempts it links to."""
    run_dir = Path(run_dir)
    path = Path(out) if out is not None else run_dir / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(run_dir, out_dir=path.absolute().parent))
    return path
