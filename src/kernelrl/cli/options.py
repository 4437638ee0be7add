"""Options shared by several commands, defined once.

An option that sets a dataclass field is generated from the field, as TRL's HfArgumentParser does: its type
and default come from the dataclass, its help from `field(metadata={"help": ...})`. `Options` names the fields
a command shows; `@with_options(name=Options(...))` adds them to a typer command (through the signature typer
reads) and calls the command with the built instance under `name`. Building validates: what the dataclass
rejects is bad input (exit 2), raised before the command has created anything.

    @app.command("demo")
    @with_options(evaluation=eval_options("device", "trials"))
    def demo_cmd(*, evaluation: Evaluation) -> None: ...

Flags: `--` + the field name with dashes (`max_tokens` -> `--max-tokens`) unless `flags` renames it; a bool
field is a `--x/--no-x` pair, or a single `--no-x` flag when its name starts with `no_`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from kernelrl import (
    EvaluatorSettings,
    Problem,
    ProblemError,
    VerdictSettings,
    load_problem,
    load_suite,
    open_scorer,
)
from kernelrl.agent.loop import AgentConfig
from kernelrl.cli.app import EXIT_BAD_INPUT, bad_input, fail
from kernelrl.evaluate.settings import split_settings


@dataclass(frozen=True)
class Options:
    """Typer options for some fields of a dataclass (see the module docstring)."""

    cls: type
    names: Sequence[str]  # the fields shown, in this order
    # field -> flag name without dashes, where it differs
    flags: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)  # this command's defaults, where they differ
    help: Mapping[str, str] = field(default_factory=dict)  # this command's help, where it differs
    # field -> turns the option's value into field values (a reward spec 'makora:delta=1.8' -> reward, params)
    parse: Mapping[str, Callable[[Any], dict[str, Any]]] = field(default_factory=dict)
    check: Callable[[Any], None] | None = None  # more validation of the built instance (fail() to reject)

    def with_defaults(self, **defaults: Any) -> Options:
        return dataclasses.replace(self, defaults={**self.defaults, **defaults})

    def flag(self, name: str) -> str:
        return self.flags.get(name, name.replace("_", "-"))

    def fields(self) -> dict[str, tuple[dataclasses.Field, Any]]:
        """Field name -> (field, type) of the fields options may show."""
        hints = typing.get_type_hints(self.cls)
        return {f.name: (f, hints[f.name]) for f in dataclasses.fields(self.cls)}

    def parameters(self) -> list[inspect.Parameter]:
        fields = self.fields()
        params = []
        for name in self.names:
            f, kind = fields[name]
            flag = self.flag(name)
            if name in self.defaults:
                default = self.defaults[name]
            elif f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                default = inspect.Parameter.empty  # a required option
            if kind is bool:
                decls = [f"--{flag}"] if flag.startswith("no-") else [f"--{flag}/--no-{flag}"]
            else:
                decls = [f"--{flag}"]
            help_text = self.help.get(name, f.metadata.get("help"))
            option = typer.Option(*decls, help=help_text, show_default=default is not None)
            params.append(inspect.Parameter(flag.replace("-", "_"), inspect.Parameter.KEYWORD_ONLY,
                                            default=default, annotation=Annotated[kind, option]))
        return params

    def build(self, values: Mapping[str, Any]) -> Any:
        """The dataclass from the parsed options (keyed by parameter name); invalid values exit 2."""
        kwargs: dict[str, Any] = {}
        with bad_input():
            for name in self.names:
                value = values[self.flag(name).replace("-", "_")]
                kwargs.update(self.parse[name](value) if name in self.parse else {name: value})
            built = self.construct(kwargs)
        if self.check is not None:
            self.check(built)
        return built

    def construct(self, kwargs: dict[str, Any]) -> Any:
        return self.cls(**kwargs)


def with_options(**groups: Options) -> Callable[[Callable], Callable]:
    """Add each group's options to a typer command; the command gets the built instances as keyword
    arguments named like the groups. Declare them keyword-only (`*, evaluation: Evaluation`), where their
    options should show in --help."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        added = {name: group.parameters() for name, group in groups.items()}
        params = []  # the group's options go where the command declares the group (the order --help shows)
        for p in signature.parameters.values():
            params.extend(added[p.name] if p.name in groups else [p])
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise TypeError(f"{command.__name__}: options collide: "
                            f"{sorted(n for n in names if names.count(n) > 1)}")

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            for name, group in groups.items():
                kwargs[name] = group.build({p.name: kwargs.pop(p.name) for p in added[name]})
            return command(**kwargs)

        run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return decorate


