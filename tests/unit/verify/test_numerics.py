"""The tolerance model (kernelrl.verify.tolerance): an honest kernel is not failed for disagreeing with the
fp32 reference's own rounding, a wrong kernel stays wrong_output, the result says which model judged it, and a
marginal wrong_output is not kept in the result cache."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

import kernelrl
from kernelrl import EvalResult, Evaluator, Stage, Status, VerdictSettings, load_problem
from kernelrl.cache import result_cacheable
from kernelrl.results import CorrectnessReport, Mismatch
from kernelrl.sandbox import judge_wire as p
from kernelrl.verify.compare import compare_outputs, compare_sampled, compare_timed, sample_positions, widen
from kernelrl.verify.exact import FloatReferences, double_model, reference_errors
from kernelrl.verify.tolerance import MARGINAL_FACTOR, REFERENCE_ERROR_K, is_marginal, tolerance_model

SOLUTIONS = Path(kernelrl.__file__).parent / "problems" / "suites" / "builtin" / "solutions"
MATVEC = (SOLUTIONS / "level1" / "6_matvec.py").read_text()


class _MatVec(torch.nn.Module):
    def forward(self, a, x):
        return a @ x


# -- comparisons ---------------------------------------------------------------------------------------------
def test_element_within_k_times_the_reference_error_passes_and_beyond_it_fails():
    exact = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    ref = torch.tensor([1e-3, 1.0, 2.0])  # the reference's own error on element 0: 1e-3, far above atol
    err = (exact - ref.double()).float()
    inside = torch.tensor([2e-3, 1.0, 2.0])  # 2e-3 from exact: within 1e-4 + 3 x 1e-3
    outside = torch.tensor([-4e-3, 1.0, 2.0])  # 4e-3 from exact: beyond it
    assert compare_outputs([ref], [inside], 1e-4, 1e-4)["reason"] == "values"  # allclose alone fails it
    assert compare_outputs([ref], [inside], 1e-4, 1e-4, [err], REFERENCE_ERROR_K) is None
    found = compare_outputs([ref], [outside], 1e-4, 1e-4, [err], REFERENCE_ERROR_K)
    assert found["mismatched"] == 1 and found["first_index"] == [0] and "float64" in found["detail"]
    assert found["reference_error"] == pytest.approx(1e-3)
    # the worst element's error over its allowance: the smaller of the two models' ratios
    assert found["tolerance_ratio"] == pytest.approx(min(5e-3 / 1e-4, 4e-3 / (1e-4 + 3e-3)), rel=1e-3)
    assert compare_outputs([ref], [inside], 1e-4, 1e-4, [err], 0.0) is not None  # k = 0: allclose only
    # an element allclose passes always passes (the model only widens)
    assert compare_outputs([ref], [ref + 5e-5], 1e-4, 1e-4, [torch.zeros(3)], REFERENCE_ERROR_K) is None


def test_nonfinite_reference_error_gives_no_allowance_and_exact_outputs_have_no_ratio():
    ref, cand = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 50.0])
    found = compare_outputs([ref], [cand], 1e-4, 1e-4, [torch.tensor([0.0, float("nan")])], REFERENCE_ERROR_K)
    assert found is not None and found["mismatched"] == 1
    ints = compare_outputs([torch.tensor([1, 2])], [torch.tensor([1, 3])], 0.0, 0.0)
    assert ints["tolerance_ratio"] is None and not is_marginal(ints["reason"], ints["tolerance_ratio"])


def test_sampled_timed_output_uses_the_sampled_reference_error():
    ref = torch.zeros(3000)
    err = torch.full((3000,), 1e-3)  # the exact answer is 1e-3 everywhere
    seed = 7
    values = torch.full((sample_positions(3000, seed, "cpu").numel(),), 2e-3)
    assert compare_sampled(ref, [3000], "float32", seed, values, 1e-4, 1e-4)["reason"] == "values"
    assert compare_sampled(ref, [3000], "float32", seed, values, 1e-4, 1e-4, err, REFERENCE_ERROR_K) is None


def test_timed_call_outputs_sampled_or_whole_are_judged_under_the_model():
    refs = [torch.zeros(3000), torch.zeros(4)]
    seed = 7
    sampled = torch.full((sample_positions(3000, seed, "cpu").numel(),), 2e-3)
    metas = [{"dtype": "float32", "shape": [3000], "sampled": sampled.numel(), "sample_seed": seed},
             {"dtype": "float32", "shape": [4]}]
    outputs = [sampled, torch.full((4,), 2e-3)]

    def read(n, meta, ref):
        return outputs[n]

    calls = []

    def errors_of():  # the exact answer is 1e-3 everywhere
        calls.append(1)
        return [torch.full((3000,), 1e-3), torch.full((4,), 1e-3)], None

    assert compare_timed(refs, metas, read, 1e-4, 1e-4, errors_of, REFERENCE_ERROR_K) == (None, True)
    found, widened = compare_timed(refs, metas, read, 1e-4, 1e-4, errors_of, 0.0)
    assert found["reason"] == "values" and found["output_index"] == 0 and widened is None
    outputs[1] = torch.full((4,), 1.0)
    found, _ = compare_timed(refs, metas, read, 1e-4, 1e-4, errors_of, REFERENCE_ERROR_K)
    assert found["output_index"] == 1 and found["tolerance_ratio"] > MARGINAL_FACTOR
    assert compare_timed(refs, metas[:1], read, 1e-4, 1e-4, errors_of, 3.0)[0]["reason"] == "count"


def test_long_matvec_honest_blocked_sum_fails_allclose_but_passes_the_model():
    """What the H100 saw, on this CPU: a 24,576-term fp32 matrix-vector product summed in another
    (Triton-like, blocked) order differs from torch's fp32 answer beyond atol at some element, and is no
    further from the float64 answer than the reference is."""
    generator = torch.Generator().manual_seed(0)
    a, x = torch.randn(2048, 24576, generator=generator), torch.randn(24576, generator=generator)
    ref = a @ x
    acc = torch.zeros(2048, 512)
    for k0 in range(0, 24576, 512):
        acc += a[:, k0:k0 + 512] * x[k0:k0 + 512]
    blocked = acc.sum(1)
    errors, why = reference_errors(double_model(_MatVec()), [a, x], [ref])
    assert why is None and 0 < float(errors[0].abs().max()) < 1e-2
    assert compare_outputs([ref], [blocked], 1e-4, 1e-4) is not None
    assert compare_outputs([ref], [blocked], 1e-4, 1e-4, errors, REFERENCE_ERROR_K) is None
    # fp16 products: far beyond the reference's own error, and not marginal
    half = (a.half().float() * x.half().float()).sum(1)
    found = compare_outputs([ref], [half], 1e-4, 1e-4, errors, REFERENCE_ERROR_K)
    assert found is not None and found["tolerance_ratio"] > MARGINAL_FACTOR


# -- the float64 reference -----------------------------------------------------------------------------------
def test_float64_reference_falls_back_where_it_cannot_say_anything():
    x = torch.randn(8, 8)

    class CastsInside(torch.nn.Module):  # returns fp32 whatever it gets: no float64 answer
        def forward(self, x):
            return (x * 2).float()

    class NoDouble(torch.nn.Module):
        def forward(self, x):
            if x.dtype == torch.float64:
                raise RuntimeError("not implemented for 'Double'")
            return x

    class BranchesOnDtype(torch.nn.Module):  # computes something else in float64: not rounding
        def forward(self, x):
            return x * (2.0 if x.dtype == torch.float64 else 1.0)

    class Indices(torch.nn.Module):
        def forward(self, x):
            return x.argmax(-1)

    for model, says in ((CastsInside(), "not a float64 tensor"), (NoDouble(), "RuntimeError"),
                        (BranchesOnDtype(), "beyond rounding"), (Indices(), "no fp32/fp16/bf16 output")):
        errors, why = reference_errors(double_model(model), [x], [model(x)])
        assert errors == [None] and says in why, (model, why)
    # fp16 problems: the model's half weights and inputs in float64, the error kept as float32
    linear = torch.nn.Linear(64, 16).half()
    xh = torch.randn(4, 64).half()
    errors, why = reference_errors(double_model(linear), [xh], [linear(xh)])
    assert why is None and errors[0].dtype == torch.float32 and float(errors[0].abs().max()) > 0
    assert linear.weight.dtype == torch.float16  # the reference model itself is untouched


def test_widen_computes_the_float64_reference_only_for_a_value_mismatch():
    calls = []

    def errors_of():
        calls.append(1)
        return [torch.tensor([1e-3])], None

    def check(errors, k):
        if errors is None:
            return {"reason": "values", "detail": "d"}
        return None if k else {"reason": "values", "detail": "d"}

    assert widen(lambda errors, k: None, errors_of, 3.0) == (None, None) and not calls  # passed: nothing more
    assert widen(lambda errors, k: {"reason": "shape", "detail": "s"}, errors_of, 3.0)[0]["reason"] == "shape"
    assert widen(check, errors_of, 0.0)[0] is not None and not calls  # the model off
    assert widen(check, errors_of, 3.0) == (None, True) and calls == [1]
    found, widened = widen(check, lambda: ([None], "TypeError: x"), 3.0)
    assert widened is None and "no float64 reference: TypeError: x" in found["detail"]
    # the judge's per-trial state: the float64 model is made once, the errors once per trial
    model = _MatVec()
    inputs = [torch.randn(4, 6), torch.randn(6)]
    state = {"calls": [(model, [{"tensor": 0}, {"tensor": 1}])] * 2, "inputs": lambda index: inputs,
             "refs": [[inputs[0] @ inputs[1]]] * 2, "errors": {}}
    references = FloatReferences()
    first = references.errors(state, 0)
    assert references.errors(state, 0) is first and set(state["errors"]) == {0}
    references.errors(state, 1)
    assert len(references._models) == 1


# -- what the result says, and the wire ----------------------------------------------------------------------
def test_tolerance_model_names_and_wire_fields_round_trip():
    assert tolerance_model(["float32"], 3.0) == "allclose|float64-reference(k=3)"
    assert tolerance_model(["int64"], 3.0) == tolerance_model(["float32"], 0.0) == "allclose"
    request = {"op": "compare", "eval_id": "e", "trial": 0, "out_dir": "/o", "outputs": [], "atol": 1e-4,
               "rtol": 1e-4, "prefix": None, "changed_inputs": [], "ref_error_k": 3.0}
    assert p.parse_judge_request(request).to_dict() == request
    assert "ref_error_k" not in p.CompareRequest.from_dict({**request, "ref_error_k": None}).to_dict()
    reply = {"ok": True, "mismatch": None, "widened": True}
    assert p.parse_judge_reply("compare", reply).to_dict() == reply
    assert p.CompareReply(mismatch=None).to_dict() == {"ok": True, "mismatch": None}
    result = EvalResult(status=Status.WRONG_OUTPUT, stage=Stage.CORRECTNESS, problem_id="x", message="m",
                        correctness=CorrectnessReport(
                            trials_run=1, trials_passed=0, trials_planned=2, seeds_sha256="s", atol=1e-4,
                            rtol=1e-4, dtype="float32", tolerance_model="allclose|float64-reference(k=3)",
                            trials_within_reference_error=1,
                            mismatch=Mismatch(trial=0, output_index=0, reason="values", detail="d",
                                              tolerance_ratio=2.5, reference_error=1e-4)))
    assert EvalResult.from_json(result.to_json()) == result
    # a result stored before these fields existed still loads
    old = result.to_dict()
    for key in ("tolerance_model", "trials_within_reference_error"):
        del old["correctness"][key]
    for key in ("tolerance_ratio", "reference_error"):
        del old["correctness"]["mismatch"][key]
    assert EvalResult.from_dict(old).correctness.tolerance_model == "allclose"


def test_marginal_wrong_output_is_not_cacheable():
    def wrong(reason: str, ratio: float | None) -> EvalResult:
        mismatch = Mismatch(trial=0, output_index=0, reason=reason, detail="d", tolerance_ratio=ratio)
        return EvalResult(status=Status.WRONG_OUTPUT, stage=Stage.CORRECTNESS, problem_id="x", message="m",
                          correctness=CorrectnessReport(trials_run=1, trials_passed=0, trials_planned=1,
                                                        seeds_sha256="s", atol=1e-4, rtol=1e-4,
                                                        dtype="float32", mismatch=mismatch))

    assert not result_cacheable(wrong("values", 1.2))  # the H100 case: 1.2e-4 off at 1e-4
    assert not result_cacheable(wrong("values", MARGINAL_FACTOR))
    assert result_cacheable(wrong("values", MARGINAL_FACTOR * 1.01))
    assert result_cacheable(wrong("values", None))  # an exact comparison
    assert result_cacheable(wrong("shape", None)) and result_cacheable(wrong("input_mutated", None))


# -- end to end (CPU, Triton interpreter) --------------------------------------------------------------------
NAIVE_VARIANCE = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        # E[x^2] - E[x]^2 over rows with mean 100: the fp32 reference loses digits to cancellation (~1e-3 off)
        def forward(self, x):
            return (x * x).mean(-1) - x.mean(-1) ** 2

    def get_input_sets():
        return {"bench": dict(rows=4096, n=256), "check": dict(rows=64, n=256),
                "sweep_odd": dict(rows=33, n=300)}

    def get_inputs(rows=64, n=256):
        return [torch.randn(rows, n) + 100.0]

    def get_init_inputs():
        return []
"""

