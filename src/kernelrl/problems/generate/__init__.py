"""Generated problems at training scale: composed from op families by a seeded sampler, gated (load,
reference run, numerical sanity, audit, deduplication, decontamination against held-out problems), written as
a suite with a manifest that lists every problem kept and every one rejected with its reason.

    from kernelrl.problems.generate import generate
    manifest = generate(200, seed=7, out="gen/", auditor=scorer)   # kernelrl gen --n 200 --seed 7 --out gen/

Layout: `OUT/level{difficulty}/{index:05d}_{family}.py` (difficulty = op count), `OUT/manifest.json`,
`OUT/problems.jsonl` (one row per kept problem: id, family, ops, difficulty, dtype, split, source). The same
seed writes byte-identical files. Each kept problem's METADATA names its split: `test` (about 1 in 10, by its
near-duplicate key) is the held-out in-family set, never trained on.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from kernelrl.problems.generate.families import FAMILIES, Spec, sample
from kernelrl.problems.generate.gates import (
    GateRejected,
    gate,
    heldout_signatures,
    near_duplicate_key,
    new_seen,
    remember,
)
from kernelrl.problems.generate.render import render
from kernelrl.problems.generate.solutions import synthesize, verify_solutions
from kernelrl.problems.problem import Problem, load_problem

GENERATOR_VERSION = "kernelrl-gen/3"
HELDOUT_SHARE = 10  # 1 in this many near-duplicate keys is held out (split "test")
MAX_ATTEMPTS_PER_PROBLEM = 5  # the sampler stops after n times this many candidates

__all__ = ["FAMILIES", "GENERATOR_VERSION", "Auditor", "GateRejected", "default_heldout", "gate", "generate",
           "heldout_signatures", "new_seen", "synthesize", "verify_solutions"]


class Auditor(Protocol):
    """What audits a problem (an evaluator, any Scorer): its result's `refusing` flags reject the problem."""

    def audit(self, problem: Problem) -> Any: ...


def _metadata(spec: Spec, seed: int, index: int) -> dict:
    meta = {"family": spec.family, "ops": list(spec.ops), "tags": list(spec.tags),
            "difficulty": spec.difficulty, "dtype": spec.dtype,
            "provenance": {"generator": GENERATOR_VERSION, "seed": seed, "index": index}}
    if spec.dtype == "bfloat16":  # the CPU's Triton interpreter has no bfloat16 (numpy lacks it)
        meta["gpu_only"] = True
    return meta


def default_heldout() -> list[Problem]:
    """What generated problems are kept off by default: the built-in test split and the prompts' worked
    example (add a KernelBench checkout's problems to decontaminate against it too)."""
    from kernelrl.problems.suite import PROMPT_EXAMPLE_PROBLEM, load_suite

    return [*load_suite().split("test"), load_problem(PROMPT_EXAMPLE_PROBLEM, problem_id="prompt_example")]


