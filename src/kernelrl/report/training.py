"""The HTML report of a training run directory (`kernelrl train sft|grpo|two-stage`): the training curves as
inline SVG line charts, the held-out evaluations and the verdicts of the GRPO rollouts; same page style as the
bench report, no scripts, no external resources.

A training run directory holds `train_config.json` and `metrics.jsonl` (one record per log
event: `phase`, `step`, `time` and the phase's values), possibly `rollouts.jsonl` (or
`rollouts.jsonl.gz`) and held-out bench runs under `heldout/`. Two-stage runs keep each stage
in its own such directory (`frontend/`, `midend/`); the report reads both and draws a series
per stage. Malformed lines are skipped and counted; values that are missing, null, NaN or not
numbers are left out of the charts, and a chart with no values is left out of the page.
"""

from __future__ import annotations

import gzip
import html
import json
import math
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelrl.candidates import Candidate
from kernelrl.problems import ProblemError, Suite, load_suite
from kernelrl.problems.problem import family_of_name
from kernelrl.report.html import (
    _CSS,
    _WIDTH,
    _fmt,
    _href,
    _ordered_statuses,
    _status,
    _svg_open,
    _table,
    _verdict_chart,
)
from kernelrl.report.originality import originality_section, program_counts, program_of, reference_programs
from kernelrl.report.rollouts import Rollout, _learning_section, learning_by

CONFIG = "train_config.json"
METRICS = "metrics.jsonl"
ROLLOUTS = "rollouts.jsonl"
BENCH_STORE = "run.sqlite"  # a bench/agent run directory's trajectory store (kernelrl.runs.store.DATABASE)
STAGES = ("frontend", "midend")  # two-stage: RUN_DIR/<stage>/ is a training run directory of its own
ROLLOUT_ROWS = 10  # the rollouts table groups steps into at most this many ranges per stage

_PALETTE = ["#4a6fd1", "#d93025", "#137333", "#7b1fa2", "#e37400", "#00838f", "#5f6368", "#c2185b", "#827717",
            "#3949ab"]


def _is_single_run(path: Path) -> bool:
    return (path / METRICS).is_file() and (path / CONFIG).is_file()


def is_training_run(run_dir: str | Path) -> bool:
    """A directory with `metrics.jsonl` and `train_config.json` (or two-stage `frontend/` / `midend/`
    directories that have them) and no bench trajectory store (`run.sqlite`)."""
    path = Path(run_dir)
    if (path / BENCH_STORE).exists():
        return False
    return _is_single_run(path) or any(_is_single_run(path / stage) for stage in STAGES)


@dataclass
class TrainingRun:
    """What the report reads of a training run directory. `records` are metrics.jsonl's valid records in file
    order, each with `step` an int and `stage` filled in from a stage directory where the record has none."""

    run_dir: Path
    # file path relative to run_dir -> parsed JSON (or None)
    configs: dict[str, Any] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0  # metrics.jsonl lines that are not a JSON object with a phase and a step
    rollouts: list[Rollout] = field(default_factory=list)
    rollouts_skipped: int = 0
    heldout_dirs: dict[tuple[str | None, int, str, str], Path] = field(default_factory=dict)
    suite: Suite | None = None  # the suite it trained on, when its recorded location loads here

    @property
    def config(self) -> dict[str, Any]:
        """The top-level config (for two-stage without one: the first stage's)."""
        for value in self.configs.values():
            if isinstance(value, dict):
                return value
        return {}

    def phase(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["phase"] == name]


