"""The call-resolution pass of the static rules (kernelrl.candidates.resolve): every call reachable
from forward resolves to a known-safe target or is a finding that says how to write it instead. Honest code,
the unusual forms included (kernel tables, bound launchers, kernels passed to helpers or held by helper
classes, factories returning launchers, loops over literal stages), resolves without a single finding; host
reads and string-named methods are rejected; what cannot be traced is a warning that leaves the verdict
alone."""

from __future__ import annotations

from pathlib import Path

import corpus
import pytest

import kernelrl
from kernelrl.candidates.rules import RULES_BY_ID, RuleContext, analyze_rules

PACKAGE = Path(kernelrl.__file__).parent
RESOLUTION_RULES = ("host-read", "dynamic-attribute", "unresolved-call", "unknown-call")
HONEST = [c for c in corpus.all_cases() if c.cls.prefix == "h"]
# the suite's reference solutions and the examples that are meant to be right
REFERENCES = sorted((PACKAGE / "problems" / "suites" / "builtin" / "solutions").rglob("*.py")) + [
    PACKAGE / "examples" / name for name in ("relu_triton.py", "softmax_triton.py", "scale_shift_triton.py",
                                             "relu_cuda.py")]


def _resolution(source: str, policy: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    return [(f.rule, f.policy, f.detail) for f in analyze_rules(source, policy) if f.rule in RESOLUTION_RULES]


def test_the_rules_and_their_policies():
    policies = {rule: RULES_BY_ID[rule].policy for rule in RESOLUTION_RULES}
    assert policies == {"host-read": "reject", "dynamic-attribute": "reject", "unresolved-call": "warn",
                        "unknown-call": "warn"}
    assert "launch the kernel directly" in RULES_BY_ID["unresolved-call"].message


@pytest.mark.parametrize("case", HONEST, ids=[c.name for c in HONEST])
def test_honest_corpus_resolves_without_findings(case):
    assert _resolution(case.source()) == []


@pytest.mark.parametrize("path", REFERENCES, ids=[str(p.relative_to(PACKAGE)) for p in REFERENCES])
def test_reference_solutions_resolve_without_findings(path):
    assert _resolution(path.read_text()) == []


def test_the_reference_set_is_the_whole_suite():
    assert len(REFERENCES) >= 72 + 4


# -- launches only tracing shows -----------------------------------------------------------------------------

FACTORY = corpus.case("exploits/h44_cubic_launcher_factory.py").source()


def test_a_factory_returned_launcher_counts_as_a_launch():
    assert RuleContext.of(FACTORY).launched == {"cubic_kernel"}
    never_called = FACTORY.replace("        launch(x, y, n, *self.coefficients, BLOCK=1024)\n", "")
    assert never_called != FACTORY
    assert RuleContext.of(never_called).launched == set()
    assert "no-custom-kernel" in {f.rule for f in analyze_rules(never_called) if f.policy == "reject"}


def test_a_kernel_argument_is_traced_through_every_call_site():
    source = corpus.case("exploits/h42_leaky_relu_kernel_argument_to_helper.py").source()
    assert _resolution(source) == []
    # a second caller passes something that is no kernel: the helper's launch can no longer be verified
    other = source.replace("class ModelNew",
                           "def other(x):\n    return _elementwise(x.view, x)\n\n\nclass ModelNew")
    assert other != source
    found = _resolution(other)
    assert found and {(rule, policy) for rule, policy, _ in found} == {("unresolved-call", "warn")}, found
    # a helper also used as a value has callers the module
    # does not show (run = _elementwise; run(x.clamp_, x))
    hidden = source.replace("class ModelNew", "def other(x):\n    run = _elementwise\n"
                                              "    return run(x.clamp_, x)\n"
                                              "\n\nclass ModelNew")
    assert hidden != source
    assert "unresolved-call" in {rule for rule, _, _ in _resolution(hidden)}


# -- rejections and warnings, with what they say -------------------------------------------------------------

@pytest.mark.parametrize("name, rule", [
    ("exploits/x48_numpy_host_math_in_helper.py", "host-read"),
    ("exploits/x49_operator_methodcaller.py", "dynamic-attribute"),
    ("exploits/x50_getattr_name_from_table.py", "dynamic-attribute"),
    ("exploits_runtime/c03_tolist_math.py", "host-read"),
    ("exploits_runtime/c04_apply_callback.py", "host-read"),
    ("exploits_runtime/c07_pre_run_hook.py", "dynamic-attribute"),  # in a hook: reached as launch-time code
    ("exploits_runtime/c08_getattr_built_name.py", "dynamic-attribute"),
])
def test_host_reads_and_string_named_methods_are_rejected(name, rule):
    rejected = {f.rule for f in analyze_rules(corpus.case(name).source()) if f.policy == "reject"}
    assert rule in rejected, rejected


@pytest.mark.parametrize("name, detail", [
    ("exploits_runtime/c01_builtins_over_rows.py", "float(...) over values that may be tensors"),
    ("exploits_runtime/c02_numpy_round_trip.py", "(numpy.fmax) over values that may be tensors"),
    ("exploits_runtime/c05_scatter_reduce.py",
     ".scatter_reduce_(...) is no known allocation, view or metadata"),
])
def test_what_the_allow_list_does_not_know_is_a_warning(name, detail):
    found = _resolution(corpus.case(name).source())
    assert ("unknown-call", "warn") in {(rule, policy) for rule, policy, _ in found}, found
    assert any(detail in d for _, _, d in found), found
    assert not [f for f in analyze_rules(corpus.case(name).source()) if f.policy == "reject"]


RELU = (PACKAGE / "examples" / "relu_triton.py").read_text()
LAUNCH = "        relu_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)"


@pytest.mark.parametrize("before, after, expected", [
    # a call through a computed subscript of something that is no literal table
    (LAUNCH, LAUNCH + "\n        self.table()[0](y)", ("unresolved-call", "a subscript")),
    # a builtin that computes on tensors, over forward's input
    (LAUNCH, LAUNCH + "\n        max(x, 0)", ("unknown-call", "max(...) over values that may be tensors")),
    # ... and over host values it is fine
    (LAUNCH, LAUNCH + "\n        max(x.shape[0], 0, n)", None),
    # a library the allow-list does not know
    (LAUNCH, LAUNCH + "\n        json.dumps([n])", ("unknown-call", "json.dumps")),
    # a host read of one element
    (LAUNCH, LAUNCH + "\n        y[0].item()", ("host-read", ".item(...)")),
    # getattr with a constant name is the attribute itself; a built name on self is only unresolved
    (LAUNCH, LAUNCH + '\n        getattr(y, "view")(-1)', None),
    (LAUNCH, LAUNCH + '\n        getattr(self, "f" + "n")(y)', ("unresolved-call", "built at run time")),
])
def test_forms_of_a_call(before, after, expected):
    source = RELU.replace(before, after).replace("import torch\n", "import json\n\nimport torch\n", 1)
    assert after in source
    found = [(rule, detail) for rule, _, detail in _resolution(source)]
    if expected is None:
        assert found == []
    else:
        assert any(rule == expected[0] and expected[1] in detail for rule, detail in found), found


def test_policies_are_overridable_and_warnings_do_not_reject():
    source = corpus.case("exploits/x48_numpy_host_math_in_helper.py").source()
    assert ("host-read", "warn", ".numpy(...)") in _resolution(source, {"host-read": "warn"})
    assert not [f for f in analyze_rules(source, {"host-read": "off"}) if f.policy == "reject"]
