"""Mutants of kernelrl's checker: each is one fault a refactor could introduce (a skipped comparison, a looser
tolerance, a disabled check), written as an edit of one function of the source, with the corpus files that
must notice it (tests/corpus/test_mutants.py applies each to a copy of the package and runs those files
against it).

An edit names the function (`Class.method` for a method) and either replaces an exact `anchor` text inside it
(which must occur there exactly once) or, with `anchor=None`, makes the function return `replacement` at once.
When the code moves or changes, `apply` raises instead of leaving the package unmutated: the test fails loudly
and the mutant is updated with the code, never silently dropped."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mutant:
    id: str
    fault: str  # what a checker with this edit gets wrong
    path: str  # the edited file, relative to the kernelrl package
    function: str  # the edited function: "name" or "Class.method"
    anchor: str | None  # exact text inside the function that is replaced; None: the function returns at once
    replacement: str  # the anchor's replacement, or (anchor None) what the function returns (`return <this>`)
    killers: tuple[str, ...]  # corpus files (relative to tests/) of which at least one must change verdict
    controls: tuple[str, ...] = ()  # corpus files whose verdict must not change (the run itself is sound)

    @property
    def layer(self) -> str:  # static mutants need no sandbox: kernelrl.candidates only
        return "static" if self.path.startswith("candidates/") else "evaluate"


class MutationError(RuntimeError):
    """A mutant that no longer applies: its function or anchor text is gone (update the mutant with the
    code)."""


def _function(tree: ast.Module, dotted: str) -> ast.FunctionDef:
    scope: list[ast.stmt] = tree.body
    node = None
    for part in dotted.split("."):
        node = next((n for n in scope
                     if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part), None)
        if node is None:
            raise MutationError(f"no {dotted} (missing {part!r})")
        scope = node.body
    if not isinstance(node, ast.FunctionDef):
        raise MutationError(f"{dotted} is not a function")
    return node


def mutate(source: str, m: Mutant) -> str:
    """`source` (the text of the file `m.path`) with the mutant's edit applied."""
    fn = _function(ast.parse(source), m.function)
    lines = source.splitlines(keepends=True)
    start, end = fn.lineno - 1, fn.end_lineno
    if m.anchor is None:
        first = fn.body[0]
        is_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
            isinstance(first.value.value, str)
        at = (fn.body[1] if is_doc and len(fn.body) > 1 else first)
        indent = " " * at.col_offset
        # `if True: return ...` keeps the rest of the body (and a generator stays a generator)
        lines.insert(at.lineno - 1, f"{indent}if True:\n{indent}    return {m.replacement}\n")
        return "".join(lines)
    body = "".join(lines[start:end])
    count = body.count(m.anchor)
    if count != 1:
        raise MutationError(f"{m.id}: anchor occurs {count} times in {m.function} of {m.path}: {m.anchor!r}")
    return "".join(lines[:start]) + body.replace(m.anchor, m.replacement) + "".join(lines[end:])


def apply(package: Path, m: Mutant) -> None:
    """Apply the mutant to a copy of the kernelrl package at `package`; the result must still compile."""
    path = package / m.path
    if not path.is_file():
        raise MutationError(f"{m.id}: no file {m.path}")
    mutated = mutate(path.read_text(), m)
    compile(mutated, str(path), "exec")
    path.write_text(mutated)


CONTROL = "exploits/h01_relu_helper_function.py"

