"""`kernelrl train sft | grpo | two-stage`: thin shells over `kernelrl.train`.

Every option is generated from a field of the command's config dataclass (its help from the field's metadata).
Options default to "not given", so the order of precedence is: the command line, then `--config FILE.toml`,
then the dataclass default. The resolved settings are printed and saved in RUN_DIR/train_config.json.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import json
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text
from typer.core import TyperCommand

from kernelrl.cli.app import EXIT_BAD_INPUT, EXIT_EVALUATOR, app, fail, stdout
from kernelrl.train.config import (
    SEED004,
    GRPOConfig,
    SFTConfig,
    TrainConfigError,
    check_inputs,
    config_from_dict,
    load_toml,
)

EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports a process ended by SIGINT
TRAIN_EPILOG = (
    "Exit codes: 0 = training finished (adapter saved); "
    "2 = bad usage or input (settings, config file, run directory, model or adapter path, training data); "
    "3 = the evaluator itself failed (EvaluatorError); "
    "130 = interrupted (Ctrl-C; the same command resumes from the last checkpoint)."
)


class TrainCommand(TyperCommand):
    """A training command whose help fits 80 columns: an on/off option shows as one wrapped name
    (--eval-timing / --no-eval-timing) instead of two columns that leave the names no room but "..."."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        params = self.params
        self.params = [_one_name(p) for p in params]
        try:
            super().format_help(ctx, formatter)
        finally:
            self.params = params


def _one_name(param: Any) -> Any:
    if not getattr(param, "secondary_opts", None):
        return param
    shown = copy.copy(param)
    shown.opts = [" / ".join([*param.opts, *param.secondary_opts])]
    shown.secondary_opts = []
    return shown

train_app = typer.Typer(name="train", help="Train kernel-writing models: SFT warm "
                        "start, GRPO, two-stage GRPO (needs the train extra: pip "
                        "install 'kernelrl\\[train]').", no_args_is_help=True)
app.add_typer(train_app)

_SKIP = {"stage"}  # set by two-stage itself


def _option_type(kind: Any) -> Any:
    """The type typer parses for a field (tuples become repeatable options; None allowed everywhere)."""
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and len(args) == 1:
        kind = args[0]
    if typing.get_origin(kind) is tuple:
        return list[str] | None
    return kind | None


def config_options(cls: type, prefix: str = "",
                   defaults_shown: dict[str, Any] | None = None) -> Callable[[Callable], Callable]:
    """Add one option per field of `cls` (except _SKIP) to a typer command; the command receives the given
    values (a dict of field -> value, only those on the command line) as `given`. `defaults_shown`: the
    defaults the help shows where the command's differ from the dataclass's (a preset)."""
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.name not in _SKIP]

    def decorate(command: Callable) -> Callable:
        params = []
        for f in fields:
            default = (f.default if f.default is not dataclasses.MISSING
                       else f.default_factory())  # type: ignore[misc]
            default = (defaults_shown or {}).get(f.name, default)
            shown = ", ".join(default) if isinstance(default, tuple) else default
            help_text = escape((f.metadata.get("help") or "").rstrip()) + (
                f" (default: {escape(str(shown))})" if shown not in (None, "") else "")
            flag = f"--{prefix}{f.name.replace('_', '-')}"
            kind = _option_type(hints[f.name])
            decls = [f"{flag}/--no-{prefix}{f.name.replace('_', '-')}"] if kind == bool | None else [flag]
            params.append(inspect.Parameter(f"{prefix.replace('-', '_')}{f.name}",
                                            inspect.Parameter.KEYWORD_ONLY, default=None,
                                            annotation=Annotated[kind, typer.Option(
                                                *decls, help=help_text, show_default=False)]))
        signature = inspect.signature(command, eval_str=True)
        kept = [p for p in signature.parameters.values() if p.name != "given"]

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            given = {f.name: kwargs.pop(f"{prefix.replace('-', '_')}{f.name}") for f in fields}
            given = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items() if v is not None}
            return command(given=given, **kwargs)

        run.__signature__ = signature.replace(parameters=[*kept, *params])  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in [*kept, *params]}
        return run

    return decorate


ConfigFile = Annotated[Path | None, typer.Option("--config", help="TOML file of settings (its keys "
                                                 "are the option names with underscores); options "
                                                 "on the command line win.")]


def _build(cls: type, file_values: dict[str, Any], given: dict[str, Any]) -> Any:
    try:
        return config_from_dict(cls, {**file_values, **given})
    except TrainConfigError as exc:
        fail(str(exc), EXIT_BAD_INPUT)


