"""`kernelrl gen`: generated problems at training scale (kernelrl.problems.generate), audited by the
evaluator."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer

from kernelrl.cli.app import EXIT_BAD_INPUT, app, evaluating, fail, stdout
from kernelrl.cli.options import Evaluation, eval_options, with_options


@app.command("gen", epilog="Exit codes: 0 = the problems were written; 2 = bad usage or input; 3 = the "
             "evaluator itself failed (EvaluatorError).")
@with_options(evaluation=eval_options("device"))
def gen_cmd(
    out: Annotated[Path, typer.Option(
        "--out", help="Directory to write (emptied first): level{N}/ problem files, manifest.json, "
        "problems.jsonl.")],
    n: Annotated[int, typer.Option("--n", min=1, help="Problems to keep.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same files.")] = 0,
    family: Annotated[list[str] | None, typer.Option(
        "--family", help="Op families to compose from (repeatable; default: every one).")] = None,
    decontaminate: Annotated[list[Path] | None, typer.Option(
        "--decontaminate", help="Also keep off this suite's problems (a KernelBench checkout or a directory "
        "of problem files; repeatable), besides the built-in test split and the prompts' worked example.")
    ] = None,
    no_audit: Annotated[bool, typer.Option("--no-audit", help="Skip the evaluator's audit gate.")] = False,
    solutions: Annotated[bool, typer.Option(
        "--solutions", help="Also write a template Triton solution of each problem and keep those the "
        "evaluator judges correct without findings (solutions/, solutions.json).")] = False,
    inductor_solutions: Annotated[bool, typer.Option(
        "--inductor-solutions", help="Also write an Inductor-derived solution of each problem "
        "(torch.compile's Triton kernels as a self-contained ModelNew; problems Inductor sends to library "
        "kernels are skipped "
        "with their reason) and keep those the evaluator judges correct without findings "
        "(solutions/<id>_inductor.py; needs a CUDA device).")] = False,
    dataset: Annotated[bool, typer.Option(
        "--dataset", help="Also export the set as parquet files per split with a dataset card (OUT/dataset/; "
        "needs the train extra's `datasets`).")] = False,
    *,
    evaluation: Evaluation,
) -> None:
    """Compose KernelBench-format problems from op families (element-wise chains, broadcasting, reductions and
    scans along any dimension, row-wise normalizations, GEMM and batched-GEMM epilogues, convolutions with
    pooling, embeddings, losses) with a seeded sampler, keep those that pass every gate (reference run,
    numerical sanity, audit, no duplicate, no overlap with the built-in test split or the prompts' worked
    example) and list every reject with its reason in the manifest."""
    from kernelrl.problems import ProblemError, load_suite
    from kernelrl.problems.generate import FAMILIES, default_heldout, generate, verify_solutions

    families = tuple(family or FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        fail(f"unknown --family {', '.join(unknown)}; families: {', '.join(FAMILIES)}", EXIT_BAD_INPUT)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").is_file())):
        fail(f"--out {out} is a file or a non-empty directory that kernelrl gen did not write; nothing was "
             "changed", EXIT_BAD_INPUT)
    seed_device = _inductor_device(evaluation.settings.device) if inductor_solutions else None
    heldout = default_heldout()
    for location in decontaminate or []:
        try:
            heldout += list(load_suite(location))
        except ProblemError as exc:
            fail(f"--decontaminate {location}: {exc}", EXIT_BAD_INPUT)
    # the evaluator only where a gate or the solutions need it
    verify = solutions or inductor_solutions
    opened = evaluation.open() if verify or not no_audit else contextlib.nullcontext()
    checked = written = None
    with evaluating(), opened as scorer:
        manifest = generate(n, seed, out, auditor=None if no_audit else scorer, families=families,
                            heldout=heldout, solutions=solutions, inductor_solutions=seed_device)
        if verify:
            checked = verify_solutions(out, scorer, scorer.environment().mode == "gpu")
    if dataset:
        from kernelrl.problems.generate.export import export_dataset

        try:
            written = export_dataset(out)
        except RuntimeError as exc:
            fail(f"{exc}; the problems were written to {out}", EXIT_BAD_INPUT)
    _report(out, manifest, checked, written)


def _report(out: Path, manifest: dict, checked: dict | None, written: Path | None) -> None:
    """What was kept and rejected, the solutions' verdicts per family and kind, where the dataset went."""
    console = stdout()
    console.print(f"kept {manifest['kept']} of {manifest['candidates']} generated problems in {out} "
                  f"(splits {manifest['splits']})")
    console.print(f"per family: {manifest['families']}")
    console.print(f"rejected: {manifest['rejects_by_reason'] or 'none'} (reasons in {out / 'manifest.json'})")
    if manifest["decontaminated_by_signature_only"] or manifest["heldout_unread"]:
        console.print(f"held-out problems checked by op sequence only (no check set): "
                      f"{len(manifest['decontaminated_by_signature_only'])}; not readable: "
                      f"{len(manifest['heldout_unread'])} (listed in the manifest)")
    if checked is not None:
        console.print(f"solutions: {checked['kept']} of {checked['verified']} verified kept, per family "
                      f"{checked['kept_per_family']}; {len(checked['not_verified_gpu_only'])} bfloat16 ones "
                      f"unverified without a GPU (details in {out / 'solutions.json'})")
        for kind, counts in checked["kinds"].items():
            if counts["verified"] or counts.get("skipped_per_family"):
                families = {f: f"{c['kept']}/{c['verified']}" for f, c in counts["per_family"].items()}
                skipped = f"; skipped {counts['skipped_per_family']}" if kind == "inductor" else ""
                console.print(f"  {kind}: {counts['kept']} of {counts['verified']} kept; per family "
                              f"(kept/verified) {families}{skipped}")
    if written is not None:
        console.print(f"dataset: {written} (parquet per split, README.md card)")


def _inductor_device(device: str) -> str:
    """The CUDA device Inductor compiles the seeds on; a clear error without one."""
    import torch

    if not torch.cuda.is_available() or not (device in ("auto", "cuda") or device.startswith("cuda:")):
        fail(f"--inductor-solutions needs a CUDA device (Inductor compiles and autotunes its Triton kernels "
             f"there); got --device {device} on a machine with {torch.cuda.device_count()} GPUs. Run it on a "
             "GPU machine, or use --solutions for the template solutions.", EXIT_BAD_INPUT)
    return "cuda" if device == "auto" else device