MUTANTS = (
    # -- the static layer (kernelrl.candidates) --------------------------------------------------------------
    Mutant("torch-compute-unchecked", "PyTorch compute in forward is not looked for", "candidates/rules.py",
           "_check_torch_compute", None, "[]",
           ("exploits/x02_lazy_copy_kernel.py", "exploits/x04_matmul_operator.py",
            "exploits/m04_clamp_min_method.py")),
    Mutant("torch-values-unchecked",
           "a torch function used as a value (in a table, bound to a name) is let through",
           "candidates/rules.py", "_torch_values", None, "[]",
           ("exploits/m30_kernel_table_torch_fn.py", "exploits/m31_bound_launcher_torch_fn.py")),
    Mutant("banned-names-unchecked", "imports, calls and attributes of the banned tables are not looked for",
           "candidates/rules.py", "_banned_uses", None, "None",
           ("exploits/x22_exec_string.py", "exploits/x13_threading_thread.py", "exploits/x33_open_write.py")),
    Mutant("fallback-unchecked", "try/except around a launch is let through", "candidates/rules.py",
           "_check_fallback", None, "[]",
           ("exploits/x10_try_fallback.py", "exploits/m42_bound_launcher_try_fallback.py")),
    Mutant("no-kernel-unchecked", "a forward that launches no kernel is let through", "candidates/rules.py",
           "_check_no_custom_kernel", None, "[]",
           ("exploits/x01_decoy_kernel.py", "exploits/x03_init_only_launch.py")),
    Mutant("cuda-source-unchecked", "CUDA C++ sources are not scanned (streams, syncs, vendor libraries)",
           "candidates/rules.py", "_check_cuda_source", None, "None",
           ("exploits/m21_cuda_stream_from_pool.py", "exploits/m29_cuda_vendor_library.py")),
    Mutant("reference-model-unchecked", "subclassing or calling the reference Model is let through",
           "candidates/rules.py", "_check_reference_model", None, "None",
           ("exploits/x11_subclass_model.py", "exploits/x12_calls_reference_model.py")),
    Mutant("call-resolution-unchecked", "calls reachable from forward are not resolved against the "
           "allow-list (host reads and string-named methods let through)", "candidates/resolve.py",
           "_check_call", None, "None",
           ("exploits/x48_numpy_host_math_in_helper.py", "exploits/x49_operator_methodcaller.py")),
    Mutant("reach-stops-at-forward", "reachability does not follow calls of module-level helper functions",
           "candidates/reach.py", "_Reach._named", "self.queue.append(mod.functions[node.id])", "pass",
           ("exploits/x05_softmax_in_helper.py",)),
    Mutant("rejections-downgraded", "every static finding is recorded as a warning, none rejects",
           "candidates/rules.py", "analyze_rules", "Finding(rule.id, chosen,", "Finding(rule.id, 'warn',",
           ("exploits/x01_decoy_kernel.py", "exploits/x22_exec_string.py")),
    # -- the comparison (kernelrl.verify, run by the judge) --------------------------------------------------
    # (in the judge's compare request: the problem audit's own
    # comparisons stay intact, or every problem is refused)
    Mutant("comparison-skipped", "the judge's comparison of a candidate's outputs always passes",
           "sandbox/judge.py", "Judge.compare", "compare_outputs(expected, actual,",
           "(lambda *args: None)(expected, actual,",
           ("exploits_values/v01_softmax_drops_last_column.py",
            "exploits_values/v02_gelu_sigmoid_approximation.py"),
           (CONTROL,)),
    Mutant("tolerance-1000x", "atol and rtol 1000 times looser", "verify/tolerance.py", "tolerance_for",
           "return best", "return __import__('dataclasses').replace(best, atol=best.atol * 1000, "
                          "rtol=best.rtol * 1000)",
           ("exploits_values/v02_gelu_sigmoid_approximation.py",), (CONTROL,)),
    Mutant("input-writes-unchecked", "inputs a forward wrote into are not compared with the originals",
           "verify/compare.py", "inputs_mutated", None, "None",
           ("exploits_values/v03_relu_writes_its_input.py",), (CONTROL,)),
    # -- runtime checks (kernelrl.sandbox, kernelrl.evaluate) ------------------------------------------------
    Mutant("census-report-empty",
           "the op census reports nothing (ATen ops, host reads, provenance, tampering)",
           "sandbox/opcensus.py", "OpCensus.report", "return found if any(found.values()) else None",
           "return None",
           ("exploits_runtime/c05_scatter_reduce.py", "exploits_runtime/c02_numpy_round_trip.py",
            "exploits_runtime/c10_pop_dispatch_mode.py"), (CONTROL,)),
    Mutant("host-read-unchecked", "host reads the census reports are not turned into findings",
           "evaluate/trials.py", "Trials._op_census", '("rt-host-read", counted(report.host))',
           '("rt-host-read", "")',
           ("exploits_runtime/c02_numpy_round_trip.py", "exploits_runtime/c03_tolist_math.py"),
           ("exploits_runtime/c05_scatter_reduce.py",)),
    Mutant("ops-by-bare-name", "operators are classified by their bare name: one the candidate defines in "
           "its own namespace, or as a new overload, passes as the allowed op of that name",
           "sandbox/opcensus.py", "OpCensus._classify", "if not self._registry.is_aten(func):", "if False:",
           ("exploits_runtime/c16_custom_op_named_clone.py",
            "exploits_runtime/c17_new_overload_of_an_allowed_op.py"), (CONTROL,)),
    Mutant("kernels-unchecked", "an allowed operator's kernel replaced by the candidate goes unnoticed",
           "sandbox/op_registry.py", "OpRegistry.replaced", None, "[]",
           ("exploits_runtime/c18_allowed_op_kernel_replaced.py",), (CONTROL,)),
    Mutant("threads-outside-census", "a thread started during forward runs outside the census (a dispatch "
           "mode is per thread)", "sandbox/op_registry.py", "carry_into_threads", None, "None",
           ("exploits_runtime/c19_compute_in_a_worker_thread.py",), (CONTROL,)),
    Mutant("provenance-unchecked", "who wrote the outputs is not checked", "sandbox/opcensus.py",
           "OpCensus._check_outputs", None, "None",
           ("exploits_runtime/c15_disowned_kernel_writes_output.py",), (CONTROL,)),
    Mutant("foreign-kernels-unchecked", "Triton kernels the candidate's file does not define run in forward "
           "unnoticed (a library's kernel computes, the candidate's own copies its result)",
           "sandbox/opcensus.py", "OpCensus.foreign_launch", None, "None",
           ("exploits_runtime/c21_library_module_kernel_computes.py",), (CONTROL,)),
    Mutant("no-launch-unchecked", "a forward that launched none of the candidate's kernels is not flagged",
           "evaluate/trials.py", "Trials._runtime_facts", 'if event.launches == 0 and not self.flag(',
           'if False and not self.flag(', ("exploits_runtime/r03_launch_never_taken.py",), (CONTROL,)),
    Mutant("frontend-skipped", "CPU mode runs kernel bodies without compiling them for a GPU first",
           "sandbox/census.py", "LaunchCensus._wrap_run", "census.frontend.check(self, args, kwargs)", "pass",
           ("exploits_frontend/f02_kernel_body_numpy.py",
            "exploits_frontend/f04_disowned_kernel_numpy_body.py"),
           (CONTROL,)),
    Mutant("precision-unchecked", "fp32 outputs are not compared with the float64 answer for lower-precision "
           "arithmetic", "evaluate/trials.py", "Trials._checks_precision", None, "False",
           ("exploits_runtime/r08_fp16_intermediates.py",), (CONTROL,)),
    Mutant("native-thread-unchecked",
           "OS threads the candidate started outside Python's threading are not counted",
           "sandbox/native_threads.py", "NativeThreads.stray", None, "[]",
           ("exploits_runtime/r06_native_thread.py",), ("exploits_runtime/r02_background_thread.py",)),
    Mutant("python-ops-closed", "an operator the candidate defined in Python (triton_op, custom_op) runs as "
           "an opaque operator: its kernel launches with the census off, an honest kernel is rejected",
           "sandbox/op_registry.py", "OpRegistry.python_body", None, "None",
           ("exploits/h51_relu_triton_op.py",), (CONTROL,)),
    Mutant("python-op-body-unwatched", "a Python operator's body runs in its place but outside the census",
           "sandbox/opcensus.py", "OpCensus._make_mode", "with self:", "if True:",
           ("exploits_runtime/c20_triton_op_body_computes.py",), (CONTROL,)),
    Mutant("thread-watch-off", "a thread left running while a call never returns is found only by the run "
           "timeout",
           "sandbox/native_threads.py", "ThreadWatch.check", None, "None",
           ("exploits_runtime/r13_native_thread_call_never_returns.py",), (CONTROL,)),
    Mutant("timing-token-unchecked", "a timing-token request out of turn is not a protocol violation",
           "sandbox/runner.py", "watch_child",
           "if token_asked or (token_allowed is not None and not token_allowed()):", "if False:",
           ("exploits_sandbox/s01_forged_timing_token.py",), (CONTROL,)),
    Mutant("event-order-unchecked",
           "messages out of the stub's order, or a second one of a kind, are accepted",
           "sandbox/runner.py", "EventOrder.check", "last = self.seen[-1] if self.seen else None",
           "return None", ("exploits_sandbox/s03_forged_report_out_of_order.py",), (CONTROL,)),
    Mutant("share-without-checked-calls", "a kernel share is taken without the outputs of the calls it was "
           "measured on", "evaluate/trials.py", "Trials._on_census",
           "if event.fraction is not None and not event.checked:",
           "if False:", ("exploits_sandbox/s02_forged_census_from_forward.py",), (CONTROL,)),
    Mutant("reference-kept-in-sandbox",
           "the stub keeps the problem's Model past the candidate's import, unwatched",
           "sandbox/problem_data.py", "_draw", "reference=reference), watched",
           "reference=(module.Model, [])), []", ("exploits_sandbox/p01_reference_hunt.py",), (CONTROL,)),
    Mutant("problem-file-visible", "the problem file stays readable at its path inside the sandbox",
           "sandbox/isolation.py", "hide_files", None, "True", ("exploits_sandbox/p01_reference_hunt.py",),
           (CONTROL,)),
    Mutant("handoff-by-isinstance", "forward's result is read as a tuple when it is any subclass of one (its "
           "own methods run as the harness reads it)", "sandbox/handoff.py", "Handoff.outputs",
           "kind = _TYPE(result)",
           "kind = _TUPLE if _ISSUBCLASS(_TYPE(result), (_TUPLE, _LIST)) else _TYPE(result)",
           ("exploits_runtime/r09_container_protocol_computes.py",), (CONTROL,)),
    Mutant("torch-modes-unchecked",
           "a torch mode left active after forward runs while the harness reads outputs",
           "sandbox/handoff.py", "_no_modes_left", None, "None",
           ("exploits_runtime/r10_function_mode_at_import.py",), (CONTROL,)),
    Mutant("tensor-class-unchecked", "a method replaced in torch.Tensor after the harness started runs when "
           "the harness reads the outputs", "sandbox/handoff.py", "Handoff._tensor_class_unchanged", None,
           "None",
           ("exploits_runtime/r11_tensor_method_patched.py",), (CONTROL,)),
    Mutant("timer-tools-unchecked", "a torch function the timer uses, replaced at import, goes unrefused",
           "sandbox/handoff.py", "Handoff._timer_tools_unchanged", None, "None",
           ("exploits_runtime/g03_timer_patch.py",), (CONTROL,)),
    Mutant("interpreter-hooks-allowed", "a profile or trace hook the candidate asked for goes unrefused",
           "sandbox/handoff.py", "Handoff.outputs",
           "if self.hooks_asked or _GET_PROFILE() is not None or _GET_TRACE() is not None:", "if False:",
           ("exploits_runtime/r12_profile_hook_finishes_the_output.py",), (CONTROL,)),
    Mutant("timed-mix-off",
           "the timed calls rotate through pristine variants instead of getting fresh inputs",
           "evaluate/run.py", "_sandbox",
           'timed_mix=cfg.fresh_timed_inputs and prepared.timed_mix', "timed_mix=False",
           ("exploits_runtime/r07_memo_by_sampled_key.py",), (CONTROL,)),
)


