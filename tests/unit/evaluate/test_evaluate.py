"""End-to-end evaluations on the CPU (Triton interpreter): the verdicts of the trust model.

The session's CPU evaluator serves every test in this module (with this module's verdict settings), in order,
so the last test also shows it still evaluates correctly after candidates that crashed, hung, exited, flooded
stdout and ran out of memory.
"""

from __future__ import annotations

import textwrap
import time

import candidates as c
import pytest
from conftest import example

from kernelrl import EvalResult, Evaluator, EvaluatorError, Stage, Status, VerdictSettings, load_problem

RUN_TIMEOUT_S = 20.0


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator):
    # static checks off: these candidates test the sandbox, which must hold for code the rules would miss
    return cpu_evaluator.with_verdict(VerdictSettings(run_timeout_s=RUN_TIMEOUT_S,
                                                      compile_timeout_s=RUN_TIMEOUT_S, memory_limit_gb=4,
                                                      trials=3, static_checks=False))


@pytest.fixture(scope="module")
def relu(suite):
    return suite.get("level0/1_relu")


def test_correct_elementwise_kernel(evaluator, relu):
    result = evaluator.evaluate(relu, example("relu_triton.py"))
    assert result.status is Status.CORRECT, result.feedback
    assert result.stage is Stage.DONE and result.compiled and result.correct
    assert result.correctness.trials_passed == result.correctness.trials_run == 3
    assert (result.correctness.atol, result.correctness.rtol, result.correctness.dtype) \
        == (1e-4, 1e-4, "float32")
    assert (result.environment.mode, result.environment.trust) == ("cpu-interpreter", "interpreter")
    assert result.timing.candidate is None and "cpu-interpreter" in result.timing.unavailable_reason
    # where the time went: every phase the run reached, none negative, together within the wall time
    assert {"prepare", "start", "import", "init", "correctness", "finish"} <= set(result.phases_s)
    assert all(v >= 0 for v in result.phases_s.values())
    assert sum(result.phases_s.values()) <= result.wall_time_s


def test_cpu_mode_refuses_a_triton_and_numpy_whose_interpreter_fails_every_loop(monkeypatch, relu):
    # triton 3.6 with numpy 2.5 (the H100 host's) failed every kernel with a loop with a TypeError: honest
    # kernels would be rejected, so the evaluator says so instead of handing out verdicts
    from kernelrl.evaluate import evaluator as evaluator_module
    from kernelrl.evaluate import settings as config

    broken = {"triton": "3.6.0", "numpy": "2.5.2"}
    assert "numpy<2.4" in config.interpreter_incompatibility(broken)
    for fine in ({"triton": "3.6.0", "numpy": "2.3.5"}, {"triton": "3.8.0", "numpy": "2.5.2"},
                 {"triton": "3.9.0", "numpy": "2.4.6"}, {"triton": None, "numpy": "2.5.2"}):
        assert config.interpreter_incompatibility(fine) is None, fine
    assert config.interpreter_incompatibility() is None  # this environment's (CI's) own versions
    monkeypatch.setattr(evaluator_module, "interpreter_incompatibility",
                        lambda: config.interpreter_incompatibility(broken))
    with Evaluator(device="cpu") as ev, pytest.raises(EvaluatorError, match="triton 3.6.0 and numpy 2.5.2"):
        ev.evaluate(relu, example("relu_triton.py"))


def test_correct_softmax_kernel_default_five_trials(cpu_evaluator, suite):
    with cpu_evaluator.with_verdict(run_timeout_s=60) as ev:
        result = ev.evaluate(suite.get("level1/1_row_softmax"), example("softmax_triton.py"))
    assert result.status is Status.CORRECT, result.feedback
    assert result.correctness.trials_passed == 5


def test_parameters_match_reference_weights(evaluator, suite):
    result = evaluator.evaluate(suite.get("level0/2_scale_shift"), example("scale_shift_triton.py"))
    assert result.status is Status.CORRECT, result.feedback