TWO_PASS_VARIANCE = """
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl

    @triton.jit
    def var_kernel(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr, DDOF: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        mean = tl.sum(x, axis=0) / N
        dev = tl.where(mask, x - mean, 0.0)
        tl.store(y_ptr + row, tl.sum(dev * dev, axis=0) / (N - DDOF))

    class ModelNew(nn.Module):
        def forward(self, x):
            x = x.contiguous()
            rows, n = x.shape
            y = torch.empty(rows, device=x.device, dtype=x.dtype)
            var_kernel[(rows,)](x, y, n, x.stride(0), BLOCK=triton.next_power_of_2(n), DDOF=0)
            return y
"""

WRONG_MATVEC = {  # genuine bugs in the reference solution of level1/6_matvec
    "off_by_one": ("col_mask = cols < K", "col_mask = cols < K - 1"),
    "wrong_reduction": ("tl.sum(acc, axis=1)", "tl.max(acc, axis=1)"),
    "skipped_element": ("mask=row_mask)", "mask=row_mask & (rows != 0))"),
    "fp16_intermediates": ("acc += a * x[None, :]",
                           "acc += (a.to(tl.float16) * x.to(tl.float16)[None, :]).to(tl.float32)"),
}


def _variant(change: tuple[str, str]) -> str:
    assert change[0] in MATVEC
    return MATVEC.replace(*change).replace("torch.empty(M,", "torch.zeros(M,")


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator):
    return cpu_evaluator.with_verdict(VerdictSettings(trials=3))


