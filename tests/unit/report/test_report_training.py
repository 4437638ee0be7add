"""The report of a training run directory: a fake run (train_config.json, metrics.jsonl with SFT, GRPO and
held-out records and a malformed line, rollouts.jsonl, a held-out bench directory), through the public
function and the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from kernelrl.cli import app
from kernelrl.problems import BUILTIN_DIR
from kernelrl.report import is_training_run, load_training_run, render_training_html, write_training_report

SFT = [{"phase": "sft", "step": s, "time": 1000.0 + s, "loss": 2.0 - 0.1 * s, "learning_rate": 1e-4,
        "epoch": s / 10, "grad_norm": 1.5, "mean_token_accuracy": 0.5 + 0.01 * s} for s in (1, 2, 3, 4)]
SFT_EVAL = {"phase": "sft", "step": 4, "time": 1005.0, "eval_loss": 1.7, "epoch": 0.4}
GRPO = [{"phase": "grpo", "step": s, "time": 2000.0 + s, "loss": 0.01 * s, "reward": -1.0 + 0.5 * s,
         "reward_std": 0.4, "frac_reward_zero_std": 0.25, "kl": 0.001 * s, "entropy": 0.9,
         "completions/mean_length": 300 + s, "kernelrl/format_error_rate": 0.5 / s,
         "kernelrl/compiled_rate": 0.4, "kernelrl/correct_rate": 0.1 * s, "kernelrl/hack_rate": 0.0,
         "kernelrl/mean_speedup_vs_eager": None if s == 1 else 1.1, "kernelrl/eval_seconds": 12.5,
         "curriculum/tier": 1 if s < 3 else 2, "curriculum/solve_rate": 0.3, "curriculum/eligible": 20,
         "something_new": "ignored"} for s in (1, 2, 3)]
HELDOUT = [
    {"phase": "heldout", "step": 0, "time": 1999.0, "label": "greedy", "split": "test", "problems": 10,
     "compile_rate": 0.5, "correct_rate": 0.2, "pass@1": 0.2, "fast_1": None, "model_label": "initial"},
    {"phase": "heldout", "step": 0, "time": 1999.5, "label": "sampled", "split": "test", "problems": 10,
     "compile_rate": 0.45, "correct_rate": 0.15, "pass@1": 0.15, "pass@8": 0.6, "fast_1": 0.1,
     "model_label": "initial"},
    {"phase": "heldout", "step": 3, "time": 2004.0, "label": "greedy", "split": "test", "problems": 10,
     "compile_rate": 0.9, "correct_rate": 0.7, "pass@1": 0.7, "fast_1": 0.3, "model_label": "grpo"},
]
CONFIG = {"command": "grpo", "model": "Qwen/Tiny <script>alert(1)</script>", "lr": 1e-5}


def write_run(run_dir: Path, records: list[dict], config: dict | None = None,
              extra_lines: tuple[str, ...] = (), rollouts: list[dict] | None = None) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "train_config.json").write_text(json.dumps(config or CONFIG))
    lines = [json.dumps(r) for r in records]
    (run_dir / "metrics.jsonl").write_text("\n".join([*lines[:2], *extra_lines, *lines[2:]]) + "\n")
    if rollouts is not None:
        (run_dir / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollouts))
    return run_dir


def full_run(tmp_path: Path) -> Path:
    rollouts = [{"step": s, "problem_id": f"level1/{i}", "status": status, "reward": reward, "prompt": "p"}
                for s in (1, 2, 3) for i, (status, reward) in
                enumerate([("correct", 1.0), ("compile_error", -1.0), ("compile_error", -1.0)][: s])]
    run_dir = write_run(tmp_path / "train", [*SFT, SFT_EVAL, *GRPO, *HELDOUT],
                        extra_lines=('{"phase": "grpo", "step": 9, "loss": 0.5', "not json at all",
                                     '["a list"]', '{"phase": "grpo", "loss": 1.0}'),
                        rollouts=rollouts)
    bench = run_dir / "heldout" / "grpo-greedy-step3"
    bench.mkdir(parents=True)
    (bench / "report.html").write_text("<html></html>")
    return run_dir


def svg(page: str, title: str) -> str:
    """The chart titled `title` (its aria-label)."""
    found = re.findall(r'<svg [^>]*aria-label="' + re.escape(title) + r'".*?</svg>', page, re.S)
    assert len(found) == 1, f"{len(found)} charts titled {title!r}"
    return found[0]


def polyline(chart: str, series: str) -> list[str]:
    """The points of one series of a chart."""
    found = re.findall(r'<polyline class="series" data-series="' + re.escape(series) + r'" points="([^"]*)"',
                       chart)
    assert len(found) == 1, f"{len(found)} series {series!r}"
    return found[0].split()


def heldout_rows(page: str) -> list[list[str]]:
    table = re.search(r"<table class=heldout>(.*?)</table>", page, re.S)
    assert table is not None
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)[1:]
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in rows]


def test_detects_training_runs_and_not_bench_runs(tmp_path):
    run_dir = full_run(tmp_path)
    assert is_training_run(run_dir)
    (run_dir / "run.sqlite").write_bytes(b"")  # a bench trajectory store: a bench run
    assert not is_training_run(run_dir)
    assert not is_training_run(tmp_path / "missing")
    write_run(tmp_path / "no-config", SFT)
    (tmp_path / "no-config" / "train_config.json").unlink()
    assert not is_training_run(tmp_path / "no-config")


def test_loss_chart_has_a_point_per_record_and_a_series_per_phase(tmp_path):
    page = render_training_html(full_run(tmp_path))
    loss = svg(page, "loss")
    assert len(polyline(loss, "sft loss")) == len(SFT)
    assert len(polyline(loss, "grpo loss")) == len(GRPO)
    assert len(polyline(loss, "sft eval_loss")) == 1
    # the points go left to right, and lower loss is drawn higher (smaller y)
    xs, ys = zip(*(map(float, p.split(",")) for p in polyline(loss, "sft loss")), strict=True)
    assert list(xs) == sorted(xs) and len(set(xs)) == len(SFT) and list(ys) == sorted(ys)


def test_reward_chart_with_std_band_and_component_rates(tmp_path):
    page = render_training_html(full_run(tmp_path))
    reward = svg(page, "reward (mean ± std)")
    assert len(polyline(reward, "reward")) == len(GRPO)
    band = re.search(r'<polygon class="band" data-series="reward" points="([^"]*)"', reward)
    assert band.group(1).count(",") == 2 * len(GRPO)
    components = svg(page, "reward components (per step)")
    for name in ("format_error", "compiled", "correct", "hack"):
        assert len(polyline(components, name)) == len(GRPO)
        assert f">{name}</text>" in components  # the legend
    assert len(polyline(svg(page, "frac_reward_zero_std"), "frac_reward_zero_std")) == len(GRPO)
    assert len(polyline(svg(page, "curriculum tier"), "tier")) == len(GRPO)
    # a null value is skipped, not drawn as zero
    assert len(polyline(svg(page, "mean speedup vs eager (correct kernels)"), "speedup")) == len(GRPO) - 1


def test_heldout_chart_and_table(tmp_path):
    page = render_training_html(full_run(tmp_path))
    chart = svg(page, "held-out correctness (test split)")
    assert len(polyline(chart, "greedy correct_rate")) == 2
    assert len(polyline(chart, "sampled pass@8")) == 1
    rows = heldout_rows(page)
    assert len(rows) == len(HELDOUT)
    greedy_end = next(r for r in rows if r[0] == "3")
    # step, model, label, problems, compile, correct, pass@1, pass@8, fast_1, bench run
    assert greedy_end == ["3", "grpo", "greedy", "10", "90.0%", "70.0%", "70.0%", "–", "30.0%",
                          "grpo-greedy-step3"]
    sampled = next(r for r in rows if r[2] == "sampled")
    assert sampled[4:9] == ["45.0%", "15.0%", "15.0%", "60.0%", "10.0%"]
    assert 'href="heldout/grpo-greedy-step3/report.html"' in page


def test_heldout_records_of_another_suite_get_a_column_a_line_and_their_bench_runs(tmp_path):
    """--heldout-suites: the built-in test split beside a generated suite's, recorded with its suite's
    name."""
    builtin = [{**r, "suite": "builtin", "correct_rate": r["correct_rate"] / 2} for r in HELDOUT]
    run_dir = write_run(tmp_path / "train", [*GRPO, *HELDOUT, *builtin])
    for name in ("grpo-greedy-step3", "grpo-greedy-step3-builtin"):
        (run_dir / "heldout" / name).mkdir(parents=True)
    page = render_training_html(run_dir)
    rows = heldout_rows(page)
    # step, model, label, suite, problems, compile, correct, pass@1, pass@8, fast_1, bench run
    at_end = [r for r in rows if r[0] == "3"]
    assert [(r[3], r[6], r[-1]) for r in at_end] == [("", "70.0%", "grpo-greedy-step3"),
                                                    ("builtin", "35.0%", "grpo-greedy-step3-builtin")]
    chart = svg(page, "held-out correctness (test split)")
    assert len(polyline(chart, "greedy correct_rate")) == 2
    assert len(polyline(chart, "builtin greedy correct_rate")) == 2
    # the terminal table says which suite each line is
    result = CliRunner().invoke(app, ["report", str(run_dir)], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in result.stdout.splitlines() if line.split()[:1] == ["3"]]
    # step, model, label, (suite,) compile, correct
    assert lines[0][:5] == ["3", "grpo", "greedy", "90.0%", "70.0%"], lines
    assert lines[1][:6] == ["3", "grpo", "greedy", "builtin", "90.0%", "35.0%"], lines


def test_malformed_lines_are_counted_and_config_is_escaped(tmp_path):
    run_dir = full_run(tmp_path)
    run = load_training_run(run_dir)
    assert run.skipped == 4 and len(run.records) == len(SFT) + 1 + len(GRPO) + len(HELDOUT)
    page = render_training_html(run_dir)
    assert "4 malformed metrics lines skipped" in page
    assert "<script>" not in page
    assert "Qwen/Tiny &lt;script&gt;alert(1)&lt;/script&gt;" in page  # in the header and in the config
    assert re.search(r"<details><summary>config \(train_config.json\)</summary><pre>.*&quot;lr&quot;: 1e-05",
                     page, re.S)


def test_missing_series_are_left_out(tmp_path):
    """An SFT-only run: no reward, curriculum, held-out or rollouts sections, and no empty charts."""
    bad = {**SFT[0], "step": 5, "loss": float("nan"), "grad_norm": None}
    run_dir = write_run(tmp_path / "sft", [*SFT, bad], config={"command": "sft", "model": "m"})
    page = render_training_html(run_dir)
    assert len(polyline(svg(page, "loss"), "sft loss")) == len(SFT)  # NaN skipped
    assert 'data-series="grpo loss"' not in page and 'data-series="sft eval_loss"' not in page
    for title in ("reward (mean ± std)", "reward components (per step)", "curriculum tier",
                  "held-out correctness (test split)"):
        assert f'aria-label="{title}"' not in page
    for section in ("<h2>Reward</h2>", "<h2>Curriculum</h2>", "Held-out", "Rollouts", "malformed"):
        assert section not in page
    # loss, lr, grad norm, accuracy
    assert page.count("<svg ") == page.count("<polyline class=\"series\"") == 4


def test_rollout_verdicts_by_step(tmp_path):
    page = render_training_html(full_run(tmp_path))
    table = re.search(r"<table class=rollouts>(.*?)</table>", page, re.S).group(1)
    rows = [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]]
    # steps, completions, correct, compile_error, mean reward
    assert rows == [["step 1", "1", "1", "0", "1"], ["step 2", "2", "1", "1", "0"],
                    ["step 3", "3", "1", "2", "-0.333"]]
    assert 'aria-label="rollout verdicts by step range"' in page


def test_two_stage_runs_get_a_series_per_stage(tmp_path):
    run_dir = tmp_path / "two"
    for stage in ("frontend", "midend"):
        write_run(run_dir / stage, [{**r, "stage": stage} if stage == "frontend" else r for r in GRPO],
                  config={"command": f"grpo-{stage}", "model": "m"})
    assert is_training_run(run_dir)
    page = render_training_html(run_dir)
    reward = svg(page, "reward (mean ± std)")
    assert len(polyline(reward, "reward [frontend]")) == len(polyline(reward, "reward [midend]")) == len(GRPO)


def test_cli_report_on_a_training_run(tmp_path):
    run_dir = full_run(tmp_path)
    result = CliRunner().invoke(app, ["report", str(run_dir)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "training run" in result.stdout and "4 malformed metrics line(s) skipped" in result.stdout
    assert "held-out evaluations" in result.stdout and "70.0%" in result.stdout
    page = (run_dir / "report.html").read_text()
    assert "kernelrl training report" in page and len(polyline(svg(page, "loss"), "sft loss")) == len(SFT)
    out = tmp_path / "elsewhere" / "page.html"
    result = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["kind"] == "training" and summary["skipped_lines"] == 4 and len(summary["heldout"]) == 3
    assert summary["records"] == {"sft": len(SFT) + 1, "grpo": len(GRPO), "heldout": len(HELDOUT)}
    assert 'href="../train/heldout/grpo-greedy-step3/report.html"' in out.read_text()


def test_write_training_report_default_path(tmp_path):
    run_dir = full_run(tmp_path)
    assert write_training_report(run_dir) == run_dir / "report.html"
    assert (run_dir / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_learning_by_problem_compares_each_problems_halves(tmp_path):
    """The per-problem table: problem C is drawn only in the second half and stays out of the mean; a gzipped
    rollouts file is read."""
    import gzip

    def roll(step, problem, status, reward, compiled):
        return {"step": step, "problem_id": problem, "status": status, "reward": reward, "compiled": compiled}
    rollouts = [roll(1, "A", "compile_error", -1.0, False), roll(2, "A", "wrong_output", 0.0, True),
                roll(1, "B", "wrong_output", 0.0, True), roll(3, "A", "correct", 1.0, True),
                roll(4, "A", "correct", 1.0, True), roll(4, "B", "wrong_output", 0.0, True),
                roll(3, "C", "correct", 1.0, True)]
    run_dir = write_run(tmp_path / "train", GRPO)
    with gzip.open(run_dir / "rollouts.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rollouts)
    result = CliRunner().invoke(app, ["report", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    (table,) = json.loads(result.stdout)["learning_by_problem"]
    assert table["first_steps"] == [1, 2] and table["second_steps"] == [3, 4] and table["problems"] == 2
    assert table["first"] == {"attempts": 3, "correct": 0.0, "compiled": 0.75, "reward": -0.25, "groups": 0,
                              "reward_spread": None}
    assert table["second"] == {"attempts": 3, "correct": 0.5, "compiled": 1.0, "reward": 0.5, "groups": 0,
                               "reward_spread": None}
    result = CliRunner().invoke(app, ["report", str(run_dir)], env={"COLUMNS": "200"})
    assert ("steps 1–2 → 3–4: correct 0.0% → 50.0%, compiled 75.0% → 100.0%, "
            "reward -0.250 → 0.500" in result.stdout)
    page = (run_dir / "report.html").read_text()
    rows = [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", page.split("Learning by problem")[1])[1:]]
    assert [r[0] for r in rows] == ["A", "B", "mean over 2 problems"]
    assert rows[0][1:] == ["2", "0.0%", "50.0%", "-0.5", "–", "2", "100.0%", "100.0%", "1", "–"]


def test_learning_by_family_pools_problems_that_never_come_back(tmp_path):
    """On a large suite a problem is seldom drawn twice, so the per-problem table is nearly empty; the family
    table pools each family's problems and counts the groups whose rewards differ (what GRPO learns from).
    Families come from the suite's METADATA when the recorded suite loads, else from the file name."""
    def group(step, problem, rewards, sampling_round=1):
        return [{"step": step, "round": sampling_round, "problem_id": problem, "reward": r,
                 "status": "correct" if r == 1.0 else "wrong_output", "compiled": True} for r in rewards]
    rollouts = (group(1, "level1/00001_map", [0.0, 1.0]) + group(1, "level1/00002_scan", [0.0, -1.0])
                + group(2, "level1/00003_map", [1.0, 1.0]) + group(2, "level1/00003_map", [0.0, 1.0], 2)
                + group(3, "level1/00004_map", [1.0, 1.0]) + group(3, "level1/00005_scan", [0.0, 1.0])
                + group(4, "level1/00006_map", [0.0, 1.0]) + group(4, "level1/00007_scan", [1.0, 1.0]))
    run_dir = write_run(tmp_path / "train", GRPO)
    (run_dir / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollouts))
    summary = json.loads(CliRunner().invoke(app, ["report", str(run_dir), "--json"]).stdout)
    assert summary["learning_by_problem"] == []  # no problem is drawn in both halves
    (table,) = summary["learning_by_family"]
    assert [f["name"] for f in table["families"]] == ["map", "scan"]
    (fmap, fscan) = table["families"]
    # map, steps 1-2: groups (1, 00001) and (2, 00003) in two rounds, two of the three with a spread
    assert fmap["first"]["groups"] == 3 and fmap["first"]["reward_spread"] == 2 / 3
    assert fmap["second"]["groups"] == 2 and fmap["second"]["reward_spread"] == 0.5
    # scan, step 1: both completions wrong, but their rewards differ (a compile error and a wrong output)
    assert fscan["first"]["reward_spread"] == 1.0 and fscan["second"]["reward_spread"] == 0.5
    # the mean over the families
    assert table["first"]["reward_spread"] == (2 / 3 + 1.0) / 2 and table["second"]["reward_spread"] == 0.5
    assert fscan["first"]["correct"] == 0.0 and fscan["second"]["correct"] == 0.75
    result = CliRunner().invoke(app, ["report", str(run_dir)], env={"COLUMNS": "160"})
    assert "rollouts by family, steps 1–2 → 3–4" in result.stdout
    assert re.search(r"scan\s+2 → 4\s+0\.0% → 75\.0%\s+-?0\.\d+ → 0\.\d+\s+100\.0% → 50\.0%", result.stdout)
    page = (run_dir / "report.html").read_text()
    assert "Learning by family" in page and "mean over 2 families" in page

    # the recorded suite loads here: its METADATA names the family (not the file name's "map")
    relu = (BUILTIN_DIR / "level0" / "1_relu.py").read_text()
    (tmp_path / "suite" / "level1").mkdir(parents=True)
    for n in range(1, 8):
        (tmp_path / "suite" / "level1" / f"0000{n}_{'map' if n in (1, 3, 4, 6) else 'scan'}.py").write_text(
            relu.replace('"family": "relu"', f'"family": "gen_{n % 2}"'))
    write_run(run_dir, GRPO, config={"command": "grpo", "suite": str(tmp_path / "suite")})
    summary = json.loads(CliRunner().invoke(app, ["report", str(run_dir), "--json"]).stdout)
    assert [f["name"] for f in summary["learning_by_family"][0]["families"]] == ["gen_0", "gen_1"]