def test_off_by_one_mask_is_wrong_output_with_index_and_values(evaluator, suite):
    result = evaluator.evaluate(suite.get("level1/1_row_softmax"), example("softmax_off_by_one.py"))
    assert result.status is Status.WRONG_OUTPUT and result.stage is Stage.CORRECTNESS
    m = result.correctness.mismatch
    assert m.reason == "values" and m.trial == 0 and m.output_index == 0
    assert m.input_set == "check" and m.numel == 16 * 100  # trials start on the problem's check set
    assert len(m.first_index) == 2 and 0 <= m.first_index[0] < 16 and 0 <= m.first_index[1] < 100
    assert m.expected_value != m.actual_value
    assert m.max_abs_error > 1e-4 and m.mismatched > 0
    assert f"index {m.first_index}" in result.feedback
    assert result.correctness.trials_passed == 0


def test_syntax_error_is_compile_error(evaluator, relu):
    result = evaluator.evaluate(relu, c.SYNTAX_ERROR)
    assert result.status is Status.COMPILE_ERROR and result.stage is Stage.STATIC
    assert "SyntaxError" in result.feedback and "line" in result.feedback
    assert not result.compiled


def test_raise_at_import_is_compile_error(evaluator, relu):
    result = evaluator.evaluate(relu, c.RAISE_AT_IMPORT)
    assert result.status is Status.COMPILE_ERROR and result.stage is Stage.IMPORT
    assert "broken at import" in result.feedback and "ValueError" in result.message


def test_raise_in_forward_is_runtime_error(evaluator, relu):
    result = evaluator.evaluate(relu, c.RAISE_IN_FORWARD)
    assert result.status is Status.RUNTIME_ERROR and result.stage is Stage.CORRECTNESS
    assert "boom" in result.feedback and "kernelrl/sandbox" not in result.feedback
    assert result.compiled


@pytest.mark.parametrize("code, needle", [
    (c.SYS_EXIT, "sys.exit(0)"),
    (c.OS_EXIT, "exited with code 0"),
    (c.ABORT, "SIGABRT"),
])
def test_exits_and_aborts_are_crashed(evaluator, relu, code, needle):
    result = evaluator.evaluate(relu, code)
    assert result.status is Status.CRASHED, result.message
    assert needle in result.message
    assert result.correctness.trials_passed == 0


def test_infinite_loop_times_out(evaluator, relu):
    limit = 6.0  # this call's own run timeout (a verdict setting): the loop is stopped after it
    start = time.monotonic()
    result = evaluator.with_verdict(run_timeout_s=limit).evaluate(relu, c.INFINITE_LOOP)
    assert result.status is Status.TIMEOUT and result.stage is Stage.CORRECTNESS
    assert f"{limit:g} s" in result.message
    assert time.monotonic() - start < limit + 15


@pytest.mark.parametrize("code", [c.HUGE_ALLOC, c.HUGE_BYTEARRAY])
def test_30gb_host_allocation_is_stopped(evaluator, relu, code):
    result = evaluator.evaluate(relu, code)
    assert result.status in (Status.RUNTIME_ERROR, Status.CRASHED), result.message
    text = (result.message + result.feedback).lower()
    assert "memory" in text or "alloc" in text


def test_100mb_print_is_truncated_and_judged_on_output(evaluator, relu):
    result = evaluator.evaluate(relu, c.PRINT_100MB)
    assert result.status is Status.CORRECT, result.message
    assert result.log_bytes_dropped > 99_000_000
    assert len(result.log) < 40_000 and "END-OF-SPAM" in result.log and "dropped" in result.log


def test_allclose_monkeypatch_cannot_reach_the_verdict(evaluator, relu):
    result = evaluator.evaluate(relu, example("relu_allclose_hack.py"))
    assert result.status is Status.WRONG_OUTPUT


def test_input_mutation_is_wrong_output(evaluator, relu):
    result = evaluator.evaluate(relu, c.MUTATES_INPUT)
    assert result.status is Status.WRONG_OUTPUT
    assert result.correctness.mismatch.reason == "input_mutated"


