"""Prompts from template files: the first-turn prompt (Triton or CUDA), the refinement prompt carrying the
previous kernel and the evaluator's feedback, and the LLM-judge prompts.

Templates are `string.Template` files (`$name` placeholders; `$$` is a literal dollar) in
`kernelrl/prompts/templates/`. `Prompts(template_dir=DIR)` reads a file from DIR first and falls back to the
packaged one, so users override only the files they change. Placeholders per template:

- system.md: backend_name
- triton.md / cuda.md: problem_id, reference, hardware, example_reference, example_solution, contract
- refine.md: problem_id, reference, hardware, turn, previous_code, feedback, inspirations, contract
- contract.md: backend_name;  hardware.md: facts;  inspiration.md: kernels
- judge_score.md: reference, code;  judge_hack.md: reference, code, hack_kinds
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelrl.problems import Problem
from kernelrl.problems.suite import PROMPT_EXAMPLE_PROBLEM
from kernelrl.results import EvalResult, Status

TEMPLATE_DIR = Path(__file__).parent / "templates"
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
BACKENDS = {"triton": ("Triton", "prompt_example_triton.py"), "cuda": ("CUDA C++", "prompt_example_cuda.py")}
EXAMPLE_PROBLEM = PROMPT_EXAMPLE_PROBLEM


@dataclass(frozen=True)
class Inspiration:
    """A prior kernel shown in the prompt (evolutionary mode)."""

    problem_id: str
    code: str
    reward: float
    speedup_vs_eager: float | None = None


class PromptError(ValueError):
    """A template is missing or has a placeholder nobody fills."""


def _speed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}x"


def render_feedback(result: EvalResult, limit: int = 6000) -> str:
    """What a model should read about its last attempt: verdict, message, details, timings, findings."""
    lines = [f"Verdict: {result.status.value} (stage: {result.stage.value})", f"Message: {result.message}"]
    c = result.correctness
    if c is not None and c.trials_planned:
        lines.append(f"Correctness trials passed: {c.trials_passed}/{c.trials_planned} "
                     f"(atol={c.atol:g}, rtol={c.rtol:g}, {c.dtype})")
        m = c.mismatch
        if m is not None:
            parts = [f"trial {m.trial}", f"input set {m.input_set}", f"output {m.output_index}",
                     f"reason {m.reason}"]
            if m.max_abs_error is not None:
                parts.append(f"max abs error {m.max_abs_error:.4g}")
            if m.max_rel_error is not None:
                parts.append(f"max rel error {m.max_rel_error:.4g}")
            if m.mismatched is not None and m.numel:
                parts.append(f"{m.mismatched}/{m.numel} elements differ")
            if m.first_index is not None:
                parts.append(f"first at index {m.first_index}: expected "
                             f"{m.expected_value}, got {m.actual_value}")
            lines.append("Mismatch: " + "; ".join(parts))
    t = result.timing
    if t is not None:
        if t.candidate is not None:
            lines.append(f"Your kernel: {t.candidate.median_ms:.4g} ms (median)")
        if t.eager is not None:
            lines.append(f"PyTorch eager: {t.eager.median_ms:.4g} ms; speedup {_speed(t.speedup_vs_eager)}")
        if t.inductor is not None:
            lines.append(f"torch.compile: {t.inductor.median_ms:.4g} ms; speedup "
                         f"{_speed(t.speedup_vs_inductor)}")
        if t.unavailable_reason:
            lines.append(f"Timing: {t.unavailable_reason}")
    for f in result.findings:
        where = f" (line {f.line})" if f.line else ""
        lines.append(f"Finding [{f.rule}, {f.policy}]{where}: {f.message}"
                     + (f" - {f.detail}" if f.detail else ""))
    if result.feedback and result.status is not Status.CORRECT:
        feedback = result.feedback if len(result.feedback) <= limit else "...\n" + result.feedback[-limit:]
        lines += ["Details:", "```", feedback.rstrip(), "```"]
    return "\n".join(lines)


class Prompts:
    """Renders the prompts of one backend ('triton' or 'cuda') from template files."""

    def __init__(self, template_dir: str | Path | None = None, backend: str = "triton",
                 hardware: str | None = None) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        self.template_dir = Path(template_dir) if template_dir is not None else None
        if self.template_dir is not None and not self.template_dir.is_dir():
            raise PromptError(f"template directory {self.template_dir} does not exist")
        self.backend = backend
        self.backend_name, example_file = BACKENDS[backend]
        self.hardware = hardware
        self._example_solution = (EXAMPLES_DIR / example_file).read_text().strip()
        self._example_reference = EXAMPLE_PROBLEM.read_text().strip()

    def template(self, name: str) -> string.Template:
        for directory in (self.template_dir, TEMPLATE_DIR):
            if directory is not None and (directory / name).is_file():
                return string.Template((directory / name).read_text())
        raise PromptError(f"no template {name} in {self.template_dir or TEMPLATE_DIR}")

    def render(self, name: str, **values: object) -> str:
        try:
            return self.template(name).substitute({k: str(v) for k, v in values.items()})
        except KeyError as exc:
            raise PromptError(f"template {name} uses ${exc.args[0]}, which is not one of "
                              f"{', '.join(sorted(values))}") from None
        except ValueError as exc:
            raise PromptError(f"template {name}: {exc} (write $$ for a literal dollar)") from None

    def _common(self, problem: Problem) -> dict[str, str]:
        hardware = self.render("hardware.md", facts=self.hardware.strip()) if self.hardware else ""
        return {"problem_id": problem.id, "reference": problem.source.strip(), "hardware": hardware,
                "contract": self.render("contract.md", backend_name=self.backend_name).strip()}

    def system(self) -> dict[str, str]:
        return {"role": "system", "content": self.render("system.md", backend_name=self.backend_name).strip()}

    def initial(self, problem: Problem) -> list[dict[str, str]]:
        """The first-turn messages for a problem."""
        user = self.render(f"{self.backend}.md", example_reference=self._example_reference,
                           example_solution=self._example_solution, **self._common(problem))
        return [self.system(), {"role": "user", "content": user.strip()}]

    def refine(self, problem: Problem, previous_code: str | None, result: EvalResult, turn: int,
               inspirations: Sequence[Inspiration] = ()) -> list[dict[str, str]]:
        """Messages asking to improve `previous_code` (None: no code was found) given its `result`."""
        kernels = ""
        if inspirations:
            blocks = [f"\n### {i.problem_id} (reward {i.reward:.3g}, "
                      f"speedup vs eager {_speed(i.speedup_vs_eager)})"
                      f"\n\n```python\n{i.code.strip()}\n```" for i in inspirations]
            kernels = self.render("inspiration.md", kernels="\n".join(blocks))
        user = self.render("refine.md", turn=turn,
                           previous_code=(previous_code
                                          or "# (no code block defining ModelNew was found)").strip(),
                           feedback=render_feedback(result), inspirations=kernels, **self._common(problem))
        return [self.system(), {"role": "user", "content": user.strip()}]

    def judge_score(self, problem: Problem, code: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.render("judge_score.md", reference=problem.source.strip(),
                                                        code=code.strip()).strip()}]

    def judge_hack(self, problem: Problem, code: str, hack_kinds: Sequence[str]) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.render("judge_hack.md", reference=problem.source.strip(),
                                                        code=code.strip(),
                                                        hack_kinds=", ".join(hack_kinds)).strip()}]


__all__ = ["Inspiration", "PromptError", "Prompts", "TEMPLATE_DIR", "render_feedback"]