def test_accurate_kernel_against_an_inexact_reference_is_correct_and_says_why(evaluator, tmp_path):
    path = tmp_path / "naive_variance.py"
    path.write_text(textwrap.dedent(NAIVE_VARIANCE))
    problem = load_problem(path)
    two_pass = textwrap.dedent(TWO_PASS_VARIANCE)
    # the honest kernel and the same kernel dividing by n - 1 (0.4% off), in one batch
    result, unbiased = evaluator.evaluate_many([(problem, two_pass),
                                                (problem, two_pass.replace("DDOF=0", "DDOF=1"))],
                                               kind="code", ordered=True)
    assert result.status is Status.CORRECT, result.feedback
    assert result.correctness.tolerance_model == "allclose|float64-reference(k=3)"
    assert result.correctness.trials_within_reference_error == 3  # allclose alone fails every trial
    with evaluator.with_verdict(reference_error_k=0) as allclose:
        before = allclose.evaluate(problem, two_pass)
    assert before.status is Status.WRONG_OUTPUT and before.correctness.tolerance_model == "allclose"
    # dividing by n - 1 is still caught where the reference happens to round well
    assert unbiased.status is Status.WRONG_OUTPUT and unbiased.correctness.mismatch.reference_error > 0


@pytest.mark.parametrize("bug", sorted(WRONG_MATVEC))
def test_genuinely_wrong_matvec_stays_wrong_output(evaluator, suite, bug):
    result = evaluator.evaluate(suite.get("level1/6_matvec"), _variant(WRONG_MATVEC[bug]))
    assert result.status is Status.WRONG_OUTPUT, (bug, result.message)
    mismatch = result.correctness.mismatch
    assert mismatch.reference_error is not None  # judged under the model, and still wrong
    assert mismatch.tolerance_ratio > MARGINAL_FACTOR and result_cacheable(result)


