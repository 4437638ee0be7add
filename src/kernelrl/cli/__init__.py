"""The `kernelrl` command line: thin shells over the Python API (`Evaluator`, `load_problem`, `load_suite`).

Rooms: `app` (the typer app, exit codes, error helpers, `main`), `options` (options shared by commands,
generated from dataclass fields), `render` (tables and result panels), and the commands: `serve` (the reward
service), `gen` (generated problems), `eval` (eval, problems, rules, audit, baselines, demo) `run` (agent,
bench, report) and `train` (sft, grpo, two-stage).

  kernelrl eval PROBLEM SOLUTION_FILE               evaluate one candidate (PROBLEM: an id of --suite or a
  file) kernelrl eval --solutions DIR [--suite S]         evaluate a directory of solutions against a suite
  kernelrl problems [SUITE]                         list a suite's problems ('builtin' by default)
  kernelrl audit [PROBLEM...] [--only PREFIX]       flag problems that cannot grade kernels
  kernelrl baselines [SUITE] [--only P] [--fresh]   time references on a GPU into the baseline cache
  kernelrl demo                                     evaluate the shipped example candidates
  kernelrl gen --n N --seed S --out DIR             generate gated problems with a manifest
  kernelrl agent PROBLEM... --policy P              optimize problems with an LLM over refinement turns
  kernelrl bench --policy P --split test            benchmark a policy on a suite split (resumable run dir)
  kernelrl report RUN_DIR                           HTML report and summary of a run directory
  kernelrl train sft|grpo|two-stage --run-dir D     train a model (SFT, GRPO with the evaluator as reward)
  kernelrl serve [--device D] [--ray ADDR]         serve rewards over HTTP to trainers elsewhere

Exit codes: see `kernelrl.cli.app`.
"""

from kernelrl.cli import eval as _eval_commands  # noqa: F401  (registers the commands on `app`)
from kernelrl.cli import gen as _gen_commands  # noqa: F401
from kernelrl.cli import run as _run_commands  # noqa: F401
from kernelrl.cli import serve as _serve_commands  # noqa: F401
from kernelrl.cli import train as _train_commands  # noqa: F401
from kernelrl.cli.app import app, main

__all__ = ["app", "main"]
