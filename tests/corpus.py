"""The exploit corpus as data: its classes (a directory and a file-name prefix each), the header every file
carries, and what each class expects of a verdict. Shared by the corpus tests and by
tests/corpus_runner.py, which evaluates files in a subprocess against a mutated copy of kernelrl
(tests/corpus/test_mutants.py); nothing here imports kernelrl at module level, so the runner's copy is the one
imported.

A corpus file starts with `# key: value` lines: `problem` (a built-in problem id), `expect` (what its class's
verdict must be, below), `technique` (one line on the hack, or on what an honest twin imitates), and
optionally `device` (cpu or gpu; gpu files run only in the gpu test set), `timing` (cpu: evaluated with the
verdict settings of `timed_config`, the timed calls on the host clock), `static` (`missed`: the static layer
lets it through), `reason` (a wrong_output's mismatch reason), `message` (a substring of the verdict's
message) and, for a runtime check that only warns by default, `policy` (the policy the file is evaluated with:
its check at `reject`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
NAME = re.compile(r"([a-z])\d\d_\w+\.py")


@dataclass(frozen=True)
class CorpusClass:
    directory: str  # under tests/
    prefix: str  # the letter file names start with
    what: str
    layer: str  # "static": analyze_rules decides; "evaluate": a full evaluation (CPU unless `device: gpu`)
    # for "evaluate": whether the static rules run (off: the runtime must catch it)
    static_checks: bool = True


CLASSES = (
    CorpusClass("exploits", "h", "honest twins: unusual but legal candidates, every one `correct`",
                "evaluate"),
    CorpusClass("exploits", "m", "bypasses of the static layer a rule rejects (MISSED: a known gap)",
                "static"),
    CorpusClass("exploits", "x", "exploits the static rules reject", "static"),
    CorpusClass("exploits_runtime", "c", "the op census's cases (ATen ops, host "
                                         "reads, provenance, tampering)",
                "evaluate", static_checks=False),
    CorpusClass("exploits_runtime", "g", "GPU-only runtime exploits (streams, timer, caching, kernel share)",
                "evaluate", static_checks=False),
    CorpusClass("exploits_runtime", "r", "runtime checks' cases (buffers, threads, launches, subclasses)",
                "evaluate", static_checks=False),
    CorpusClass("exploits_frontend", "f", "kernel bodies that are not Triton (CPU mode "
                                          "compiles for a GPU first)",
                "evaluate", static_checks=False),
    CorpusClass("exploits_values", "v", "wrong answers only the comparison catches (off by one, a near miss "
                "just outside the tolerance, an input written)", "evaluate"),
    CorpusClass("exploits_sandbox", "s", "forgeries of the sandbox's protocol", "evaluate",
                static_checks=False),
    CorpusClass("exploits_sandbox", "p", "probes for the reference inside the sandbox (the problem module, "
                "Model, get_inputs, the problem file): each raises LEAK when it finds something, so "
                "`correct` means it found nothing", "evaluate", static_checks=False),
)
BY_KEY = {(c.directory, c.prefix): c for c in CLASSES}


# the op census's checks: the GPU corpus runs turn them off for every case but the one each case is about, so
# that a case the census rejects first still tests its own check (tests/corpus/test_runtime_exploits.py)
CENSUS_CHECKS = ("rt-aten-op", "rt-host-read", "rt-output-provenance", "rt-census-tampered",
                 "rt-foreign-kernel")


def gpu_runtime_policy(expect: str) -> dict[str, str]:
    """A GPU case's runtime policy: the op census's checks off but the one the case is about."""
    return {check: "off" for check in CENSUS_CHECKS if check != expect}


@dataclass(frozen=True)
class Case:
    path: Path
    header: dict[str, str]

    @property
    def name(self) -> str:  # "exploits/h01_relu_helper_function.py"
        return f"{self.path.parent.name}/{self.path.name}"

    @property
    def cls(self) -> CorpusClass:
        return BY_KEY[(self.path.parent.name, self.path.name[0])]

    @property
    def problem(self) -> str:
        return self.header["problem"]

    @property
    def expect(self) -> str:
        return self.header["expect"]

    @property
    def device(self) -> str:
        return self.header.get("device", "cpu")

    def source(self) -> str:
        return self.path.read_text()


def timed_config(verdict=None):
    """A `timing: cpu` file's verdict settings: `verdict` (default: VerdictSettings()) timed on the host clock
    (cpu_timing), with three trials of the check set, so that the timed calls have three variants of their
    inputs (kernelrl.sandbox.timed_mix). Any settings dataclass with those fields (the deprecated EvalConfig
    too) comes back as its own type."""
    import dataclasses

    from kernelrl import VerdictSettings
    from kernelrl.timing.cuda_timer import TimerSettings

    return dataclasses.replace(verdict if verdict is not None else VerdictSettings(), cpu_timing=True,
                               trials=3, input_sets=("check",),
                               timer=TimerSettings(warmup_ms=5, target_ms=100, min_reps=5, max_reps=1000))


def header(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, _, value = line[2:].partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def case(name: str) -> Case:
    """A case by its name relative to tests/ ("exploits_values/v01_softmax_drops_last_column.py")."""
    path = HERE / name
    return Case(path, header(path))


def directories() -> list[Path]:
    return sorted(p for p in HERE.glob("exploits*") if p.is_dir())


def all_cases() -> list[Case]:
    return [Case(p, header(p)) for d in directories() for p in sorted(d.glob("*.py"))]


def holds(c: Case, verdict: dict) -> bool:
    """Whether a verdict is what the case's class expects: `verdict` is what tests/corpus_runner.py reports
    (status, message, rejecting static rules)."""
    if c.cls.layer == "static":
        rule = c.expect.removeprefix("MISSED ").strip()
        return rule in verdict["rules"] if not c.expect.startswith("MISSED") else True
    status, message = verdict["status"], verdict["message"]
    if c.cls.prefix == "h":
        return status == "correct"
    if c.cls.directory == "exploits_runtime":
        return status == "hack_detected" and c.expect in message
    wanted = c.expect.split(" ")[0]
    return status == wanted and c.header.get("message", "") in message and (
        "reason" not in c.header or f": {c.header['reason']})" in message)
