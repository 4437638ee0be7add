"""Tables and result panels. Every function takes the console it draws for (its width decides the layout).

Tables are built with `fit_table`: identifiers never wrap or shorten, long text folds, and when the console is
narrower than the table needs (an 80-column terminal, a pipe without COLUMNS) the less important columns are
left out, highest `drop` first, with a caption naming them (`--json` has everything).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from kernelrl import EvalResult, Status
from kernelrl.results import TimingReport, TimingStats

STATUS_STYLE = {
    Status.CORRECT: "bold green",
    Status.WRONG_OUTPUT: "bold red",
    Status.HACK_DETECTED: "bold magenta",
    Status.COMPILE_ERROR: "red",
    Status.RUNTIME_ERROR: "red",
    Status.CRASHED: "red",
    Status.TIMEOUT: "yellow",
    Status.FORMAT_ERROR: "yellow",
    Status.UNSUPPORTED: "cyan",
}
TEXT_MIN = 20  # a text column is comfortable down to this width: narrower, optional columns go first
TEXT_FLOOR = 10  # and readable down to this one: narrower still, identifiers fold rather than squeeze it more


# -- cells ---------------------------------------------------------------------------------------------------
def status_text(status: Status | str) -> Text:
    if not isinstance(status, Status) and status not in Status._value2member_map_:
        return Text(str(status))  # a summary's status that is no verdict
    status = Status(status)
    return Text(status.value, style=STATUS_STYLE.get(status, ""))


def ms(stats: TimingStats | None) -> str:
    return "" if stats is None else f"{stats.median_ms:.4g}"


def times(speedup: float | None) -> str:
    return "" if speedup is None else f"{speedup:.2f}x"


def num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def has_times(timing: TimingReport | None) -> bool:
    return timing is not None and any(s is not None for s in (timing.candidate, timing.eager,
                                                              timing.inductor))


def counts_line(results: Iterable[EvalResult]) -> Text:
    counts = Counter(r.status for r in results)
    line = Text()
    for i, status in enumerate(s for s in Status if counts[s]):
        if i:
            line.append(", ")
        line.append(f"{status.value} {counts[status]}", style=STATUS_STYLE.get(status, ""))
    return line


def progress(console: Console) -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console)


# -- tables that fit -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Col:
    header: str
    drop: int = 0  # 0: always shown; else left out on a narrow console, highest first
    text: bool = False  # long free text: wraps at words and folds what is longer than the column
    right: bool = False  # numbers


Cell = str | Text


def _cell_width(cell: Cell) -> int:
    return max((cell_len(line) for line in (cell.plain if isinstance(cell, Text) else cell).splitlines()),
               default=0)


def _build(title: str | None, cols: Sequence[Col], rows: Sequence[Sequence[Cell]], keep: list[int],
           style: dict, fold: bool = False) -> Table:
    """`fold`: even the essential columns are too wide for the console, so identifiers fold onto more lines
    (whole, never cut) instead of keeping their width."""
    table = Table(title=title, title_justify="left", **style)
    for i in keep:
        col = cols[i]
        widest = max([_cell_width(row[i]) for row in rows] + [cell_len(col.header)])
        justify = "right" if col.right else "left"
        if col.text or fold:
            table.add_column(col.header, overflow="fold", justify=justify)
        else:  # identifiers and numbers keep their full width while other columns give way
            table.add_column(col.header, no_wrap=True, min_width=widest, justify=justify)
    for row in rows:
        table.add_row(*[row[i] for i in keep])
    return table


def _needed(console: Console, table: Table, cols: Sequence[Col], rows: Sequence[Sequence[Cell]],
            keep: list[int], text_min: int) -> int:
    """The narrowest width that shows every kept column without shortening: full identifiers and numbers,
    `text_min` for text; borders and padding from rich's own measurement."""
    content = [max([_cell_width(row[i]) for row in rows] + [cell_len(cols[i].header)]) for i in keep]
    overhead = Measurement.get(console, console.options.update_width(1 << 16), table).maximum - sum(content)
    return overhead + sum(min(w, text_min) if cols[i].text else w for i, w in zip(keep, content, strict=True))