# -- the device ----------------------------------------------------------------------------------------------
def gpu_devices() -> list[str] | None:
    """`cuda:N` for each GPU the sandboxes could use (from CUDA_VISIBLE_DEVICES or `nvidia-smi -L`, never by
    importing torch in this process); [] when there is none; None when there may be some this cannot list
    (GPU UUIDs in CUDA_VISIBLE_DEVICES, a GPU device node without nvidia-smi)."""
    from kernelrl.evaluate import visible_gpus

    gpus = visible_gpus()
    if gpus:
        return gpus
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        entries = [d.strip() for d in listed.split(",") if d.strip()]
        return None if any(d[0].isalpha() for d in entries) else []
    return None if any(Path(node).exists() for node in ("/dev/nvidiactl", "/dev/kfd")) else []


def check_device(evaluation: Evaluation, what: str = "") -> None:
    """--device cuda or cuda:N on a machine without that GPU: exit 2 before anything starts."""
    device = evaluation.settings.device
    if not (device == "cuda" or device.startswith("cuda:")):
        return
    gpus = gpu_devices()
    if gpus == []:
        fail(f"--device {device}: this machine has no usable CUDA GPU (none in CUDA_VISIBLE_DEVICES or "
             f"`nvidia-smi -L`); {what or 'nothing was run'} (use --device cpu or auto)", EXIT_BAD_INPUT)
    if gpus and device.startswith("cuda:") and device not in gpus:
        fail(f"--device {device}: no such GPU on this machine (visible: {', '.join(gpus)})", EXIT_BAD_INPUT)


_EVAL_FLAGS = {"run_timeout_s": "run-timeout", "compile_timeout_s": "compile-timeout",
               "result_cache": "cache"}


@dataclass(frozen=True)
class Evaluation:
    """What a command evaluates with: the evaluator's settings and the verdict settings of its calls."""

    settings: EvaluatorSettings
    verdict: VerdictSettings

    def open(self, **overrides: Any):
        """The scorer for these settings (`open_scorer`); `overrides`: EvaluatorSettings fields."""
        settings = dataclasses.replace(self.settings, **overrides) if overrides else self.settings
        return open_scorer(settings=settings, verdict=self.verdict)


@dataclass(frozen=True)
class EvaluationOptions(Options):
    """Options for fields of EvaluatorSettings and VerdictSettings, built into an `Evaluation`."""

    def fields(self) -> dict[str, tuple[dataclasses.Field, Any]]:
        found: dict[str, tuple[dataclasses.Field, Any]] = {}
        for cls in (EvaluatorSettings, VerdictSettings):
            hints = typing.get_type_hints(cls)
            found.update({f.name: (f, hints[f.name]) for f in dataclasses.fields(cls)})
        return found

    def construct(self, kwargs: dict[str, Any]) -> Evaluation:
        settings, verdict = split_settings(kwargs)
        return Evaluation(EvaluatorSettings(**settings), VerdictSettings(**verdict))


def eval_options(*names: str, **defaults: Any) -> EvaluationOptions:
    """Options for these EvaluatorSettings / VerdictSettings fields (help from their metadata); the device is
    checked against the machine's GPUs."""
    return EvaluationOptions(Evaluation, names, flags=_EVAL_FLAGS, defaults=defaults, check=check_device)


# -- agent and bench ----------------------------------------------------------------------------------------
def _reward_fields(spec: str) -> dict[str, Any]:
    from kernelrl.rewards import parse_reward_spec

    name, params = parse_reward_spec(spec)
    return {"reward": name, "reward_params": params}