def _num(value: Any) -> float | None:
    """A finite number, or None (null, NaN, infinities, booleans, strings)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip():
                yield line


def _parse(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict):
        return None
    step = _num(record.get("step"))
    if step is None:
        return None
    record["step"] = int(step)
    return record


def _run_dirs(path: Path) -> list[tuple[Path, str | None]]:
    """(directory, the stage its records belong to by default) of each training run directory in `path`."""
    found = [(path, None)] if (path / METRICS).is_file() else []
    return found + [(path / stage, stage) for stage in STAGES if (path / stage / METRICS).is_file()]


def load_training_run(run_dir: str | Path) -> TrainingRun:
    """Read a training run directory (see the module docstring); never fails on a malformed line."""
    path = Path(run_dir)
    run = TrainingRun(path)
    for config in [path / CONFIG, *(path / stage / CONFIG for stage in STAGES)]:
        if config.is_file():
            try:
                run.configs[config.relative_to(path).as_posix()] = json.loads(config.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                run.configs[config.relative_to(path).as_posix()] = None
    for directory, stage in _run_dirs(path):
        for line in _lines(directory / METRICS):
            record = _parse(line)
            if record is None or not isinstance(record.get("phase"), str):
                run.skipped += 1
                continue
            if not isinstance(record.get("stage"), str):
                record.pop("stage", None)
                if stage is not None:
                    record["stage"] = stage
            run.records.append(record)
            if record["phase"] == "heldout":
                key = _heldout_key(record)
                where = "" if record.get("suite") is None else f"-{heldout_dir_name(str(record['suite']))}"
                for name in (f"{record.get('model_label')}-{record.get('label')}-step{record['step']}{where}",
                             f"{record.get('label')}-step{record['step']}{where}"):
                    if (directory / "heldout" / name).is_dir():
                        run.heldout_dirs[key] = directory / "heldout" / name
                        break
        rollouts = next((f for f in (directory / ROLLOUTS, directory / f"{ROLLOUTS}.gz") if f.is_file()),
                        None)
        if rollouts is not None:
            for line in _lines(rollouts):
                record = _parse(line)
                if record is None or not isinstance(record.get("status"), str):
                    run.rollouts_skipped += 1
                    continue
                own = record.get("stage")
                problem, compiled = record.get("problem_id"), record.get("compiled")
                problem = problem if isinstance(problem, str) else None
                completion = record.get("completion")
                code = (Candidate.from_text(completion, "completion").code
                        if record["status"] == "correct" and isinstance(completion, str) else "")
                sampling_round = record.get("round")
                sampling_round = sampling_round if isinstance(sampling_round, int) else None
                run.rollouts.append(Rollout(own if isinstance(own, str) else stage, record["step"],
                                            record["status"], _num(record.get("reward")), problem,
                                            compiled if isinstance(compiled, bool) else None,
                                            program_of(problem, code) if code else None,
                                            round=sampling_round))
    if run.rollouts:
        _add_families(run)
    return run


def _add_families(run: TrainingRun) -> None:
    """Load the run's suite (once: the families and the reference solutions come from it) and give each
    rollout its problem's family; a problem the suite does not hold, or a suite recorded on another machine,
    gets the family its file name says."""
    try:
        run.suite = load_suite(run.config.get("suite") or None)
    except (ProblemError, OSError):
        run.suite = None
    families = {p.id: p.family for p in run.suite.problems} if run.suite is not None else {}
    for r in run.rollouts:
        if r.problem_id is not None:
            r.family = families.get(r.problem_id) or family_of_name(r.problem_id.rsplit("/", 1)[-1])


def heldout_dir_name(suite: str) -> str:
    """A held-out suite other than the training suite's, as the end of its bench runs' directory names
    (`RUN_DIR/heldout/MODEL-LABEL-stepN-NAME`; a suite may be named by its path)."""
    last = suite.strip("/").split("/")[-1]
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in last) or "suite"


def _heldout_key(record: dict[str, Any]) -> tuple[str | None, int, str, str, str | None]:
    return (record.get("stage"), record["step"], str(record.get("model_label")), str(record.get("label")),
            record.get("suite"))


# -- line charts ---------------------------------------------------------------------------------------------
@dataclass
class Series:
    """One line of a chart: (step, value) points, and optionally a band (step, low, high) drawn behind it. A
    chart colours its series by `name` and dashes them by `stage`."""

    name: str
    points: list[tuple[float, float]]
    band: list[tuple[float, float, float]] | None = None
    stage: str | None = None

    @property
    def label(self) -> str:
        return _stage_name(self.name, self.stage)


_LINE_H, _LEFT, _RIGHT, _TOP, _BOTTOM = 170, 56, 12, 24, 28
_MARKERS = 60  # points are marked (with a tooltip) on series of at most this many points
_DASHES = ["", "6 3", "2 2", "8 3 2 3"]  # one per stage, in the order they appear


def _nice_ticks(lo: float, hi: float, count: int, integer: bool = False) -> tuple[list[float], float]:
    """Round tick values covering [lo, hi], about `count`
    intervals (whole numbers when `integer`); and the step."""
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    if integer:
        step = max(1.0, float(math.ceil(step)))
    first, last = math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step
    return [first + i * step for i in range(round((last - first) / step) + 1)], step


def _tick(value: float, kind: str, step: float = 0.0) -> str:
    if step and abs(value) < step * 1e-6:
        value = 0.0
    if kind == "pct":
        return f"{100 * value:.3g}%"
    if kind == "int":
        return f"{value:.0f}"
    return f"{value:.3g}"


def _line_chart(title: str, series: Sequence[Series], kind: str = "num") -> str:
    """Lines over step (`<polyline class="series" data-series=LABEL>`, one point per value) with a legend
    below; `kind` "pct" shows values as percentages on an axis from 0 to (at least) 100%, "int" whole-number
    ticks. Empty string when no series has a point."""
    series = [s for s in series if s.points]
    if not series:
        return ""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points] + [v for s in series for _, lo, hi in (s.band or [])
                                                     for v in (lo, hi)]
    y_lo, y_hi = (min(0.0, *ys), max(1.0, *ys)) if kind == "pct" else (min(ys), max(ys))
    if y_hi == y_lo:
        pad = abs(y_lo) * 0.1 or 1.0
        y_lo, y_hi = y_lo - pad, y_hi + pad
    y_ticks, y_step = _nice_ticks(y_lo, y_hi, 4, integer=kind == "int")
    x_ticks, _ = _nice_ticks(min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1, 5, integer=True)
    (y_lo, y_hi), (x_lo, x_hi) = (y_ticks[0], y_ticks[-1]), (x_ticks[0], x_ticks[-1])
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _LINE_H - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + plot_w * (x - x_lo) / (x_hi - x_lo)

    def py(y: float) -> float:
        return _TOP + plot_h * (y_hi - y) / (y_hi - y_lo)

    colors = {name: _PALETTE[i % len(_PALETTE)]
              for i, name in enumerate(dict.fromkeys(s.name for s in series))}
    dashes = {stage: _DASHES[i % len(_DASHES)]
              for i, stage in enumerate(dict.fromkeys(s.stage for s in series))}
    per_row = 2
    height = _LINE_H + 16 * math.ceil(len(series) / per_row)
    parts = [_svg_open(title, height)]
    for y in y_ticks:
        parts.append(f'<line x1="{_LEFT}" y1="{py(y):.1f}" x2="{_WIDTH - _RIGHT}" y2="{py(y):.1f}" '
                     f'stroke="#e3e6ec"/><text x="{_LEFT - 4}" y="{py(y) + 4:.1f}" '
                     f'text-anchor="end">{_tick(y, kind, y_step)}</text>')
    for x in x_ticks:
        parts.append(f'<text x="{px(x):.1f}" y="{_TOP + plot_h + 14}" text-anchor="middle">{x:.0f}</text>')
    parts.append(f'<text x="{_WIDTH - _RIGHT}" y="{_TOP + plot_h + 26}" text-anchor="end">step</text>'
                 f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_WIDTH - _RIGHT}" y2="{_TOP + plot_h}" '
                 f'stroke="#9aa0a6"/>')
    for s in series:
        color, label = colors[s.name], html.escape(s.label)
        dash = f' stroke-dasharray="{dashes[s.stage]}"' if dashes[s.stage] else ""
        if s.band:
            upper = " ".join(f"{px(x):.1f},{py(hi):.1f}" for x, _, hi in s.band)
            lower = " ".join(f"{px(x):.1f},{py(lo):.1f}" for x, lo, _ in reversed(s.band))
            parts.append(f'<polygon class="band" data-series="{label}" points="{upper} {lower}" '
                         f'fill="{color}" fill-opacity="0.15" stroke="none"/>')
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
        parts.append(f'<polyline class="series" data-series="{label}" points="{points}" fill="none" '
                     f'stroke="{color}" stroke-width="1.5"{dash}><title>{label}</title></polyline>')
        if len(s.points) <= _MARKERS:
            parts.extend(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.2" fill="{color}"><title>{label}, '
                         f'step {x:.0f}: {_tick(y, kind) if kind != "num" else f"{y:.4g}"}</title></circle>'
                         for x, y in s.points)
    for i, s in enumerate(series):
        x, y = (i % per_row) * (_WIDTH // per_row), _LINE_H + (i // per_row) * 16
        dash = f' stroke-dasharray="{dashes[s.stage]}"' if dashes[s.stage] else ""
        parts.append(f'<line x1="{x}" y1="{y + 5}" x2="{x + 18}" y2="{y + 5}" stroke="{colors[s.name]}" '
                     f'stroke-width="2.5"{dash}/><text x="{x + 22}" '
                     f'y="{y + 9}">{html.escape(s.label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _stage_name(name: str, stage: str | None) -> str:
    return f"{name} [{stage}]" if stage else name


def _series(records: Sequence[dict[str, Any]], key: str, name: str | None = None,
            band: str | None = None) -> list[Series]:
    """A series per stage of `key` over step (a step logged twice, as after a resume, keeps its last value);
    `band`: a key whose value v draws value ± v behind the line."""
    by_stage: dict[str | None, dict[int, tuple[float, float | None]]] = defaultdict(dict)
    for r in records:
        value = _num(r.get(key))
        if value is not None:
            by_stage[r.get("stage")][r["step"]] = (value, _num(r.get(band)) if band else None)
    out = []
    for stage, points in by_stage.items():
        line = [(s, points[s][0]) for s in sorted(points)]
        spread = [(s, v - d, v + d) for s, (v, d) in sorted(points.items()) if d is not None]
        out.append(Series(name or key, line, spread or None, stage))
    return out


def _chart(title: str, parts: Sequence[tuple[Sequence[dict[str, Any]], str, str | None]], kind: str = "num",
           band: str | None = None) -> str:
    """A chart of several keys: (records, key, series name)."""
    return _line_chart(title, [s for records, key, name in parts for s in _series(records, key, name, band)],
                       kind)


def _pass_keys(records: Sequence[dict[str, Any]]) -> list[str]:
    keys = {k for r in records for k in r if k.startswith("pass@") and k[5:].isdigit()}
    return sorted(keys, key=lambda k: int(k[5:]))


def _heldout_chart(heldout: Sequence[dict[str, Any]]) -> str:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in heldout:  # a held-out suite other than the training suite's is a line of its own
        groups[" ".join(str(x) for x in (r.get("suite"), r.get("label")) if x is not None)].append(r)
    series: list[Series] = []
    for label, records in groups.items():
        for key in ["correct_rate", *_pass_keys(records)]:
            # a line that repeats one of its label's (greedy pass@1 is its correct_rate) is left out
            series += [s for s in _series(records, key, f"{label} {key}")
                       if not any(o.name.startswith(f"{label} ")
                                  and (o.stage, o.points) == (s.stage, s.points) for o in series)]
    return _line_chart("held-out correctness (test split)", series, "pct")


def _heldout_table(run: TrainingRun, heldout: Sequence[dict[str, Any]], base: Path) -> str:
    ks = _pass_keys(heldout)
    stages = any(r.get("stage") for r in heldout)
    suites = any(r.get("suite") for r in heldout)  # "" for the training suite's own test split
    head = ["step", *(["stage"] if stages else []), "model", "label", *(["suite"] if suites else []),
            "problems", "compile", "correct", *ks, "fast_1", "bench run"]
    rows = []
    for r in sorted(heldout, key=lambda r: (str(r.get("stage") or ""), r["step"], str(r.get("suite") or ""),
                                            str(r.get("label")))):
        problems = _num(r.get("problems"))
        bench = run.heldout_dirs.get(_heldout_key(r))
        link = "–"
        if bench is not None:
            target = bench / "report.html" if (bench / "report.html").is_file() else bench
            link = f'<a href="{html.escape(_href(target, base))}">{html.escape(bench.name)}</a>'
        rows.append([str(r["step"]), *([html.escape(str(r.get("stage") or ""))] if stages else []),
                     html.escape(str(r.get("model_label", ""))), html.escape(str(r.get("label", ""))),
                     *([html.escape(str(r.get("suite") or ""))] if suites else []), _fmt(problems, "int"),
                     _fmt(_num(r.get("compile_rate")), "pct"), _fmt(_num(r.get("correct_rate")), "pct"),
                     *[_fmt(_num(r.get(k)), "pct") for k in ks],
                     _fmt(_num(r.get("fast_1")), "pct"), link])
    offset = 1 if stages else 0
    left = (1, 1 + offset, 2 + offset, *([3 + offset] if suites else []), len(head) - 1)
    return _table(head, rows, left=left, cls="heldout")


def _step_ranges(steps: Sequence[int], most: int = ROLLOUT_ROWS) -> list[tuple[int, int]]:
    """At most `most` consecutive (first, last) step ranges covering `steps`: one per step when few."""
    distinct = sorted(set(steps))
    if len(distinct) <= most:
        return [(s, s) for s in distinct]
    lo, hi = distinct[0], distinct[-1]
    width = (hi - lo + 1) / most
    buckets: dict[int, list[int]] = defaultdict(list)
    for s in distinct:
        buckets[min(int((s - lo) / width), most - 1)].append(s)
    return [(b[0], b[-1]) for _, b in sorted(buckets.items())]


def _rollouts_section(rollouts: Sequence[Rollout]) -> str:
    by_stage: dict[str | None, list[Rollout]] = defaultdict(list)
    for r in rollouts:
        by_stage[r.stage].append(r)
    labels, counts, rewards = [], [], []
    for stage, mine in by_stage.items():
        for first, last in _step_ranges([r.step for r in mine]):
            chosen = [r for r in mine if first <= r.step <= last]
            labels.append(_stage_name(f"step {first}" if first == last else f"steps {first}–{last}", stage))
            counts.append(Counter(r.status for r in chosen))
            values = [r.reward for r in chosen if r.reward is not None]
            rewards.append(sum(values) / len(values) if values else None)
    statuses = _ordered_statuses(counts)
    rows = [[html.escape(label), str(sum(count.values())), *[str(count[s]) for s in statuses], _fmt(reward)]
            for label, count, reward in zip(labels, counts, rewards, strict=True)]
    table = _table(["steps", "completions", *[_status(s) for s in statuses], "mean reward"], rows, left=(0,),
                   cls="rollouts")
    return table + ("<div "
                    f"class=plots>{_verdict_chart('rollout verdicts by step range', labels, counts)}</div>")


# -- the page ------------------------------------------------------------------------------------------------
def _duration(records: Sequence[dict[str, Any]]) -> str:
    times = [t for t in (_num(r.get("time")) for r in records) if t is not None]
    if len(times) < 2:
        return ""
    seconds = max(times) - min(times)
    return f" · {seconds / 3600:.1f} h logged" if seconds >= 3600 else f" · {seconds / 60:.1f} min logged"


def _section(title: str, charts: Sequence[str]) -> str:
    charts = [c for c in charts if c]
    return f"<h2>{html.escape(title)}</h2><div class=plots>{''.join(charts)}</div>" if charts else ""


def render_training_html(run_dir: str | Path, out_dir: str | Path | None = None,
                         run: TrainingRun | None = None) -> str:
    """The report page of a training run; links (held-out bench runs, files) are relative to `out_dir`, where
    the page will be written (default the run directory)."""
    run_dir = Path(run_dir)
    run = run if run is not None else load_training_run(run_dir)
    base = Path(out_dir) if out_dir is not None else run_dir
    sft, grpo, heldout = run.phase("sft"), run.phase("grpo"), run.phase("heldout")
    config = run.config
    phases = Counter(r["phase"] for r in run.records)
    steps = [r["step"] for r in run.records]
    files = [f for d, _ in _run_dirs(run_dir) for f in (d / CONFIG, d / METRICS, d / ROLLOUTS) if f.is_file()]
    links = " · ".join(f'<a href="{html.escape(_href(f, base))}">'
                       f'{html.escape(f.relative_to(run_dir).as_posix())}</a>' for f in files)
    counts = ", ".join(f"{html.escape(p)}: {n}" for p, n in phases.items()) or "none"
    skipped = (f"<p class=note>{run.skipped} malformed metrics "
               f"line{'s' if run.skipped != 1 else ''} skipped.</p>"
               if run.skipped else "")
    if run.rollouts_skipped:
        skipped += f"<p class=note>{run.rollouts_skipped} malformed rollouts line(s) skipped.</p>"
    shown = {name: html.escape(json.dumps(value, indent=1, sort_keys=True, default=str))
             if value is not None else "unreadable JSON" for name, value in run.configs.items()}
    configs = "".join(f"<details><summary>config ({html.escape(name)})</summary><pre>{text}</pre></details>"
                      for name, text in shown.items())
    body = [
        f"<h1>kernelrl training report</h1><p class=meta>{html.escape(str(run_dir.resolve()))} · generated "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} · command {html.escape(str(config.get('command', '?')))} · "
        f"model {html.escape(str(config.get('model', '?')))}</p>",
        f"<p class=meta>{len(run.records)} records ({counts})"
        + (f" · steps {min(steps)}–{max(steps)}" if steps else "") + f"{_duration(run.records)}</p>",
        f"<p class=meta>files: {links}</p>" if links else "", skipped, configs,
        _section("Loss and optimizer", [
            _chart("loss",
                   [(sft, "loss", "sft loss"), (sft, "eval_loss", "sft eval_loss"),
                    (grpo, "loss", "grpo loss")]),
            _chart("learning rate", [(sft, "learning_rate", "sft"), (grpo, "learning_rate", "grpo")]),
            _chart("grad norm", [(sft, "grad_norm", "sft"), (grpo, "grad_norm", "grpo")]),
            _chart("mean token accuracy", [(sft, "mean_token_accuracy", "sft")], "pct"),
        ]),
        _section("Reward", [
            _line_chart("reward (mean ± std)", _series(grpo, "reward", band="reward_std")),
            _chart("frac_reward_zero_std", [(grpo, "frac_reward_zero_std", None)], "pct"),
            _chart("reward components (per step)", [
                (grpo, "kernelrl/format_error_rate", "format_error"),
                (grpo, "kernelrl/compiled_rate", "compiled"), (grpo, "kernelrl/correct_rate", "correct"),
                (grpo, "kernelrl/hack_rate", "hack")], "pct"),
            _chart("mean speedup vs eager (correct kernels)",
                   [(grpo, "kernelrl/mean_speedup_vs_eager", "speedup")]),
            _chart("KL", [(grpo, "kl", None)]),
            _chart("entropy", [(grpo, "entropy", None)]),
            _chart("completion mean length (tokens)", [(grpo, "completions/mean_length", "mean length")]),
            _chart("evaluation seconds per step", [(grpo, "kernelrl/eval_seconds", "seconds")]),
        ]),
        _section("Curriculum", [
            _chart("curriculum tier", [(grpo, "curriculum/tier", "tier")], "int"),
            _chart("curriculum solve rate", [(grpo, "curriculum/solve_rate", "solve rate")], "pct"),
            _chart("curriculum eligible problems", [(grpo, "curriculum/eligible", "eligible")], "int"),
        ]),
    ]
    if heldout:
        body += ["<h2>Held-out evaluations</h2>", f"<div class=plots>{_heldout_chart(heldout)}</div>",
                 _heldout_table(run, heldout, base),
                 "<p class=note>Rates over attempts (compile, correct) and problems (pass@k, fast_1: best "
                 "correct kernel faster than eager); – means not measured. Each row's bench run has its "
                 "own report (kernelrl report on its directory).</p>"]
    if run.rollouts:
        body += ["<h2>Rollouts</h2>", _rollouts_section(run.rollouts),
                 _learning_section(learning_by(run.rollouts, "family")),
                 _learning_section(learning_by(run.rollouts, "problem")),
                 originality_section(rollout_programs(run))]
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>kernelrl training report: "
            f"{html.escape(run_dir.name)}</title><style>{_CSS}</style></head>"
            f"<body>{''.join(body)}</body></html>\n")


def write_training_report(run_dir: str | Path, out: str | Path | None = None,
                          run: TrainingRun | None = None) -> Path:
    """Write RUN_DIR/report.html (or `out`, its links relative to where it is) for a training run."""
    run_dir = Path(run_dir)
    path = Path(out) if out is not None else run_dir / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_training_html(run_dir, out_dir=path.absolute().parent, run=run))
    return path


def rollout_programs(run: TrainingRun) -> list:
    """Distinct programs and reference copies among the correct rollouts (`report.originality`), against the
    reference solutions of the run's suite (none when it cannot be loaded here)."""
    references = reference_programs(run.suite) if run.suite is not None else {}
    return program_counts([r.program for r in run.rollouts if r.program is not None], references)