def fit_table(console: Console, title: str | None, cols: Sequence[Col], rows: Sequence[Sequence[Cell]],
              **style) -> Table:
    """A table of the columns that fit `console` (see the module docstring); `style`: Table options."""
    style = {"box": box.SIMPLE_HEAD, "pad_edge": False, **style}
    keep = list(range(len(cols)))
    table = _build(title, cols, rows, keep, style)
    while _needed(console, table, cols, rows, keep, TEXT_MIN) > console.width:
        droppable = [i for i in keep if cols[i].drop]
        if not droppable:
            if _needed(console, table, cols, rows, keep, TEXT_FLOOR) > console.width:
                table = _build(title, cols, rows, keep, style, fold=True)
            break
        keep.remove(max(droppable, key=lambda i: cols[i].drop))
        table = _build(title, cols, rows, keep, style)
    left_out = [c.header for i, c in enumerate(cols) if i not in keep]
    if left_out:
        table.caption = f"not shown at {console.width} columns: {', '.join(left_out)} (--json has all)"
        table.caption_justify = "left"
    return table


# -- eval ----------------------------------------------------------------------------------------------------
def _stats_line(stats: TimingStats) -> str:
    return (f"{stats.median_ms:.4g} ms median (IQR {stats.iqr_ms:.3g} ms, min {stats.min_ms:.4g} ms, "
            f"{stats.reps} reps" + (", from the baseline cache)" if stats.source == "cache" else ")"))


def _mismatch_line(result: EvalResult) -> str | None:
    c = result.correctness
    m = c.mismatch if c is not None else None
    if m is None:
        return None
    parts = [f"trial {m.trial}, output {m.output_index}: {m.reason}"]
    if m.max_abs_error is not None:
        parts.append(f"max abs err {m.max_abs_error:.4g}")
    if m.max_rel_error is not None:
        parts.append(f"max rel err {m.max_rel_error:.4g}")
    if m.mismatched is not None and m.numel:
        parts.append(f"{m.mismatched}/{m.numel} elements ({100 * m.mismatched / m.numel:.3g}%)")
    if m.first_index is not None:
        parts.append(f"first at {m.first_index}: expected {num(m.expected_value)}, got {num(m.actual_value)}")
    return "; ".join(parts)


def print_result(console: Console, result: EvalResult, solution: Path, from_completion: bool) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("problem", Text(result.problem_id))
    grid.add_row("candidate", Text(f"{solution}" + (" (code extracted from a completion)" if from_completion
                                                    and result.status is not Status.FORMAT_ERROR else "")))
    grid.add_row("status", status_text(result.status))
    grid.add_row("stage", result.stage.value)
    grid.add_row("message", Text(result.message))
    c = result.correctness
    if c is not None:
        grid.add_row("trials", f"{c.trials_passed}/{c.trials_planned} passed ({c.trials_run} run)")
        model = "" if c.tolerance_model == "allclose" else f", {c.tolerance_model}"
        grid.add_row("tolerance", f"atol={c.atol:g} rtol={c.rtol:g} ({c.dtype}{model})")
        mismatch = _mismatch_line(result)
        if mismatch:
            grid.add_row("mismatch", Text(mismatch))
    t = result.timing
    if t is not None:
        for label, stats in (("candidate", t.candidate), ("eager", t.eager), ("inductor", t.inductor)):
            if stats is not None:
                grid.add_row(f"time {label}", _stats_line(stats))
        if t.speedup_vs_eager is not None:
            grid.add_row("speedup", f"{times(t.speedup_vs_eager)} vs eager"
                         + (f", {times(t.speedup_vs_inductor)} vs inductor"
                            if t.speedup_vs_inductor is not None
                            else ""))
        if t.unavailable_reason:
            grid.add_row("timing", Text(t.unavailable_reason, style="dim"))
    env = result.environment
    if env is not None:
        grid.add_row("environment", Text(f"{env.mode} on {env.device_name} (torch {env.torch_version}, "
                                         f"triton {env.triton_version or '-'}, python {env.python_version})"))
        if env.isolation:
            grid.add_row("isolation", Text(", ".join(env.isolation), style="dim"))
    grid.add_row("wall time", f"{result.wall_time_s:.1f} s" + (" (verdict from "
                                                               "the result cache)" if result.cached
                                                               else ""))
    if result.log:
        grid.add_row("log", Text(f"{len(result.log)} characters captured (see --json)", style="dim"))
    console.print(Panel(grid, title="kernelrl eval", title_align="left",
                        border_style="green" if result.correct else "red"))
    if result.feedback and not result.correct:
        console.print(Panel(Text(result.feedback), title="feedback", title_align="left", border_style="dim"))