def generate(n: int, seed: int, out: str | Path, *, auditor: Auditor | None = None,
             families: Sequence[str] = FAMILIES, heldout: Iterable[Problem] | None = None,
             solutions: bool = False, inductor_solutions: str | None = None) -> dict:
    """Write up to `n` gated problems (families in turn) under `out` (emptied first: it must be empty, missing
    or an earlier generated set, one with a manifest.json) and return the manifest.
    `heldout`: problems nothing generated may overlap (default: the built-in suite's test split and the
    prompts' worked example).
    `solutions`: also write a template Triton solution of each (`OUT/solutions/<id>.py`, unverified: see
    `verify_solutions`).
    `inductor_solutions`: a device ("cuda", "cuda:0"; "cpu" runs Inductor's Triton codegen without compiling)
    to also write an Inductor-derived solution of each (`OUT/solutions/<id>_inductor.py`, unverified); those
    Inductor cannot seed (extern kernels, fallbacks) are listed in the manifest's `inductor_skipped`."""
    unknown = [f for f in families if f not in FAMILIES]
    if n < 1 or unknown:
        raise ValueError(f"n must be at least 1 and families among {', '.join(FAMILIES)} (got {unknown})")
    if heldout is None:
        heldout = default_heldout()
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not (out / "manifest.json").is_file():
            raise ValueError(f"{out} is a non-empty directory that kernelrl gen did not write; nothing was "
                             "changed")
        shutil.rmtree(out)
    staging = out / ".staging"
    staging.mkdir(parents=True)
    test = heldout_signatures(heldout)
    kept: list[dict] = []
    rejected: list[dict] = []
    seen = new_seen()
    skipped: list[dict] = []
    index = 0
    while len(kept) < n and index < n * MAX_ATTEMPTS_PER_PROBLEM:
        family = families[index % len(families)]
        # each index its own draws: a reject moves no later problem
        spec = sample(random.Random(f"{seed}:{index}"), family)
        row = _gate(spec, seed, index, out, staging, auditor, test, seen)
        solution = synthesize(spec, seed=index) if solutions and "id" in row else None
        if solution is not None:
            path = out / "solutions" / f"{row['id']}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(solution)
        if inductor_solutions and "id" in row:
            skip = _inductor_seed(out, row, inductor_solutions)
            skipped += [skip] if skip else []
        (kept if "id" in row else rejected).append(row)
        index += 1
    shutil.rmtree(staging)
    manifest = {
        "generator": GENERATOR_VERSION, "seed": seed, "requested": n, "candidates": index, "kept": len(kept),
        "families": {f: Counter(r["family"] for r in kept)[f] for f in families},
        "splits": dict(sorted(Counter(r["split"] for r in kept).items())),
        "rejects_by_reason": dict(sorted(Counter(r["reason"] for r in rejected).items())),
        "gates": ["load", "reference run (check and sweep sets, CPU)", "finite outputs",
                  "numerical sanity in its dtype (against float64)",
                  "audit" if auditor else "audit (not run)",
                  "near-duplicate (program, constants abstracted)", "duplicate output on the same inputs",
                  "held-out overlap (ATen op sequence, output)"],
        "decontaminated_against": sorted({*test["ops"].values(), *test["fingerprint"].values()}),
        "decontaminated_by_signature_only": sorted(test["signature_only"]),
        "heldout_unread": test["unread"],
        "problems": [{k: v for k, v in r.items() if k != "source"} for r in kept],
        "rejected": rejected,
    }
    if inductor_solutions:
        manifest["inductor_skipped"] = skipped
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    with (out / "problems.jsonl").open("w") as f:
        for row in kept:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    return manifest


def _inductor_seed(out: Path, row: dict, device: str) -> dict | None:
    """Write the kept problem's Inductor-derived solution; the skip's row (id, family, reason) where none."""
    from kernelrl.problems.generate.inductor import InductorSkip, inductor_solution

    problem = load_problem(out / f"{row['id']}.py", problem_id=row["id"], level=row["difficulty"])
    try:
        solution = inductor_solution(problem, device)
    except InductorSkip as skip:
        return {"id": row["id"], "family": row["family"], "reason": skip.reason, "detail": skip.detail[:300]}
    path = out / "solutions" / f"{row['id']}_inductor.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(solution)
    return None


def _gate(spec: Spec, seed: int, index: int, out: Path, staging: Path, auditor: Auditor | None,
          test: dict[str, dict[str, str]], seen: dict[str, dict[str, str]]) -> dict:
    """The kept problem's row, or the reject's (with `reason` and `detail`)."""
    name = f"{index:05d}_{spec.family.removeprefix('gen_')}"
    base = {"index": index, "family": spec.family, "ops": list(spec.ops), "dtype": spec.dtype}
    meta = _metadata(spec, seed, index)
    key = near_duplicate_key(render(spec, meta))
    meta["split"] = "test" if int(key, 16) % HELDOUT_SHARE == 0 else "train"
    if meta["split"] == "test":  # held out within its family: the leak check guards it alone, not the family
        meta["heldout"] = "in_family"
    source = render(spec, meta)
    path = staging / f"{name}.py"
    path.write_text(source)
    try:
        problem = load_problem(path, problem_id=f"level{spec.difficulty}/{name}", level=spec.difficulty)
        signature = gate(problem, test, seen, auditor)
    except GateRejected as rejected:
        path.unlink()
        return {**base, "reason": rejected.reason, "detail": rejected.detail[:300]}
    final = out / f"level{spec.difficulty}" / path.name
    final.parent.mkdir(exist_ok=True)
    path.rename(final)
    remember(seen, signature, problem.id)
    return {**base, "id": problem.id, "difficulty": spec.difficulty, "split": meta["split"],
            "aten_ops": list(signature.ops), "near_duplicate": signature.near_duplicate,
            "fingerprint": signature.fingerprint, "source": source}