def test_correct_programs_counted_and_reference_copies_flagged(tmp_path):
    """Distinct programs among the correct rollouts, and copies of the suite's reference solution: verbatim (a
    comment and a docstring added), with other constants (a block size), and a program of the model's own."""
    from kernelrl import load_suite

    suite = load_suite()
    reference = suite.solution_path(suite.get("level0/1_relu")).read_text()
    assert "block = 16384" in reference
    verbatim = '"""Mine."""\n# my kernel\n' + reference
    other_constants = reference.replace("16384", "1024")
    own = (Path(__file__).parents[3] / "src/kernelrl/examples/relu_triton.py").read_text().replace(
        "tl.maximum(x, 0.0)", "tl.where(x > 0, x, 0.0)")

    def roll(step, status, code):
        return {"step": step, "problem_id": "level0/1_relu", "status": status, "reward": 1.0,
                "completion": f"Here:\n```python\n{code}\n```\n"}
    rollouts = [roll(1, "correct", reference), roll(1, "correct", verbatim),
                roll(2, "correct", other_constants), roll(2, "correct", own), roll(2, "correct", own),
                roll(2, "wrong_output", own + "\n# off")]
    run_dir = write_run(tmp_path / "train", GRPO, config={"command": "grpo", "suite": "builtin"},
                        rollouts=rollouts)
    result = CliRunner().invoke(app, ["report", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)["correct_programs"]
    assert counts == {"problem_id": None, "correct": 5, "distinct": 3, "verbatim": 2, "near_duplicate": 1}
    page = (run_dir / "report.html").read_text()
    assert ("5 correct completions, 3 distinct programs; 2 are a reference solution verbatim and 1 one with"
            in page)


def test_heldout_programs_that_copy_a_training_solution_are_counted():
    """A held-out completion that is a train-split solution (a memorized answer) verbatim or with other
    constants is counted; the test split's own reference solutions (never trained on) and a program of the
    model's own are not."""
    from kernelrl import load_suite
    from kernelrl.report.originality import program_of, training_copies

    suite = load_suite()
    train = suite.solution_path(suite.split("train")[0]).read_text()
    test_problem = suite.split("test")[0]
    test_reference = suite.solution_path(test_problem).read_text()
    other_constants = train.replace("1024", "2048").replace("16384", "4096")
    assert other_constants != train
    programs = [program_of(test_problem.id, code) for code in
                (train, "# mine\n" + train, other_constants, test_reference, test_reference + "\n# again")]
    assert training_copies(programs, suite).__dict__ == {"correct": 5, "distinct": 3, "verbatim": 2,
                                                         "near_duplicate": 1}