def batch_table(console: Console, suite_name: str, results: Sequence[EvalResult]) -> Table:
    speedups = any(r.timing is not None and r.timing.speedup_vs_eager is not None for r in results)
    cols = [Col("problem"), Col("status"), Col("message", text=True)]
    if speedups:
        cols += [Col("vs eager", drop=1, right=True), Col("vs inductor", drop=2, right=True)]
    rows = []
    for r in results:
        row: list[Cell] = [Text(r.problem_id), status_text(r.status), Text(r.message)]
        if speedups:
            row += [times(r.timing.speedup_vs_eager if r.timing else None),
                    times(r.timing.speedup_vs_inductor if r.timing else None)]
        rows.append(row)
    return fit_table(console, f"suite {suite_name}: {len(results)} evaluated", cols, rows)


# -- problems, rules, audit, baselines -----------------------------------------------------------------------
def problems_table(console: Console, suite) -> Table:
    cols = [Col("id"), Col("level", right=True), Col("split", drop=1), Col("solution", drop=2),
            Col("difficulty", drop=3, right=True), Col("family", drop=4), Col("tags", drop=5, text=True),
            Col("sha256", drop=6)]
    rows = [[Text(p.id), "" if p.level is None else str(p.level), p.split,
             "yes" if suite.solution_path(p) else "", "" if p.difficulty is None else str(p.difficulty),
             Text(p.family), Text(", ".join(p.tags)), p.sha256[:12]] for p in suite]
    return fit_table(console, f"suite {suite.name}: {len(suite)} problems ({suite.root})", cols, rows)


def rules_table(console: Console, title: str, rows: Sequence[tuple[str, str, str]]) -> Table:
    cells = [[Text(rule_id), Text(policy, style="red" if policy == "reject" else "yellow"), Text(message)]
             for rule_id, policy, message in rows]
    return fit_table(console, title, [Col("id"), Col("policy"), Col("message", text=True)], cells)


def audit_table(console: Console, title: str, audits: Sequence) -> Table:
    rows = []
    for a in audits:
        flags = Text("; ".join(f"{f.flag}[{f.input_set}]" + (" (waived)" if f.waived else "")
                               for f in a.flags)
                     or "ok", style="red" if a.unwaived else "green")
        rows.append([Text(a.problem_id), flags, num(a.eager_ms.get("bench", a.eager_ms.get("default")))])
    return fit_table(console, title, [Col("problem"), Col("flags", text=True),
                                      Col("eager ms (bench)", drop=1, right=True)], rows)


def baselines_table(console: Console, title: str, reports: Sequence) -> Table:
    rows = [[Text(p.id), ms(r.eager), ms(r.inductor), r.eager.source if r.eager is not None else "-",
             Text(r.unavailable_reason or "")] for p, r in reports]
    cols = [Col("problem"), Col("eager ms", right=True), Col("inductor ms", right=True),
            Col("source", drop=1), Col("note", text=True)]
    return fit_table(console, title, cols, rows)


# -- demo ----------------------------------------------------------------------------------------------------
_TIMING_COLUMNS = ("cand ms", "eager ms", "ind ms", "x eager", "x ind")