def test_marginal_wrong_output_is_evaluated_again_and_a_clear_one_is_cached(tmp_path, suite, monkeypatch):
    monkeypatch.delenv("KERNELRL_RESULT_CACHE", raising=False)
    matvec = suite.get("level1/6_matvec")
    scaled = _variant(("tl.sum(acc, axis=1)", "tl.sum(acc, axis=1) * 1.001"))  # 0.1% off: 1-10x the tolerance
    clear = _variant(WRONG_MATVEC["off_by_one"])
    # its own evaluator: the result cache on, in a directory of its own (evaluator settings)
    with Evaluator(device="cpu", trials=2, cache_dir=tmp_path) as ev:
        first, again = ev.evaluate(matvec, scaled), ev.evaluate(matvec, scaled)
        assert first.status is again.status is Status.WRONG_OUTPUT
        assert 1 < first.correctness.mismatch.tolerance_ratio <= MARGINAL_FACTOR
        assert not first.cached and not again.cached
        assert ev.evaluate(matvec, clear).status is Status.WRONG_OUTPUT
        assert ev.evaluate(matvec, clear).cached
        stats = ev.cache_stats()["results"]
    assert stats.stores == 1


def test_audit_judges_trivial_answers_under_the_same_model():
    """The audit's degenerate-answer checks use the candidate's comparison: where the reference's own error
    covers an all-zeros answer, zeros pass (zeros_pass), and only under the model."""
    from kernelrl.verify.degeneracy import output_flags

    def run(inputs):
        return [inputs[0] * 1e-3 + 5e-4]  # tiny outputs, but beyond atol: allclose fails zeros

    def fresh(seed):
        return [torch.rand(16, generator=torch.Generator().manual_seed(seed))]

    def errors_of(inputs, outputs):  # as if the exact answer were 0: the reference is all error
        return [-outputs[0]]

    assert output_flags(run, fresh, 1e-4, 1e-4) == []
    assert output_flags(run, fresh, 1e-4, 1e-4, errors_of=errors_of, k=0.0) == []
    flags = {flag for flag, _ in output_flags(run, fresh, 1e-4, 1e-4, errors_of=errors_of,
                                              k=REFERENCE_ERROR_K)}
    assert "zeros_pass" in flags
    # the judge's float64 errors for the audit's inputs: computed once per model, Nones when it cannot
    references = FloatReferences()
    a, x = torch.randn(4, 6), torch.randn(6)
    model = _MatVec()
    assert references.of(model, [a, x], [a @ x])[0].shape == (4,)
    assert references.of(model, [a], [a]) == [None]