AGENT_OPTIONS = Options(
    AgentConfig, ("turns", "samples", "mode", "reward", "target_speedup", "temperature", "max_tokens"),
    parse={"reward": _reward_fields},
    help={"reward": "Reward preset with parameters, e.g. tiered, makora:delta=1.8, "
                    "composite:alpha=0.1,gamma=0.5, two_stage:stage=midend, kevin."},
)

JUDGE_VERIFY = ("off", "warn", "enforce")


@dataclass(frozen=True)
class PolicyOptions:
    """How agent and bench reach the model, write prompts, share kernels and consult a judge (CLI only)."""

    policy: str = field(metadata={"help": "replay:FILE.jsonl, openai:MODEL, hf:PATH_OR_HUB_ID or smollm2 "
                                          "(the offline model); bench also takes solutions (replay the "
                                          "suite's reference solutions)."})
    base_url: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible server (default $OPENAI_BASE_URL, else api.openai.com)."})
    api_key_env: str = field(default="OPENAI_API_KEY", metadata={
        "help": "Environment variable holding the API key."})
    backend: str = field(default="triton", metadata={"help": "Prompt for triton or cuda kernels."})
    templates: Path | None = field(default=None, metadata={
        "help": "Directory of prompt templates overriding the packaged ones (kernelrl/prompts/templates)."})
    hardware: str | None = field(default=None, metadata={"help": "Hardware facts to put in prompts."})
    kernel_db: Path | None = field(default=None, metadata={
        "help": "Kernel database (SQLite) shared across runs; default $KERNELRL_KERNEL_DB or "
                "~/.cache/kernelrl/kernels.sqlite."})
    no_kernel_db: bool = field(default=False, metadata={"help": "Do not read or fill the kernel database."})
    judge: str | None = field(default=None, metadata={
        "help": "Policy spec of an LLM judge (e.g. openai:MODEL; uses --base-url/--api-key-env for openai)."})
    judge_lambda: float = field(default=0.0, metadata={"help": "Reward r + lambda*J (needs --judge)."})
    judge_verify: str = field(default="off", metadata={
        "help": "off, warn (record the judge's hack finding on correct kernels) or enforce (hack_detected)."})

    def __post_init__(self) -> None:
        if self.judge_verify not in JUDGE_VERIFY:
            raise ValueError(f"--judge-verify must be off, warn or enforce, not {self.judge_verify!r}")
        if self.judge_lambda < 0:
            raise ValueError("--judge-lambda must be at least 0")
        if self.judge is None and (self.judge_lambda or self.judge_verify != "off"):
            raise ValueError("--judge-lambda and --judge-verify need --judge SPEC")
        if self.templates is not None and not self.templates.is_dir():
            raise ValueError(f"--templates {self.templates} is not a directory")


POLICY_OPTIONS = Options(PolicyOptions, [f.name for f in dataclasses.fields(PolicyOptions)])


# -- arguments naming problems -------------------------------------------------------------------------------
SuiteOpt = Annotated[str, typer.Option("--suite", help="The suite problem ids refer to: a suite directory, a "
                                                       "KernelBench checkout, or 'builtin'.")]
SuiteArg = Annotated[str, typer.Argument(metavar="SUITE", help="A suite directory, a KernelBench "
                                                               "checkout, or 'builtin'.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")]


def resolve_problems(suite_location: str, specs: Sequence[str]) -> list[Problem]:
    """Each spec is a problem file or a problem id of the suite (loaded only when an id needs it)."""
    with bad_input():
        found = []
        suite = None
        for spec in specs:
            path = Path(spec)
            if path.is_file():
                found.append(load_problem(path))
                continue
            if path.is_dir() or spec == "builtin":
                raise ProblemError(f"{spec} is a suite, not a problem: name a suite with --suite {spec} "
                                   "and its problems by id")
            if spec.endswith(".py"):
                raise ProblemError(f"cannot read {spec}: no such problem file")
            suite = suite or load_suite(suite_location)
            try:
                found.append(suite.get(spec))
            except KeyError:
                raise ProblemError(f"{spec} is neither a problem file nor a problem id of suite {suite.name} "
                                   "(see kernelrl problems)") from None
        return found