def demo_tables(console: Console, pairs: Sequence) -> list[Table]:
    """The verdicts, with the timing columns when there are times: in one table when it fits, else two."""
    verdict_cols = [Col("example"), Col("problem"), Col("expected", drop=1), Col("got"),
                    Col("message", text=True)]
    verdicts = []
    for case, r in pairs:
        ok = r.status is case.expected_status
        got = status_text(r.status).append(" ✓" if ok else " ✗ unexpected",
                                           style="green" if ok else "bold red")
        verdicts.append([case.example_file, Text(case.problem_id), case.expected_status.value, got,
                         Text(r.message)])
    if not any(has_times(r.timing) for _, r in pairs):
        return [fit_table(console, "kernelrl demo", verdict_cols, verdicts)]
    timing_cols = [Col(column, right=True) for column in _TIMING_COLUMNS]
    timings = [[""] * len(_TIMING_COLUMNS) if (t := r.timing) is None else
               [ms(t.candidate), ms(t.eager), ms(t.inductor), times(t.speedup_vs_eager),
                times(t.speedup_vs_inductor)]
               for _, r in pairs]
    together = fit_table(console, "kernelrl demo",
                         verdict_cols + [dataclasses.replace(c, drop=9) for c in timing_cols],
                         [v + t for v, t in zip(verdicts, timings, strict=True)])
    if together.caption is None:  # nothing left out
        return [together]
    return [fit_table(console, "kernelrl demo", verdict_cols, verdicts),
            fit_table(console, "timings (median ms; the candidate's speedup)", [Col("example"), *timing_cols],
                      [[case.example_file, *t] for (case, r), t in zip(pairs, timings, strict=True)
                       if has_times(r.timing)])]


# -- agent, bench, report ------------------------------------------------------------------------------------
def step_line(step) -> Text:
    line = Text(f"{step.problem_id} sample {step.sample} turn {step.turn}: ")
    line.append_text(status_text(step.result.status))
    line.append(f"  reward {step.reward:.3g}")
    if step.speedup_vs_eager is not None:
        line.append(f"  {step.speedup_vs_eager:.2f}x eager")
    line.append(f"  {step.result.message[:100]}", style="dim")
    return line


def print_metrics(console: Console, metrics: dict, title: str) -> None:
    """Two narrow tables (correctness, then speed and cost) so they fit an 80-column terminal."""
    ks = sorted({k for m in metrics.values() for k in m.pass_at_k}, key=lambda k: int(k.split("@")[1]))
    first_cols = [Col("level"), *[Col(h, right=True) for h in ("problems", "attempts")],
                  *[Col(h, right=True, drop=d) for h, d in (("format", 2), ("compile", 1))],
                  *[Col(h, right=True) for h in ("correct", "solved", *ks)]]
    second_cols = [Col("level"), *[Col(f"fast{p:g}", right=True) for p in (1.0, 1.5, 2.0)],
                   *[Col(h, right=True) for h in ("ind fast1", "gmean", "ind gmean", "tok/sol", "GPUs/sol")]]
    first, second = [], []
    for name, m in metrics.items():
        first.append([name, str(m.problems), str(m.attempts), pct(m.format_rate), pct(m.compile_rate),
                      pct(m.correct_rate), f"{m.solved}", *[pct(m.pass_at_k.get(k)) for k in ks]])
        second.append([name, *[pct(v) for v in m.fast_p_eager.values()], pct(m.fast_p_inductor["fast_1"]),
                       times(m.geomean_speedup_eager) or "-", times(m.geomean_speedup_inductor) or "-",
                       num(m.tokens_per_solved), num(m.gpu_seconds_per_solved)])
    compact = {"padding": (0, 1), "collapse_padding": True}
    console.print(fit_table(console, title, first_cols, first, **compact))
    console.print(fit_table(console, "speed (best correct kernel per problem) and cost", second_cols, second,
                            **compact))
    if all(m.timed_correct == 0 for m in metrics.values()):
        console.print(Text("no measured speedups: fast_p and geomean need a GPU run", style="dim"))


def run_problems_table(console: Console, summaries: Sequence) -> Table:
    cols = [Col("problem"), Col("samples", drop=3, right=True), Col("tries", drop=2, right=True), Col("best"),
            Col("reward", right=True), Col("turn", drop=1, right=True), Col("x eager", right=True),
            Col("x ind", drop=4, right=True)]
    rows = [[Text(p.problem_id), str(p.samples), str(p.attempts), status_text(p.best_status),
             num(p.best_reward), "" if p.best_turn is None else str(p.best_turn), times(p.speedup_vs_eager),
             times(p.speedup_vs_inductor)]
            for p in summaries]
    return fit_table(console, "problems", cols, rows, padding=(0, 1), collapse_padding=True)