# -- rt-low-precision (kernelrl.verify.precision) ------------------------------------------------------------
def _matvec_case(seed: int = 0, k: int = 8192):
    gen = torch.Generator().manual_seed(seed)
    a, x = torch.randn(64, k, generator=gen), torch.randn(k, generator=gen)
    ref = a @ x
    exact = a.double() @ x.double()
    return a, x, ref, exact - ref.double()


def test_low_precision_flags_half_precision_products_and_not_fp32_in_another_order():
    from kernelrl.verify.precision import low_precision

    a, x, ref, err = _matvec_case()
    # fp32 in another summation order (blocks of 512 accumulated
    # in fp32, as the Triton solutions do): not flagged
    blocked = sum((a[:, i:i + 512] @ x[i:i + 512] for i in range(0, a.shape[1], 512)), torch.zeros(64))
    assert low_precision([ref], [blocked], [err]) is None
    assert low_precision([ref], [ref.clone()], [err]) is None
    # fp16 and bf16 operands, fp32 accumulation: flagged, with both errors relative to the largest value
    for half in (torch.float16, torch.bfloat16):
        rounded = a.to(half).float() @ x.to(half).float()
        found = low_precision([ref], [rounded], [err])
        assert found is not None and found["output_index"] == 0, half
        assert found["candidate_error"] > 100 * found["reference_error"]
    # the second output is the rounded one; integer outputs, outputs without a float64 answer are not judged
    rounded = a.half().float() @ x.half().float()
    ints = torch.arange(4)
    assert low_precision([ints, ref], [ints, rounded], [None, err])["output_index"] == 1
    assert low_precision([ref], [rounded], [None]) is None


def test_low_precision_floor_and_the_references_own_error():
    from kernelrl.verify.precision import PRECISION_FLOOR, low_precision

    # an exactly rounded reference (error 0): an fp32 kernel one rounding away stays under the floor
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(1))
    ref = torch.sigmoid(x)
    exact = torch.sigmoid(x.double())
    one_ulp = torch.nextafter(ref, torch.full_like(ref, 2.0))
    assert low_precision([ref], [one_ulp], [exact - ref.double()]) is None
    assert low_precision([ref], [ref + 2 * PRECISION_FLOOR], [torch.zeros_like(exact)]) is not None
    # a reference that itself computes at TF32-like precision
    # (error ~2^-11): a kernel 8x further is not flagged
    coarse = ref.double() + torch.randn(10_000, dtype=torch.float64) * 2.0 ** -12
    noisy_err = coarse - ref.double()
    assert low_precision([ref], [(ref.double() + 8 * noisy_err).float()], [noisy_err]) is None
    # non-finite elements are left out of the scale and the errors
    ref_inf = torch.cat([ref, torch.tensor([float("inf")])])
    err_inf = torch.cat([exact - ref.double(), torch.tensor([0.0], dtype=torch.float64)])
    assert low_precision([ref_inf], [ref_inf.clone()], [err_inf]) is None
