"""The run directory's kernels/ and attempts/, and the HTML report page, on runs recorded step by step (real
Steps and EvalResults in a real RunStore; no sandbox needed)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from kernelrl.agent.bench import finish_run
from kernelrl.policies import Completion
from kernelrl.report import write_report
from kernelrl.results import Environment, EvalResult, Stage, Status
from kernelrl.runs import RunStore, Step

_STAGE = {Status.CORRECT: Stage.DONE, Status.WRONG_OUTPUT: Stage.CORRECTNESS,
          Status.FORMAT_ERROR: Stage.EXTRACT, Status.COMPILE_ERROR: Stage.IMPORT,
          Status.RUNTIME_ERROR: Stage.CORRECTNESS, Status.TIMEOUT: Stage.CORRECTNESS,
          Status.CRASHED: Stage.CORRECTNESS, Status.HACK_DETECTED: Stage.STATIC,
          Status.UNSUPPORTED: Stage.STATIC}
_REWARD = {Status.CORRECT: 1.0, Status.WRONG_OUTPUT: -0.5, Status.FORMAT_ERROR: -1.0}


def step(problem_id: str, sample: int, turn: int, status: Status, message: str | None = None, level: int = 1,
         code: str | None = "import torch\n") -> Step:
    """One attempt as the agent records it on a CPU (no timing)."""
    env = Environment("cpu-interpreter", "cpu", "2.11", None, "3.12", "0.1")
    result = EvalResult(status=status, stage=_STAGE[status], problem_id=problem_id,
                        message=status.value if message is None else message, environment=env,
                        wall_time_s=0.5)
    return Step(problem_id=problem_id, sample=sample, turn=turn, messages=[{"role": "user", "content": "x"}],
                completion=Completion("x", tokens_in=10, tokens_out=10),
                code=None if status is Status.FORMAT_ERROR else code, result=result,
                reward=_REWARD.get(status, -0.8), level=level)


def record(run_dir: Path, *steps: Step) -> RunStore:
    store = RunStore(run_dir)
    for s in steps:
        store.record(s)
    return store


def files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_kernels_holds_only_correct_kernels_and_the_unsolved_best_attempt_goes_to_attempts(tmp_path):
    """bench's finish_run on a run with one solved and one unsolved problem: kernels/ has the
    solved one only; the unsolved problem's best attempt is attempts/best-incorrect/<id>.py,
    headed by its verdict (still a Python file with a multi-line message); once that problem
    is solved, its attempt file gives way to its kernel."""
    run_dir = tmp_path / "run"
    record(run_dir,
           step("level0/1_relu", 0, 1, Status.COMPILE_ERROR, code="# wrong\n"),
           step("level0/1_relu", 0, 2, Status.CORRECT, level=0, code="# relu kernel\n"),
           step("level1/1_row_softmax", 0, 1, Status.COMPILE_ERROR, code="# does not import\n"),
           step("level1/1_row_softmax", 0, 2, Status.WRONG_OUTPUT, "max abs diff 0.5\nat index (0, 3)",
                code="# off by one\n"),
           step("level1/1_row_softmax", 1, 1, Status.FORMAT_ERROR))
    # an older kernelrl put incorrect attempts in kernels/
    (run_dir / "kernels" / "level1").mkdir(parents=True)
    (run_dir / "kernels" / "level1" / "1_row_softmax.py").write_text("# kernelrl best kernel "
                                                                     "... wrong_output\n")
    result = finish_run(run_dir, [])
    assert result.metrics["all"].solved == 1
    assert files(run_dir / "kernels") == ["level0/1_relu.py"]
    assert (run_dir / "kernels" / "level0" / "1_relu.py").read_text().endswith("# relu kernel\n")
    assert files(run_dir / "attempts") == ["best-incorrect/level1/1_row_softmax.py"]
    attempt = (run_dir / "attempts" / "best-incorrect" / "level1" / "1_row_softmax.py").read_text()
    head = attempt.splitlines()[:3]
    assert "NOT correct" in head[0] and "sample 0, turn 2, wrong_output" in head[0]
    assert head[1:] == ["# verdict: wrong_output at stage correctness: max abs diff 0.5", "# at index (0, 3)"]
    assert attempt.endswith("# off by one\n")
    compile(attempt, "attempt.py", "exec")  # the header is all comments
    # solved on a resumed run: the incorrect attempt goes, the kernel comes
    record(run_dir, step("level1/1_row_softmax", 1, 2, Status.CORRECT, code="# fixed\n"))
    finish_run(run_dir, [])
    assert files(run_dir / "kernels") == ["level0/1_relu.py", "level1/1_row_softmax.py"]
    assert files(run_dir / "attempts") == []


def local_hrefs(page: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', page)


def test_report_written_elsewhere_links_resolve_from_the_page(tmp_path):
    """Every link of a page written outside the run directory (to kernels,
    attempts, trajectories) resolves to a file relative to the page, also for
    a problem id with a space and a '#'; the default page's links too."""
    run_dir = tmp_path / "runs" / "run"
    record(run_dir, step("level0/1_relu", 0, 1, Status.CORRECT, level=0),
           step("level1/2_odd name#1", 0, 1, Status.WRONG_OUTPUT))
    finish_run(run_dir, [])  # metrics.json, eval_results.json
    for page_path in (write_report(run_dir, tmp_path / "elsewhere" / "deep" / "report.html"),
                      write_report(run_dir)):
        page = page_path.read_text()
        hrefs = local_hrefs(page)
        assert len(hrefs) == 2 + 3  # best kernel, best attempt; trajectories, metrics, eval results
        # as a browser reads it
        targets = {(page_path.parent / unquote(urlsplit(h).path)).resolve() for h in hrefs}
        assert all(t.is_file() for t in targets), hrefs
        assert {t.relative_to(run_dir.resolve()).as_posix() for t in targets} == {
            "kernels/level0/1_relu.py", "attempts/best-incorrect/level1/2_odd name#1.py",
            "trajectories.jsonl", "metrics.json", "eval_results.json"}
        assert not any(h.startswith(("/", "file:", "http")) for h in hrefs)