# -- the GPU-only runtime checks: applied on every machine, killed on a GPU by the GPU corpus -----------
GPU_CONTROLS = (CONTROL, "exploits/h18_relu_zeros_atomic.py")
GPU_MUTANTS = (
    Mutant("deferred-write-unchecked", "an output that changes after a device-wide sync (work left on "
           "another stream) is accepted", "evaluate/trials.py", "Trials._background_work",
           'if meta.changed_after_sync and not self.flag(', "if False and not self.flag(",
           ("exploits_runtime/g01_side_stream_deferred.py",), GPU_CONTROLS),
    Mutant("timed-calls-uncompared", "the timed calls' checked outputs are not compared",
           "evaluate/trials.py", "Trials._on_timing",
           'if not self._checked_calls(event.checked, "timed", "timed call"):', "if False:",
           ("exploits_runtime/g02_pointer_cache.py",), GPU_CONTROLS),
    Mutant("share-floor-off", "a kernel share under the floor is accepted", "evaluate/verdict.py",
           "timing_checks",
           "if fraction is not None and fraction < min_kernel_gpu_fraction:", "if False:",
           ("exploits_runtime/g04_lazy_kernel.py", "exploits_runtime/g05_graph_replay_matmul.py",
            "exploits_runtime/g06_host_time_in_launch.py"), GPU_CONTROLS),
    Mutant("share-calls-uncompared", "the outputs of the kernel share's measured calls are not compared",
           "evaluate/trials.py", "Trials._on_census",
           "if not self._checked_calls(event.checked, SHARE_PREFIX, \"the kernel share's measured call\"):",
           "if False:", ("exploits_runtime/g08_honest_only_when_measured.py",), GPU_CONTROLS),
    Mutant("timing-threads-unchecked", "a Python thread alive during the timed calls is accepted",
           "evaluate/trials.py", "Trials._on_timing", 'if alive and not self.flag("rt-thread-left-running"',
           'if False and not self.flag("rt-thread-left-running"',
           ("exploits_runtime/g07_thread_during_timing.py",), GPU_CONTROLS),
)