@pytest.mark.parametrize("code, reason", [
    (c.WRONG_SHAPE, "shape"), (c.WRONG_DTYPE, "dtype"), (c.NAN_OUTPUT, "nonfinite"),
])
def test_output_checks(evaluator, relu, code, reason):
    result = evaluator.evaluate(relu, code)
    assert result.status is Status.WRONG_OUTPUT
    assert result.correctness.mismatch.reason == reason


def test_non_tensor_output_is_runtime_error(evaluator, relu):
    result = evaluator.evaluate(relu, c.RETURNS_FLOAT)
    assert result.status is Status.RUNTIME_ERROR and "tuple of tensors" in result.feedback


def test_missing_modelnew_is_format_error(evaluator, relu):
    assert evaluator.evaluate(relu, c.NO_MODELNEW).status is Status.FORMAT_ERROR
    result = evaluator.evaluate_completion(relu, "I would use a Triton kernel here.")
    assert result.status is Status.FORMAT_ERROR and result.stage is Stage.EXTRACT
    assert "ModelNew" in result.feedback


def test_cuda_cpp_candidate_is_unsupported_on_cpu(evaluator, relu):
    result = evaluator.evaluate(relu, c.CUDA_CPP)
    assert result.status is Status.UNSUPPORTED and "GPU" in result.message


def test_completion_extraction_picks_the_modelnew_block(evaluator, relu):
    completion = (
        "First a helper:\n```python\nimport torch\nprint('not this one')\n```\n"
        f"Here is my kernel:\n```python\n{example('relu_triton.py')}```\nDone."
    )
    assert evaluator.evaluate_completion(relu, completion).status is Status.CORRECT


def test_tuple_and_scalar_outputs_and_plain_value_inputs(evaluator, tmp_path):
    problem_file = tmp_path / "tuple_out.py"
    problem_file.write_text(textwrap.dedent('''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale

            def forward(self, x, shift):
                return x.sum(), x * self.scale + shift

        def get_inputs():
            return [torch.randn(64, 32), 0.5]

        def get_init_inputs():
            return [3.0]
    '''))
    candidate = textwrap.dedent('''
        import torch
        import torch.nn as nn
        import triton
        import triton.language as tl

        @triton.jit
        def affine_kernel(x_ptr, y_ptr, n, scale, shift, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale + shift, mask=mask)

        @triton.jit
        def sum_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))

        class ModelNew(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale

            def forward(self, x, shift):
                y = torch.empty_like(x)
                affine_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), self.scale, shift, BLOCK=1024)
                total = torch.zeros((), dtype=x.dtype)  # the scalar output: a kernel sums into it
                sum_kernel[(triton.cdiv(x.numel(), 1024),)](x, total, x.numel(), BLOCK=1024)
                return total, y
    ''')
    problem = load_problem(problem_file)
    result = evaluator.evaluate(problem, candidate)
    assert result.status is Status.CORRECT, result.feedback
    wrong = evaluator.evaluate(problem, candidate.replace("return total, y", "return total + 1, y"))
    assert wrong.status is Status.WRONG_OUTPUT and wrong.correctness.mismatch.output_index == 0