def test_report_page_on_a_cpu_run_colours_verdicts_folds_settings_and_plots_turns_and_samples(tmp_path):
    """A CPU run (no timing) over 3 turns and 2 samples: tables wrapped,
    settings folded, each verdict of the run coloured by its status class, and
    charts of verdicts and mean reward with one bar per turn and per sample."""
    run_dir = tmp_path / "run"
    statuses = {  # (sample, turn) -> status, over three problems
        "level1/1_a": {(0, 1): Status.COMPILE_ERROR, (0, 2): Status.WRONG_OUTPUT, (0, 3): Status.CORRECT,
                       (1, 1): Status.FORMAT_ERROR, (1, 2): Status.TIMEOUT, (1, 3): Status.HACK_DETECTED},
        "level1/2_b": {(0, 1): Status.RUNTIME_ERROR, (0, 2): Status.CRASHED, (1, 1): Status.WRONG_OUTPUT},
        "level2/1_c": {(0, 1): Status.CORRECT, (1, 1): Status.CORRECT},
    }
    store = record(run_dir, *(step(pid, sample, turn, st, level=int(pid[5]))
                              for pid, by_key in statuses.items() for (sample, turn), st in by_key.items()))
    store.write_config({"policy": "replay", "turns": 3, "samples": 2})
    page = write_report(run_dir).read_text()
    assert "<details><summary>settings</summary><pre>" in page and '&quot;turns&quot;: 3' in page
    assert page.count("<table>") == 2 and page.count("<div class=wrap><table>") == 2
    assert "overflow-x:auto" in page and "no measured speedups" in page  # CPU: no speedup histogram
    in_run = {st.value for by_key in statuses.values() for st in by_key.values()}
    assert len(in_run) == 8
    for status in in_run:
        assert f".st-{status}{{color:" in page
        assert f'class="st-{status}"' in page
    assert '<span class="st-correct">correct</span>' in page  # level2/1_c's best status
    assert '<span class="st-wrong_output">wrong_output</span>' in page  # level1/2_b's best: furthest-reaching

    def chart(title: str) -> str:
        return re.search(rf'aria-label="{title}">(.*?)</svg>', page).group(1)

    def bars(svg: str) -> list[str]:
        return re.findall(r'<g class="bar">(.*?)</g>', svg)

    per_turn = bars(chart("verdicts per turn"))
    assert [re.search(r'end">(.*?)</text>', b).group(1) for b in per_turn] == ["turn 1", "turn 2", "turn 3"]
    assert [re.findall(r'class="st-(\w+)"', b) for b in per_turn] == [
        ["correct", "wrong_output", "runtime_error", "compile_error", "format_error"],
        ["wrong_output", "timeout", "crashed"], ["correct", "hack_detected"]]
    rewards = bars(chart("mean reward per turn"))
    assert len(rewards) == 3 and all('width="0.0"' not in b for b in rewards)  # negative means drawn too
    assert len(bars(chart("verdicts per sample"))) == 2 and len(bars(chart("mean reward per sample"))) == 2
    assert len(bars(chart(r"verdicts \(attempts\)"))) == 8


def test_run_provided_text_is_escaped(tmp_path):
    """Problem ids, verdict messages and settings from the run appear escaped, never as markup."""
    run_dir = tmp_path / "run"
    hostile_id = "level1/9_<img src=x onerror=alert(1)>"
    store = record(run_dir, step("level1/1_a", 0, 1, Status.WRONG_OUTPUT, "<script>alert(1)</script> & more"),
                   step(hostile_id, 0, 1, Status.CORRECT))
    store.write_config({"policy": "</pre><script>alert(2)</script>"})
    page = write_report(run_dir).read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;/pre&gt;&lt;script&gt;alert(2)" in page
    assert "<script" not in page and "<img" not in page and "</pre><script" not in page


def test_a_problem_id_that_would_leave_the_folder_writes_no_file(tmp_path):
    run_dir = tmp_path / "run"
    record(run_dir, step("level1/../../outside", 0, 1, Status.CORRECT),
           step("level1/1_a", 0, 1, Status.CORRECT))
    finish_run(run_dir, [])
    assert files(run_dir / "kernels") == ["level1/1_a.py"]
    assert not any(f.endswith("outside.py") for f in files(tmp_path))