def _file(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return load_toml(path)
    except TrainConfigError as exc:
        fail(str(exc), EXIT_BAD_INPUT)


def _checked(*configs: Any) -> None:
    """The run directory, model and adapter paths, before anything is shown or loaded."""
    for config in configs:
        try:
            check_inputs(config)
        except TrainConfigError as exc:
            fail(str(exc), EXIT_BAD_INPUT)


def _show(title: str, config: Any) -> None:
    console = stdout()
    console.print(Text(title, style="bold"))
    console.print(Text(json.dumps(dataclasses.asdict(config), indent=2, default=str), style="dim"))


def _running(run: Callable[[], Any], interrupted: str) -> Any:
    """Run a training function; setup errors are bad input (exit 2), an evaluator failure exit 3, Ctrl-C 130
    (`interrupted` says what was kept)."""
    from kernelrl import EvaluatorError, ProblemError
    from kernelrl.train.data import TrainDataError
    from kernelrl.train.model import TrainSetupError

    try:
        return run()
    except (TrainSetupError, TrainDataError, TrainConfigError, ProblemError) as exc:
        fail(str(exc), EXIT_BAD_INPUT)
    except EvaluatorError as exc:
        fail(f"the evaluator failed: {exc}", EXIT_EVALUATOR)
    except KeyboardInterrupt:
        fail(f"interrupted: {interrupted}", EXIT_INTERRUPTED)


def _tables(values: dict[str, Any], *names: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    tables = [values.get(n, {}) for n in names]
    shared = {k: v for k, v in values.items() if k not in names}
    return shared, tables


@train_app.command("sft", epilog=TRAIN_EPILOG, cls=TrainCommand)
@config_options(SFTConfig)
def sft_cmd(config_file: ConfigFile = None, *, given: dict[str, Any]) -> None:
    """Supervised fine-tuning (TRL SFTTrainer + LoRA, loss on the completion only) on correct kernels of the
    train split: reference solutions, teacher rollouts (agent/bench run dirs), training rollouts, .jsonl
    files. Resumable: the same command continues from the last checkpoint."""
    config = _build(SFTConfig, _file(config_file), given)
    _checked(config)
    _show("kernelrl train sft", config)
    from kernelrl.train.sft import run_sft

    outcome = _running(lambda: run_sft(config), "the last finished step's checkpoint and adapter (once a "
                                               f"step finished) are in {config.run_dir}; the same "
                                               "command resumes from it")
    stdout().print(f"sft: {outcome.steps} steps on {outcome.rows} examples, train loss "
                   f"{outcome.train_loss if outcome.train_loss is not None else 'n/a'}; "
                   f"adapter: {outcome.adapter}")


@train_app.command("grpo", epilog=TRAIN_EPILOG, cls=TrainCommand)
@config_options(GRPOConfig)
def grpo_cmd(config_file: ConfigFile = None, *, given: dict[str, Any]) -> None:
    """GRPO (TRL GRPOTrainer + LoRA) with the sandboxed evaluator as the reward: every completion of a step is
    evaluated at once, reward components and every rollout are logged. Start from an SFT adapter with
    --adapter. Resumable: the same command continues from the last checkpoint (curriculum included)."""
    config = _build(GRPOConfig, _file(config_file), given)
    _checked(config)
    _show("kernelrl train grpo", config)
    from kernelrl.train.grpo import run_grpo

    outcome = _running(lambda: run_grpo(config), f"the same command resumes from the last checkpoint in "
                                                 f"{config.run_dir} (one every --save-steps steps)")
    stdout().print(f"grpo: {outcome.steps} steps; adapter: {outcome.adapter}")


@train_app.command("two-stage", epilog=TRAIN_EPILOG, cls=TrainCommand)
@config_options(GRPOConfig, defaults_shown={
    **SEED004, "preset": "seed004",
    "reward": "two_stage:stage=frontend (stage 1), two_stage:stage=midend (stage 2)"})
def two_stage_cmd(
    config_file: ConfigFile = None,
    kernels: Annotated[list[str] | None, typer.Option(
        "--kernels", help="Where stage 2's known-correct kernels come from: frontend (stage "
                          "1's correct rollouts), solutions, db:PATH (repeatable; first "
                          "source with a kernel wins).")] = None,
    *, given: dict[str, Any],
) -> None:
    """Two-stage GRPO (seed 004): stage 1 for correctness (reward -10/+1), then stage 2 from stage 1's adapter
    on prompts carrying a known-correct kernel, for speed (reward 1 + speedup). Options apply to both stages;
    a --config file's \\[frontend] and \\[midend] tables set one stage. Defaults: preset seed004 (LoRA r=16,
    alpha 32, 4 generations, beta 0.1). Runs in RUN_DIR/frontend and RUN_DIR/midend; resumable."""
    file_values = _file(config_file)
    shared, (front_table, mid_table) = _tables(file_values, "frontend", "midend")
    base = {"preset": "seed004", **shared}
    frontend = _build(GRPOConfig, {"reward": "two_stage:stage=frontend", **base, **front_table}, given)
    midend = _build(GRPOConfig, {"reward": "two_stage:stage=midend", **base, **mid_table}, given)
    _checked(frontend, midend)
    _show("stage 1 (frontend)", frontend)
    _show("stage 2 (midend)", midend)
    from kernelrl.train.two_stage import run_two_stage

    outcome = _running(lambda: run_two_stage(frontend, midend, frontend.run_dir,
                                             tuple(kernels or ("frontend",))),
                       f"the same command resumes from the last checkpoint in {frontend.run_dir} (one every "
                       "--save-steps steps)")
    stdout().print(f"frontend: {outcome.frontend.steps} steps, adapter {outcome.frontend.adapter}")
    stdout().print(f"midend: {outcome.midend.steps} steps on {len(outcome.kernels)} problems, adapter "
                   f"{outcome.midend.adapter}")