def _problem_with_forward(path, forward_body: str):
    path.write_text(
        "import os\nimport torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
        f"        {forward_body}\ndef get_inputs():\n    return [torch.randn(4)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    return load_problem(path)


def test_broken_reference_is_reported_as_problem_error(evaluator, tmp_path):
    problem = _problem_with_forward(tmp_path / "broken.py", "raise RuntimeError('reference bug')")
    result = evaluator.evaluate(problem, example("relu_triton.py"))
    assert result.status is Status.UNSUPPORTED and result.stage is Stage.REFERENCE  # refused by the audit
    assert "reference_raises" in result.message and "reference bug" in result.feedback
    with evaluator.with_verdict(refuse_flagged_problems=False, static_checks=False) as unaudited:
        result = unaudited.evaluate(problem, example("relu_triton.py"))
    assert result.status is Status.RUNTIME_ERROR and result.stage is Stage.REFERENCE
    assert "reference bug" in result.feedback


def test_judge_death_is_survived(evaluator, tmp_path, relu):
    problem = _problem_with_forward(tmp_path / "kills_judge.py", "os._exit(3)")
    result = evaluator.evaluate(problem, example("relu_triton.py"))
    assert result.status is Status.UNSUPPORTED and result.stage is Stage.REFERENCE
    assert "died" in result.feedback
    assert evaluator.evaluate(relu, example("relu_triton.py")).status is Status.CORRECT


def test_an_audit_the_judge_did_not_finish_is_not_remembered(evaluator, tmp_path):
    """A judge that died (or a GPU out of memory while a trainer shares it) says nothing about the problem:
    the next evaluation audits again instead of refusing the problem for the evaluator's lifetime."""
    marker = tmp_path / "judge_died_once"
    problem = _problem_with_forward(
        tmp_path / "dies_once.py",
        f"if not os.path.exists({str(marker)!r}):\n            open({str(marker)!r}, 'w').close()\n"
        "            os._exit(3)\n        return torch.relu(x)")
    first = evaluator.evaluate(problem, example("relu_triton.py"))
    assert first.status is Status.UNSUPPORTED and "died" in first.feedback and marker.exists()
    assert evaluator.evaluate(problem, example("relu_triton.py")).status is Status.CORRECT


def test_trials_cover_check_and_sweep_sets(evaluator, relu):
    result = evaluator.evaluate(relu, example("relu_triton.py"))
    assert result.correctness.input_sets == ["check", "sweep_odd"]  # bench only on a GPU
    assert result.correctness.trials_run == 3


def test_kernel_hard_coded_for_one_shape_fails_on_the_sweep(evaluator, relu):
    hard_coded = example("relu_triton.py").replace("n = x.numel()", "n = 16 * 256  # the check set's size")
    result = evaluator.evaluate(relu, hard_coded)
    assert result.status is Status.WRONG_OUTPUT
    assert result.correctness.mismatch.input_set == "sweep_odd" and result.correctness.trials_passed == 1


def test_input_sets_can_be_chosen_and_unknown_ones_are_refused(cpu_evaluator, relu):
    with cpu_evaluator.with_verdict(input_sets=("check",), trials=2) as ev:
        result = ev.evaluate(relu, example("relu_triton.py"))
        assert result.status is Status.CORRECT and result.correctness.input_sets == ["check"]
    with cpu_evaluator.with_verdict(input_sets=("huge",)) as ev:
        result = ev.evaluate(relu, example("relu_triton.py"))
        assert result.stage is Stage.REFERENCE and "no input set(s) ['huge']" in result.feedback


def test_result_json_round_trip(evaluator, suite):
    result = evaluator.evaluate(suite.get("level1/1_row_softmax"), example("softmax_off_by_one.py"))
    again = EvalResult.from_json(result.to_json())
    assert again == result
    assert again.correctness.mismatch.first_index == result.correctness.mismatch.first_index


def test_same_evaluator_still_judges_correctly_after_failures(evaluator, relu):
    result = evaluator.evaluate(relu, example("relu_triton.py"))
    assert result.status is Status.CORRECT, result.feedback


def _relu_problem(path, draw: str):
    path.write_text(
        "import os\nimport random\nimport torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x)\n"
        f"def get_inputs():\n    return [{draw}]\ndef get_init_inputs():\n    return []\n"
    )
    return load_problem(path)


# Looks, at import, for what would let it precompute answers: the request (it holds the input seeds) and the
# judge's input files. Both are gone before any candidate code runs.
SNOOPS_FOR_INPUTS = c.relu_candidate(module_extra='''
_found = [p for p in ("../request.json",) if os.path.exists(p)] + [
    f for f in (os.listdir("../in") if os.path.isdir("../in") else [])]
if _found:
    raise RuntimeError(f"LEAK: {_found}")
''')


def test_inputs_are_drawn_in_the_sandbox_and_nothing_to_snoop_is_left(evaluator, tmp_path, relu):
    result = evaluator.evaluate(relu, SNOOPS_FOR_INPUTS)
    assert result.status is Status.CORRECT, result.feedback
    # unseeded randomness: the judge finds the draw irreproducible and sends files, deleted before the import
    unseeded = _relu_problem(tmp_path / "unseeded.py", "torch.randn(64, 32) + random.random()")
    result = evaluator.evaluate(unseeded, SNOOPS_FOR_INPUTS)
    assert result.status is Status.CORRECT, result.feedback
    assert evaluator.evaluate(unseeded, c.MUTATES_INPUT).correctness.mismatch.reason == "input_mutated"


def test_inputs_the_sandbox_cannot_reproduce_are_a_problem_error(evaluator, tmp_path):
    # reproducible inside the judge's process, different in the sandbox's: the candidate is not blamed
    problem = _relu_problem(tmp_path / "pid.py", "torch.randn(64, 32) + os.getpid() % 100003 * 1e-6")
    result = evaluator.evaluate(problem, example("relu_triton.py"))
    assert result.status is Status.RUNTIME_ERROR and result.stage is Stage.REFERENCE, result.message
    assert "differ from the judge's" in result.feedback


def test_settings_reject_an_unknown_timing_mode():
    with pytest.raises(ValueError, match="timing_mode"):
        VerdictSettings(timing_mode="wallclock")


def test_evaluate_many_takes_code_completions_and_prose_and_keeps_input_order(evaluator, relu):
    """One call for whatever a policy or a user hands in: plain code, a fenced completion, prose without code,
    a completion whose block has no ModelNew. Verdicts come back in input order (`ordered=True`); the format
    errors need no sandbox (no phases, no isolation path)."""
    from kernelrl import Candidate, Scorer

    code = example("relu_triton.py")
    items = [
        (relu, "Here is my answer:\n```python\n" + code + "```\nIt uses one Triton kernel."),
        (relu, "I could not write the kernel, sorry."),
        (relu, code),
        (relu, c.WRONG_SHAPE),
        (relu, "```python\nprint('no model here')\n```"),
        (relu, Candidate.from_text(code, "code")),
    ]
    assert isinstance(evaluator, Scorer)
    results = list(evaluator.evaluate_many(items, ordered=True))
    assert [r.status for r in results] == [Status.CORRECT, Status.FORMAT_ERROR, Status.CORRECT,
                                           Status.WRONG_OUTPUT, Status.FORMAT_ERROR, Status.CORRECT]
    for fmt in (results[1], results[4]):
        assert fmt.stage is Stage.EXTRACT and fmt.phases_s == {} and "ModelNew" in fmt.feedback
    # the fenced completion was evaluated as the code inside it
    assert results[0].candidate_sha256 == results[2].candidate_sha256
    # evaluate_indexed pairs each verdict with its position in the call's input (completion order)
    indexed = sorted(evaluator.evaluate_indexed(items[:3]))
    assert [i for i, _ in indexed] == [0, 1, 2] and indexed[1].result.status is Status.FORMAT_ERROR
    # kind='code' reads every string as a module: the prose is then a syntax error, not a format error
    as_code = list(evaluator.evaluate_many(items[1:2], kind="code", ordered=True))
    assert as_code[0].status is Status.COMPILE_ERROR


def test_candidate_from_text_is_the_one_extraction_path():
    from kernelrl import Candidate

    code = "class ModelNew:\n    pass\n"
    assert Candidate.from_text(code) == Candidate(text=code, code=code)
    fenced = Candidate.from_text("text\n```python\n" + code + "```\n")
    assert fenced.from_completion and fenced.code == code
    prose = Candidate.from_text("no code, sorry")
    assert prose.from_completion and prose.code is None and "no code block" in prose.error
    broken = Candidate.from_text("class ModelNew(:\n    pass\n")  # a syntax error stays code to report
    assert broken.code is not None
    with pytest.raises(ValueError, match="kind must be one of"):
        Candidate.from_text(code, "python")