def training_summary(run: TrainingRun) -> dict[str, Any]:
    """A JSON-able summary: records per phase, skipped lines, the last logged values per phase and stage, and
    every held-out record."""
    last: dict[str, dict[str, Any]] = {}
    for r in run.records:
        if r["phase"] != "heldout":
            last.setdefault(_stage_name(r["phase"], r.get("stage")), {}).update(
                {k: v for k, v in r.items() if k not in ("phase", "stage")})
    steps = [r["step"] for r in run.records]
    return {"kind": "training", "run_dir": str(run.run_dir), "command": run.config.get("command"),
            "model": run.config.get("model"), "records": dict(Counter(r["phase"] for r in run.records)),
            "skipped_lines": run.skipped, "last_step": max(steps) if steps else None, "last": last,
            "heldout": run.phase("heldout"), "rollouts": len(run.rollouts),
            "correct_programs": asdict(rollout_programs(run)[0]),
            "learning_by_problem": [{"stage": t.stage, "first_steps": list(t.first_steps),
                                     "second_steps": list(t.second_steps), "problems": len(t.rows),
                                     "first": asdict(t.first), "second": asdict(t.second)}
                                    for t in learning_by(run.rollouts, "problem")],
            "learning_by_family": [{"stage": t.stage, "first_steps": list(t.first_steps),
                                    "second_steps": list(t.second_steps),
                                    "families": [asdict(row) for row in t.rows],
                                    "first": asdict(t.first), "second": asdict(t.second)}
                                   for t in learning_by(run.rollouts, "family")]}
