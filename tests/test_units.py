"""Unit tests: problem loading, code extraction, comparison, tolerances, results, the child runner."""

from __future__ import annotations

import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from kernelrl import EvalResult, ProblemError, Stage, Status, load_problem, load_suite
from kernelrl.candidates import analyze, extract_code
from kernelrl.problems import BUILTIN_DIR
from kernelrl.results import CorrectnessReport, Environment, Mismatch, TimingReport, TimingStats
from kernelrl.sandbox.runner import LogBuffer, run_child
from kernelrl.sandbox.tensorio import TensorFileError, read_tensor, validate_meta, write_tensor
from kernelrl.timing import summarize
from kernelrl.verify import tolerance_for
from kernelrl.verify.compare import compare_tensors, inputs_mutated

PROBLEM = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return x * 2

    def get_inputs():
        return [torch.randn(8)]

    def get_init_inputs():
        return []
''')


# -- problems ------------------------------------------------------------------------------------------
def test_builtin_suite_loads_with_levels_tags_and_hashes():
    suite = load_suite()
    assert suite.name == "builtin" and len(suite) >= 5
    relu = suite.get("level0/1_relu")
    assert relu.level == 0 and relu.name == "1_relu" and "elementwise" in relu.tags
    assert len(relu.sha256) == 64 and relu.path.is_file()
    assert suite.ids() == sorted(suite.ids(), key=lambda i: (int(i[5]), int(i.split("/")[1].split("_")[0])))


def test_kernelbench_checkout_layout(tmp_path):
    for level, names in ((1, ["1_A.py", "10_B.py", "2_C.py"]), (2, ["1_D.py"])):
        d = tmp_path / "KernelBench" / f"level{level}"
        d.mkdir(parents=True)
        for name in names:
            (d / name).write_text(PROBLEM)
    suite = load_suite(tmp_path)  # the repository root, as a user would pass it
    assert suite.ids() == ["level1/1_A", "level1/2_C", "level1/10_B", "level2/1_D"]
    assert suite.get("level1/10_B").level == 1


def test_flat_directory_and_unmodified_files(tmp_path):
    (tmp_path / "double.py").write_text(PROBLEM)
    (tmp_path / "_helper.py").write_text("x = 1\n")
    suite = load_suite(tmp_path)
    assert suite.ids() == ["double"]
    assert suite.get("double").source == PROBLEM  # loaded as-is


def test_problem_errors_are_clear(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nclass Model: pass\n")
    with pytest.raises(ProblemError, match="get_inputs, get_init_inputs"):
        load_problem(bad)
    with pytest.raises(ProblemError, match="cannot read"):
        load_problem(tmp_path / "missing.py")
    (tmp_path / "syntax.py").write_text("def (:\n")
    with pytest.raises(ProblemError, match="syntax error"):
        load_problem(tmp_path / "syntax.py")
    with pytest.raises(ProblemError, match="not a directory"):
        load_suite(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ProblemError, match="no problem files"):
        load_suite(empty)


def test_copied_builtin_file_keeps_its_hash(tmp_path):
    src = BUILTIN_DIR / "level0" / "1_relu.py"
    shutil.copy(src, tmp_path / "1_relu.py")
    assert load_problem(tmp_path / "1_relu.py").sha256 == load_problem(src).sha256


# -- extraction and static facts --------------------------------------------------------------------------
def test_extraction_picks_the_modelnew_block_not_the_first():
    text = ("```python\nimport torch\n```\n```cuda\nclass ModelNew {}\n```\n"
            "```python\nclass ModelNew:\n    v = 1\n```\n```python\nclass ModelNew:\n    v = 2\n```")
    got = extract_code(text)
    assert got.error is None and "v = 2" in got.code and got.blocks_found == 4


def test_extraction_handles_truncated_fence_and_raw_code_and_failure():
    truncated = extract_code("```python\nclass ModelNew:\n    pass\n")  # never closed: cut off, not code
    assert truncated.code is None and "looks truncated" in truncated.error
    assert extract_code("class ModelNew:\n    pass\n").code.startswith("class ModelNew")
    broken = extract_code("```python\nclass ModelNew(nn.Module:\n```")
    assert broken.code is not None  # kept so the syntax error becomes the feedback
    none = extract_code("```python\nprint(1)\n```")
    assert none.code is None and "ModelNew" in none.error
    assert extract_code("just prose").error.startswith("no code block")


def test_static_analysis_syntax_backend_and_modelnew():
    report = analyze("def f(:\n")
    assert "line 1" in report.syntax_error and "SyntaxError" in report.syntax_error
    assert analyze("class ModelNew: pass\n").defines_modelnew
    assert not analyze("class Model: pass\n").defines_modelnew
    assert analyze("from torch.utils.cpp_extension import load_inline\nclass ModelNew: pass\n").backend == "cuda-cpp"
    assert analyze("import triton\nclass ModelNew: pass\n").backend == "triton"


# -- comparison -----------------------------------------------------------------------------------------
def test_compare_reports_first_mismatch_with_values():
    expected = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    actual = expected.clone()
    actual[1, 2] += 0.5
    actual[2, 3] += 1.0
    m = compare_tensors(expected, actual, 1e-4, 1e-4)
    assert m["reason"] == "values" and m["first_index"] == [1, 2]
    assert m["expected_value"] == 6.0 and m["actual_value"] == 6.5
    assert m["mismatched"] == 2 and m["numel"] == 12 and m["max_abs_error"] == pytest.approx(1.0)
    assert compare_tensors(expected, expected + 1e-5, 1e-4, 1e-4) is None


def test_compare_shape_dtype_nan_and_scalars():
    x = torch.ones(4)
    assert compare_tensors(x, torch.ones(5), 1e-4, 1e-4)["reason"] == "shape"
    assert compare_tensors(x, x.half(), 1e-4, 1e-4)["reason"] == "dtype"
    bad = x.clone()
    bad[3] = float("inf")
    assert compare_tensors(x, bad, 1e-4, 1e-4)["reason"] == "nonfinite"
    nan_ref = torch.tensor([float("nan"), 1.0])
    assert compare_tensors(nan_ref, nan_ref.clone(), 1e-4, 1e-4) is None
    assert compare_tensors(torch.tensor(2.0), torch.tensor(2.0), 0, 0) is None
    assert compare_tensors(torch.tensor(2.0), torch.tensor(3.0), 0, 0)["first_index"] == []


def test_input_mutation_detection():
    originals = [torch.randn(5), torch.arange(3)]
    assert inputs_mutated(originals, [t.clone() for t in originals]) is None
    changed = [originals[0].clone(), originals[1] + 1]
    assert inputs_mutated(originals, changed)["output_index"] == 1


def test_tolerances_per_dtype_and_overrides():
    assert tolerance_for(["float32"]).atol == 1e-4
    assert (tolerance_for(["float16", "float32"]).atol, tolerance_for(["bfloat16"]).rtol) == (1e-2, 1e-2)
    assert tolerance_for(["int64"]).atol == 0.0
    assert tolerance_for(["float32"], {"float32": (1e-3, 2e-3)}).rtol == 2e-3


# -- wire format ----------------------------------------------------------------------------------------
def test_tensor_files_round_trip_and_refuse_tricks(tmp_path):
    for t in (torch.randn(3, 4), torch.tensor(1.5), torch.randn(5).bfloat16(), torch.rand(6) > 0.5):
        meta = write_tensor(tmp_path / "t.bin", t)
        assert torch.equal(read_tensor(tmp_path / "t.bin", validate_meta(meta, 1 << 20)), t)
    meta = write_tensor(tmp_path / "t.bin", torch.randn(4))
    with pytest.raises(TensorFileError, match="header says"):
        read_tensor(tmp_path / "t.bin", {"dtype": "float32", "shape": [5]})
    (tmp_path / "link.bin").symlink_to(tmp_path / "t.bin")
    with pytest.raises(TensorFileError):
        read_tensor(tmp_path / "link.bin", meta)
    for bad in ({"dtype": "object", "shape": [1]}, {"dtype": "float32", "shape": [-1]},
                {"dtype": "float32", "shape": [1 << 40]}, "nope"):
        with pytest.raises(TensorFileError):
            validate_meta(bad, 1 << 30)


# -- results --------------------------------------------------------------------------------------------
def test_result_json_round_trip_with_every_section():
    stats = TimingStats(1.0, 1.1, 0.9, 1.5, 0.1, 0.1, 20, 3, "cuda-events", 1.05)
    result = EvalResult(
        status=Status.CORRECT, stage=Stage.DONE, problem_id="level1/x", message="ok",
        correctness=CorrectnessReport(5, 5, 5, "ab", 1e-4, 1e-4, "float32", input_sets=["check", "sweep_a"],
                                      mismatch=Mismatch(0, 0, "values", "d", 1.0, 2.0, 3, 4, [1, 2], 0.5, 0.7,
                                                        "check")),
        timing=TimingReport(stats, stats, None, 2.0, None, "x"),
        environment=Environment("gpu", "H100", "2.11", "3.6", "3.12", "0.1.0", ["netns"]),
    )
    assert EvalResult.from_json(result.to_json()) == result
    assert result.compiled and result.correct


def test_timing_summary_rejects_forged_numbers():
    stats = summarize({"times_ms": [1.0, 2.0, 3.0, 4.0], "wall_ms": [1.1, 2.1, 3.1, 4.1], "warmup": 3})
    assert stats.median_ms == 2.5 and stats.reps == 4 and stats.wall_median_ms == pytest.approx(2.6)
    for bad in ([], [float("nan")], [-1.0]):
        with pytest.raises(ValueError):
            summarize({"times_ms": bad})


# -- the child runner -----------------------------------------------------------------------------------
def _run(code: str, **kw):
    events = []
    outcome = run_child([sys.executable, "-c", code], env={"PATH": "/usr/bin:/bin"}, cwd=str(Path.cwd()),
                        timeouts={"start": 10, "import": 10, "run": 10}, memory_limit_bytes=kw.get("mem", 0),
                        log_limit_bytes=1000, on_event=lambda e: events.append(e) or True)
    return outcome, events


def test_runner_reads_protocol_and_ignores_exit_code():
    code = ("import os, json, time; fd = int(os.environ['KERNELRL_PROTO_FD']); print('hi', flush=True); "
            "time.sleep(0.2); os.write(fd, b'{\"event\": \"ready\"}\\n{\"event\": \"done\"}\\n'); "
            "time.sleep(30); raise SystemExit(7)")
    started = time.monotonic()
    outcome, events = _run(code)
    assert [e["event"] for e in events] == ["ready", "done"] and "hi" in outcome.log
    # "done" ends the run: the child is killed rather than waited for, and its exit code means nothing
    assert time.monotonic() - started < 20 and outcome.returncode != 7


def test_runner_memory_watchdog_kills_a_hog():
    code = "import time\nchunks = []\nwhile True:\n    chunks.append(bytearray(50 << 20))\n    time.sleep(0.01)\n"
    outcome, _ = _run(code, mem=300 << 20)
    assert outcome.memory_exceeded_bytes > 300 << 20 and outcome.returncode < 0


@pytest.mark.slow  # waits out its timeouts
def test_runner_flags_malformed_protocol_and_timeouts():
    outcome, _ = _run("import os; os.write(int(os.environ['KERNELRL_PROTO_FD']), b'not json\\n')")
    assert "malformed" in outcome.protocol_error
    outcome, _ = _run("while True: pass")
    assert outcome.timed_out_phase == "start" and outcome.timeout_s == 10


def test_log_buffer_keeps_head_and_tail():
    log = LogBuffer(10)
    for chunk in (b"HEAD-", b"x" * 1000, b"-TAIL"):
        log.add(chunk)
    assert log.text().startswith("HEAD-") and log.text().endswith("-TAIL") and log.dropped == 1000


def test_verdict_process_does_not_import_torch():
    """The verdict side (API, CLI) stays light and never loads the framework candidates run on."""
    import subprocess

    code = ("import sys, kernelrl, kernelrl.cli, kernelrl.evaluate, kernelrl.sandbox.launcher; "
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_input_set_helpers():
    import types

    from kernelrl.problems.input_sets import (
        InputSetError,
        call_with,
        correctness_sets,
        input_sets,
        timing_set,
    )

    plain = types.SimpleNamespace()
    assert input_sets(plain) == {"default": {}} and timing_set(["default"]) == "default"
    hooked = types.SimpleNamespace(get_input_sets=lambda: {"bench": {"n": 8}, "check": {"n": 1}, "sweep_b": {},
                                                           "sweep_a": {}})
    names = list(input_sets(hooked))
    assert correctness_sets(names, gpu=False) == ["check", "sweep_a", "sweep_b"]
    assert correctness_sets(names, gpu=True)[-1] == "bench" and timing_set(names) == "bench"
    assert correctness_sets(names, gpu=True, bench=False) == ["check", "sweep_a", "sweep_b"]
    for bad in ({"bench": {}}, {"bench": {}, "check": {}, "huge": {}}, {"bench": 1, "check": {}}):
        with pytest.raises(InputSetError):
            input_sets(types.SimpleNamespace(get_input_sets=lambda bad=bad: bad))
    assert call_with(lambda n=1: n, {"n": 5, "m": 2}) == 5
    assert call_with(lambda **kw: sorted(kw), {"n": 5, "m": 2}) == ["m", "n"]


def test_speed_of_light_floor_is_the_larger_of_bandwidth_and_flops():
    from kernelrl.evaluate import speed_of_light_ms

    # 3 GB at 2 TB/s (x1.5 margin) = 1.0 ms; 60 TFLOP at 15 TFLOP/s (x4 margin) = 1 s
    assert speed_of_light_ms(3_000_000_000, None, 2e12, None, 1.5, 4.0) == pytest.approx(1.0)
    assert speed_of_light_ms(3_000_000_000, 60e12, 2e12, 15e12, 1.5, 4.0) == pytest.approx(1000.0)
    assert speed_of_light_ms(3_000_000_000, 60e12, None, None, 1.5, 4.0) is None  # CPU: nothing measured


def test_judge_counts_reference_flops_on_the_meta_device():
    from kernelrl import load_suite
    from kernelrl.sandbox.judge import Judge

    problem = load_suite().get("level1/2_matmul_square")
    judge = Judge("cpu")
    module, sets = judge._module(str(problem.path), problem.sha256)
    params = sets["check"]
    a, b = judge._inputs(module, params, seed=0)
    m, k = a.shape
    n = b.shape[1]
    args = [{"tensor": 0}, {"tensor": 1}]
    assert judge._flops(problem.sha256, module, params, args, lambda: [a, b]) == 2 * m * k * n


def test_event_times_above_wall_times_mean_a_tampered_timer():
    from kernelrl.timing.cuda_timer import events_exceed_wall

    honest = {"times_ms": [1.0, 1.1, 0.9], "wall_ms": [1.2, 1.3, 1.1]}
    launch_bound = {"times_ms": [0.01, 0.01, 0.01], "wall_ms": [0.05, 0.06, 0.05]}
    inflated = {"times_ms": [2.0, 2.1, 2.0], "wall_ms": [1.0, 1.0, 1.0]}
    assert not events_exceed_wall(honest) and not events_exceed_wall(launch_bound)
    assert events_exceed_wall(inflated)
    assert events_exceed_wall({"times_ms": [1.0]})  # no wall times: not trusted


def test_census_matches_only_the_candidates_own_kernel_names():
    from kernelrl.sandbox.census import LaunchCensus

    census = LaunchCensus("kernelrl_candidate")
    census.triton_kernels.add("relu_kernel")
    census.cuda_kernels.add("gemm")
    assert census.is_candidate_kernel("relu_kernel")
    assert census.is_candidate_kernel("_Z4gemmPKfS0_Pfiii")  # mangled CUDA C++ name
    assert not census.is_candidate_kernel("relu_kernel_0d1d")  # another kernel that merely shares a prefix
    assert not census.is_candidate_kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32")
    # demangled, as torch's profiler names CUDA C++ kernels
    assert census.is_candidate_kernel("gemm(float const*, float const*, float*, int, int, int)")
    assert census.is_candidate_kernel("void gemm<float, 128>(float const*, float*, int)")
    # a candidate kernel named like one of PyTorch's does not claim PyTorch's (namespaced) kernels
    census.cuda_kernels.add("elementwise_kernel")
    assert not census.is_candidate_kernel(
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<>(at::TensorIteratorBase&)>(int)")
    assert not census.is_candidate_kernel("_ZN2at6native18elementwise_kernelILi128ELi4EEEviT1_")


def test_census_counts_calls_into_a_built_extension_and_reads_its_kernel_names():
    import types

    from kernelrl.sandbox.census import LaunchCensus

    built = types.ModuleType("relu_ext")
    built.relu = lambda x: x
    census = LaunchCensus("kernelrl_candidate")
    load_inline = census._wrap_loader(lambda *args, **kwargs: built)
    module = load_inline("relu_ext", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                         cuda_sources="__global__ void __launch_bounds__(256) relu_kernel(float* x) {}",
                         functions=["relu"])
    assert census.cuda_kernels == {"relu_kernel"} and census.launches == 0
    assert module.relu(3) == 3 and module.relu(4) == 4
    assert census.launches == 2


def test_chunked_comparison_reports_like_a_single_pass(monkeypatch):
    import torch

    from kernelrl.verify import compare

    expected = torch.randn(50, 70)
    actual = expected.clone()
    actual[10, 5], actual[40, 3] = 9.0, float("nan")
    whole = compare.compare_tensors(expected, actual, 1e-4, 1e-4)
    monkeypatch.setattr(compare, "_CHUNK", 1000)  # the mismatches fall in the 1st and 3rd of 4 chunks
    assert compare.compare_tensors(expected, actual, 1e-4, 1e-4) == whole
    assert whole["mismatched"] == 2 and whole["first_index"] == [10, 5] and whole["reason"] == "nonfinite"
    assert compare.compare_tensors(expected, expected.clone(), 1e-4, 1e-4) is None


def test_sampled_comparison_finds_a_wrong_output_and_maps_the_index_back():
    import torch

    from kernelrl.verify.compare import SAMPLE_ENDS, SAMPLE_POINTS, compare_sampled, sample_positions

    expected = torch.randn(64, 100)
    positions = sample_positions(6400, 7, "cpu")
    assert positions.numel() == SAMPLE_POINTS + 2 * SAMPLE_ENDS  # both ends (they overlap here) and the draws
    assert torch.equal(positions, sample_positions(6400, 7, "cpu"))  # the judge redraws the sandbox's positions
    assert not torch.equal(positions, sample_positions(6400, 8, "cpu"))
    assert int(positions.min()) == 0 and int(positions.max()) == 6399
    good = expected.reshape(-1)[positions].clone()
    assert compare_sampled(expected, [64, 100], "float32", 7, good, 1e-4, 1e-4) is None
    bad = good.clone()
    bad[101] += 1.0  # the ends come first: position 101
    found = compare_sampled(expected, [64, 100], "float32", 7, bad, 1e-4, 1e-4)
    assert found["first_index"] == [1, 1] and found["mismatched"] > 0 and "sampled" in found["detail"]
    assert compare_sampled(expected, [64, 99], "float32", 7, good, 1e-4, 1e-4)["reason"] == "shape"
    assert compare_sampled(expected, [64, 100], "float16", 7, good, 1e-4, 1e-4)["reason"] == "dtype"
    # values drawn at other positions (another seed) do not match; a malformed seed or count is refused
    assert compare_sampled(expected, [64, 100], "float32", 8, good, 1e-4, 1e-4)["reason"] == "values"
    for seed in (None, -1, 1 << 63, True, "7"):
        assert "malformed" in compare_sampled(expected, [64, 100], "float32", seed, good, 1e-4, 1e-4)["detail"]
    assert "malformed" in compare_sampled(expected, [64, 100], "float32", 7, good[:-1], 1e-4, 1e-4)["detail"]


def test_judge_lets_the_sandbox_redraw_reproducible_inputs_and_sends_files_otherwise(tmp_path):
    from kernelrl.problems.input_sets import input_probe
    from kernelrl.sandbox.judge import Judge

    judge = Judge("cpu")
    for name, draw, redrawn in (("seeded", "torch.randn(16, 8)", True),
                                ("unseeded", "torch.randn(16, 8) + random.random()", False)):
        path = tmp_path / f"{name}.py"
        path.write_text("import random\nimport torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                        "    def forward(self, x):\n        return x * 2\n"
                        f"def get_inputs():\n    return [{draw}]\ndef get_init_inputs():\n    return []\n")
        in_dir = tmp_path / f"in_{name}"
        in_dir.mkdir()
        prepared = judge.prepare({"eval_id": name, "problem_path": str(path), "problem_sha256": name * 4,
                                  "master_seed": 7, "min_trials": 3, "input_sets": [], "in_dir": str(in_dir),
                                  "timing_variants": 0})
        files = sorted(p.name for p in in_dir.iterdir())
        if redrawn:  # no files: each trial carries its seed and a probe of the judge's draw
            assert files == [] and all("draw" in t for t in prepared["trials"])
            trial = prepared["trials"][0]
            torch.manual_seed(trial["draw"]["seed"])
            assert input_probe(torch, [torch.randn(16, 8)]) == trial["draw"]["probe"]
        else:
            assert files == ["trial0_in0.bin", "trial1_in0.bin", "trial2_in0.bin"]
            assert not any("draw" in t for t in prepared["trials"])


def test_judge_refuses_shared_buffer_claims_it_never_offered(tmp_path):
    """A forged report (candidate code can write to the protocol pipe) that says an output sits in a shared
    buffer: none was offered (CPU: no CUDA IPC), and timed calls never use one, so the judge refuses rather than
    comparing a buffer that holds an earlier, honest answer."""
    from kernelrl.sandbox.judge import Judge
    from kernelrl.sandbox.tensorio import tensor_meta, write_tensor

    judge = Judge("cpu")
    path = tmp_path / "double.py"
    path.write_text("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return x * 2\n"
                    "def get_inputs():\n    return [torch.randn(16, 8)]\ndef get_init_inputs():\n    return []\n")
    (tmp_path / "in").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    prepared = judge.prepare({"eval_id": "e", "problem_path": str(path), "problem_sha256": "d" * 64,
                              "master_seed": 7, "min_trials": 1, "input_sets": [], "in_dir": str(tmp_path / "in"),
                              "timing_variants": 0})
    assert "ipc" not in prepared["trials"][0]  # offers exist on a GPU only
    torch.manual_seed(prepared["trials"][0]["draw"]["seed"])
    answer = torch.randn(16, 8) * 2
    meta = tensor_meta(answer)
    request = {"eval_id": "e", "trial": 0, "out_dir": str(out), "atol": 1e-5, "rtol": 1e-5}
    with pytest.raises(ValueError, match="never offered"):
        judge.compare({**request, "outputs": [{**meta, "ipc": True}]})
    write_tensor(out / "timed0_out0.bin", answer)
    with pytest.raises(ValueError, match="timed call"):
        judge.compare({**request, "prefix": "timed0", "outputs": [{**meta, "ipc": True}]})
    assert judge.compare({**request, "prefix": "timed0", "outputs": [meta]})["mismatch"] is None
    judge.release({"eval_id": "e"})


def test_kernel_share_counts_nested_intervals_once_and_work_it_never_saw():
    from kernelrl.sandbox.kernel_share import Span, share_of

    # an extension call (mine, 10 ms) that spends 4 ms in an ATen matmul it calls; a copy op (other, 2 ms)
    extension = Span("mine", "gemm_ext", ms=10.0, children=[Span("other", "mm", ms=4.0)])
    copy = Span("other", "copy_", ms=2.0)
    share = share_of([extension, copy], forward_ms=12.5)
    assert share["mine_us"] == pytest.approx(6000.0) and share["other_us"] == pytest.approx(6000.0)
    assert share["fraction"] == pytest.approx(6.0 / 12.5)  # the forward's 0.5 ms between intervals counts too
    assert share["top"][0][1] == pytest.approx(6000.0)
    # a custom op (other) that launches the candidate's Triton kernel inside it: the kernel counts as mine
    custom = Span("other", "my_op", ms=3.0, children=[Span("mine", "relu_kernel", ms=2.5)])
    assert share_of([custom], forward_ms=3.0)["fraction"] == pytest.approx(2.5 / 3.0)
    # work no interval saw (a CUDA graph replay): the whole forward is the denominator
    assert share_of([Span("mine", "copy_kernel", ms=0.1)], forward_ms=5.0)["fraction"] == pytest.approx(0.02)
    assert share_of([], forward_ms=0.0)["fraction"] is None


class SpanRecorder:
    """A stand-in for the kernel share's tracer: records the (kind, name) of each interval it is asked to open."""

    def __init__(self):
        self.opened = []

    def begin(self, kind, name):
        self.opened.append((kind, name))
        return name

    def end(self, span):
        pass


def test_kernel_share_times_ops_that_launch_work_and_skips_views_and_allocations():
    import torch

    from kernelrl.sandbox.kernel_share import _TimedOps

    names = SpanRecorder()
    x = torch.randn(8, 8)
    with _TimedOps(names):
        y = torch.matmul(x, x).relu()
        torch.empty(3)
        y.view(64)
        y.t().contiguous()
        torch.nn.functional.linear(x, x)
    assert names.opened == [("other", "mm"), ("other", "relu"), ("layout", "clone"), ("other", "mm")]


def test_kernel_share_leaves_same_dtype_layout_copies_out_of_the_share():
    """h17 (an honest relu between x.t().contiguous() and yt.t().contiguous()) was rejected on an H100 at 22%:
    the two strided copies took most of forward's GPU time. A same-dtype layout copy computes nothing: neutral."""
    from kernelrl.sandbox.kernel_share import Span, share_of

    h17 = [Span("layout", "clone", ms=1.75), Span("mine", "relu_kernel", ms=1.0), Span("layout", "clone", ms=1.75)]
    share = share_of(h17, forward_ms=4.5)
    assert share["fraction"] == pytest.approx(1.0) and share["fraction"] >= 0.5
    assert share["layout_us"] == pytest.approx(3500.0) and share["total_us"] == pytest.approx(1000.0)
    # PyTorch doing the work (or a casting copy, which is "other") still counts against the candidate
    torch_work = [Span("other", "add", ms=3.5), Span("mine", "relu_kernel", ms=1.0)]
    assert share_of(torch_work, forward_ms=4.5)["fraction"] == pytest.approx(1.0 / 4.5)
    cast = [Span("other", "_to_copy", ms=3.5), Span("mine", "relu_kernel", ms=1.0)]
    assert share_of(cast, forward_ms=4.5)["fraction"] == pytest.approx(1.0 / 4.5)
    # a layout span's children count to their own kinds; forward time no interval saw still counts
    nested = Span("layout", "copy_", ms=2.0, children=[Span("other", "mul", ms=1.5)])
    share = share_of([nested, Span("mine", "k", ms=1.0)], forward_ms=4.0)
    assert share["layout_us"] == pytest.approx(500.0) and share["fraction"] == pytest.approx(1.0 / 3.5)
    assert share_of([Span("layout", "clone", ms=2.0)], forward_ms=1.0)["fraction"] is None


def test_kernel_share_classifies_copies_by_whether_they_keep_the_dtype():
    import torch

    from kernelrl.sandbox.kernel_share import _span_kind, _TimedOps

    aten = torch.ops.aten
    x, h = torch.randn(4, 4), torch.randn(4, 4).half()

    def kind(op, *args, **kwargs):
        return _span_kind(op.overloadpacket.__name__, args, kwargs)

    assert kind(aten.clone.default, x.t()) == "layout"
    assert kind(aten._to_copy.default, x, dtype=torch.float32) == "layout"
    assert kind(aten._to_copy.default, x, dtype=torch.float16) == "other"
    assert kind(aten.copy_.default, torch.empty(4, 4), x) == "layout"
    assert kind(aten.copy_.default, torch.empty(4, 4, dtype=torch.float16), x) == "other"
    assert kind(aten._copy_from.default, x, h) == "other"
    assert kind(aten.clone.out, x, out=h) == "other"
    assert kind(aten.clone.default, x._neg_view()) == "other"  # materializing a negated view negates
    assert kind(aten.add.Tensor, x, x) == "other"
    # constant fills compute nothing from the inputs (an accumulator for atomics): neutral, as the census
    # allows them
    assert kind(aten.zero_.default, x) == kind(aten.zeros_like.default, x) == "layout"
    assert kind(aten.fill_.Scalar, x, 1.0) == kind(aten.full.default, [4], 2.0) == "layout"
    assert kind(aten.fill_.Tensor, x, x.sum()) == "other"  # a computed value copied in

    kinds = SpanRecorder()
    with _TimedOps(kinds):
        x.t().contiguous()
        x.to(torch.float16)
        torch.empty(4, 4, dtype=torch.float64).copy_(x)
        torch.empty(4, 4).copy_(x.t())
        x.clone().add_(1)
    assert kinds.opened == [("layout", "clone"), ("other", "_to_copy"), ("other", "copy_"), ("layout", "copy_"),
                            ("layout", "clone"), ("other", "add_")]


def test_census_brackets_the_candidates_launches_for_a_tracer():
    from types import SimpleNamespace

    from kernelrl.sandbox.census import LaunchCensus

    log = []

    class Tracer:
        def begin(self, kind, name):
            log.append(("begin", kind, name))
            return name

        def end(self, span):
            log.append(("end", span))

    def relu_launch(x):
        log.append(("call", x))
        return x

    built = SimpleNamespace(relu_launch=relu_launch)
    census = LaunchCensus("kernelrl_candidate")
    module = census._wrap_loader(lambda *args, **kwargs: built)("ext", "", "__global__ void relu_kernel(float* x) {}")
    module.relu_launch(1)  # no tracer: counted only
    census.tracer = Tracer()
    module.relu_launch(2)
    assert census.launches == 2
    assert log == [("call", 1), ("begin", "mine", "relu_launch"), ("call", 2), ("end", "relu_launch")]


def test_tensor_files_round_trip_with_and_without_a_host_stage(tmp_path):
    import torch

    from kernelrl.sandbox.tensorio import HostStage, TensorFileError, read_tensor, write_tensor

    stage = HostStage()
    for t in (torch.randn(3, 5), torch.arange(7, dtype=torch.int16), torch.tensor([True, False]),
              torch.randn(4, 6).t(), torch.empty(0, 3)):
        path = tmp_path / "t.bin"
        meta = write_tensor(path, t, stage)  # host tensors never take the pinned path
        back = read_tensor(path, meta, "cpu", stage)
        assert back.dtype == t.dtype and back.shape == t.shape and torch.equal(back, t)
    assert not stage.applies("cpu", 1 << 30) and stage.applies("cuda", 1 << 30)
    assert not stage.applies("cuda", 1024)
    (tmp_path / "short.bin").write_bytes(b"\0" * 10)
    with pytest.raises(TensorFileError, match="header says 12"):
        read_tensor(tmp_path / "short.bin", {"dtype": "float32", "shape": [3]}, "cpu", stage)
    (tmp_path / "link.bin").symlink_to(tmp_path / "short.bin")
    with pytest.raises(TensorFileError, match="cannot open"):
        read_tensor(tmp_path / "link.bin", {"dtype": "uint8", "shape": [10]})


@pytest.mark.slow  # builds a C++ extension
def test_aten_calls_inside_a_cpp_extension_are_seen_nested_in_its_span(tmp_path):
    """A load_inline function that calls ATen (torch::mm) must not have that time counted as the candidate's:
    the dispatch mode sees the calls made from C++, opened inside the extension's own span. Real build (~25 s)."""
    import shutil

    import torch
    from torch.utils.cpp_extension import load_inline

    from kernelrl.sandbox.census import LaunchCensus
    from kernelrl.sandbox.kernel_share import _TimedOps

    if shutil.which("c++") is None or shutil.which("ninja") is None:
        pytest.skip("no C++ compiler or ninja to build the extension")
    census = LaunchCensus("kernelrl_candidate")
    build = census._wrap_loader(load_inline)
    ext = build("kr_aten_inside", cpp_sources="#include <torch/extension.h>\n"
                "torch::Tensor square_mm(torch::Tensor a) { return torch::mm(a, a).relu(); }\n",
                functions=["square_mm"], build_directory=str(tmp_path))

    class Nesting:  # the tracer protocol, recording who opened inside whom
        def __init__(self):
            self.open, self.seen = [], []

        def begin(self, kind, name):
            self.seen.append((kind, name, tuple(n for _, n in self.open)))
            self.open.append((kind, name))
            return name

        def end(self, span):
            self.open.pop()

    tracer = Nesting()
    census.tracer = tracer
    x = torch.randn(8, 8)
    with _TimedOps(tracer):
        y = ext.square_mm(x)
    assert torch.allclose(y, (x @ x).relu())
    assert tracer.seen == [("mine", "square_mm", ()), ("other", "mm", ("square_mm",)),
                           ("other", "relu", ("square_mm",))]


def test_zygote_refuses_to_serve_when_its_children_could_not_use_cuda(monkeypatch):
    import torch

    from kernelrl.sandbox import zygote

    zygote._assert_children_can_use_cuda()  # this process never initialized CUDA: a probe child is fine
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True)  # as after CUDA started in the parent
    with pytest.raises(RuntimeError, match="initialized CUDA"):
        zygote._assert_children_can_use_cuda()


# texts from an H100 with six 1 GiB evaluations at once
_JUDGE_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity "
              "of 79.18 GiB of which 353.06 MiB is free.")
_SANDBOX_OOM = ('RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at '
                '"/pytorch/c10/cuda/CUDACachingAllocator.cpp":1135, please report a bug to PyTorch.')


@pytest.mark.parametrize("status, stage, message, feedback, log, timing_reason, expected", [
    (Status.RUNTIME_ERROR, Stage.REFERENCE, "the problem's reference failed", _JUDGE_OOM, "", None, True),
    (Status.RUNTIME_ERROR, Stage.REFERENCE, "the sandbox could not reproduce the problem's inputs",
     f"the inputs could not be drawn: {_SANDBOX_OOM}", "", None, True),
    (Status.RUNTIME_ERROR, Stage.TIMING, f"RuntimeError while timing forward: {_SANDBOX_OOM[14:]}", "", "", None,
     True),
    (Status.CRASHED, Stage.IMPORT, "the candidate process exited with code 71 before reporting all results", "",
     "kernelrl sandbox init failed: RuntimeError('CUDA error: out of memory')", None, True),
    (Status.CORRECT, Stage.DONE, "correct", "", "", f"baselines failed: {_JUDGE_OOM}", True),
    (Status.CORRECT, Stage.DONE, "correct", "", "", "torch.compile failed: no Triton", False),
    (Status.RUNTIME_ERROR, Stage.CORRECTNESS, "IndexError while running forward: index 9 out of range", "", "",
     None, False),
    (Status.WRONG_OUTPUT, Stage.CORRECTNESS, "wrong output", "out of memory", "", None, False),  # not an error
    (Status.CRASHED, Stage.CORRECTNESS, "killed by SIGSEGV", "", "segmentation fault", None, False),
])
def test_out_of_memory_verdicts_are_recognized(status, stage, message, feedback, log, timing_reason, expected):
    from kernelrl.evaluate.verdict import ran_out_of_memory

    result = EvalResult(status=status, stage=stage, problem_id="p", message=message, feedback=feedback, log=log,
                        timing=TimingReport(unavailable_reason=timing_reason) if timing_reason else None)
    assert ran_out_of_memory(result) is expected


def test_same_bytes_compares_chunk_by_chunk_as_on_a_gpu():
    """`same_bytes` in chunks (as on a GPU, where torch.equal builds a mask of all it compares): every chunk is
    compared, the ragged last one too, bit for bit (a NaN payload and -0.0 differ)."""
    from kernelrl.sandbox.tensorio import same_bytes

    a = torch.randn(37, 5)
    for chunk in (7, 64, None):
        assert same_bytes(a, a.clone(), chunk)
        for position in (0, 91, a.numel() - 1):  # the first chunk, one in the middle, the ragged tail
            b = a.clone()
            b.view(-1)[position] += 1.0
            assert not same_bytes(a, b, chunk), (chunk, position)
    zero, nan = torch.zeros(40), torch.full((40,), float("nan"))
    assert not same_bytes(zero, -zero, 8)
    assert not same_bytes(nan, nan.view(torch.int32).add(1).view(torch.float32), 8)
    assert not same_bytes(a, a.t().contiguous(), 7)  # another shape
