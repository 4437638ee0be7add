"""A generated sample, timed: `kernelrl.problems.generate` writes `--n` problems with both kinds of
solution (template and Inductor-derived), the evaluator keeps those correct without findings, and every kept
solution is evaluated again with timing on. Writes DIR/sample.jsonl (one line per problem: family,
difficulty, dtype, the bench set's eager and torch.compile ms; per solution kind: verdict, ms, speedup vs
eager and vs compile) and prints per family: problems, bench eager ms min/median/max (and how many fall
outside 0.5-50 ms), per kind kept/total and the median speedup over eager.

  python bench/generated_sample.py --n 200 --seed 7 --out DIR --device cuda:0   # a GPU machine
  python bench/generated_sample.py --n 10 --out DIR --device cpu                  # smoke test: no timing

Resumable: the set is generated and its solutions verified once (DIR/gen, then DIR/generated.json records
what was asked), each timed solution is appended to DIR/timed.jsonl as it finishes, and the same command run
again (after a time limit stopped it) times only the solutions not yet there.

On the CPU nothing is timed (timing is null) and the Inductor seeds come from Inductor's Triton codegen for
the CPU, run by the Triton interpreter.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from kernelrl import VerdictSettings, load_suite, open_scorer
from kernelrl.problems.generate import generate, verify_solutions
from kernelrl.problems.generate.solutions import SOLUTION_KINDS

EAGER_RANGE_MS = (0.5, 50.0)  # what a bench set should take in eager mode on an H100
PROBLEM_FIELDS = ("id", "kind", "eager_ms", "compile_ms")  # a timed.jsonl line's fields not the solution's


def _timed(result) -> dict:
    """One solution's verdict and speeds, and the problem's eager and torch.compile times where it was
    timed."""
    timing = result.timing
    row = {"verdict": result.status.value, "findings": [f.rule for f in result.findings], "ms": None,
           "speedup_vs_eager": None, "speedup_vs_compile": None, "eager_ms": None, "compile_ms": None}
    if timing is not None and timing.candidate is not None:
        row.update(ms=timing.candidate.median_ms, speedup_vs_eager=timing.speedup_vs_eager,
                   speedup_vs_compile=timing.speedup_vs_inductor)
    if timing is not None and timing.eager is not None:
        row.update(eager_ms=timing.eager.median_ms,
                   compile_ms=timing.inductor.median_ms if timing.inductor else None)
    return row


def sample(n: int, seed: int, out: Path, device: str, inductor: bool = True) -> list[dict]:
    """Generate and verify the set under OUT/gen (once), time every kept solution not yet in OUT/timed.jsonl,
    and return one row per problem."""
    gpu = device.startswith("cuda")
    gen, asked = out / "gen", {"n": n, "seed": seed, "inductor": inductor, "device": device}
    with open_scorer(device) as scorer:
        done = out / "generated.json"
        if not done.is_file() or json.loads(done.read_text()) != asked:
            seeds_on = (device if gpu else "cpu") if inductor else None
            generate(n, seed, gen, auditor=scorer, solutions=True, inductor_solutions=seeds_on)
            verify_solutions(gen, scorer, device_is_gpu=gpu)
            (out / "timed.jsonl").unlink(missing_ok=True)
            done.write_text(json.dumps(asked))
        suite = load_suite(gen)
        timed = _read_timed(out / "timed.jsonl")
        chosen = [(problem, kind, gen / "solutions" / f"{problem.id}{suffix}.py")
                  for problem in suite for kind, suffix in SOLUTION_KINDS.items()]
        chosen = [(p, kind, path) for p, kind, path in chosen if path.is_file() and (p.id, kind) not in timed]
        with (out / "timed.jsonl").open("a") as log:
            for finished in scorer.evaluate_indexed([(p, path.read_text()) for p, _, path in chosen],
                                                    verdict=VerdictSettings(timing=gpu)):
                problem, kind, _ = chosen[finished.index]
                row = {"id": problem.id, "kind": kind, **_timed(finished.result)}
                log.write(json.dumps(row, sort_keys=True) + "\n")
                log.flush()  # a time limit that stops the run keeps every finished solution
                timed[problem.id, kind] = row
    return _rows(suite, timed, json.loads((gen / "manifest.json").read_text()))


def _read_timed(path: Path) -> dict[tuple[str, str], dict]:
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(row["id"], row["kind"]): row for row in rows}


def _rows(suite, timed: dict[tuple[str, str], dict], manifest: dict) -> list[dict]:
    skipped = {row["id"]: row["reason"] for row in manifest.get("inductor_skipped", [])}
    rows = {p.id: {"id": p.id, "family": p.family, "difficulty": p.metadata["difficulty"],
                   "dtype": p.metadata["dtype"], "eager_ms": None, "compile_ms": None,
                   "solutions": {kind: None for kind in SOLUTION_KINDS}} for p in suite}
    for (pid, kind), given in timed.items():
        row = rows[pid]
        row["solutions"][kind] = {k: v for k, v in given.items() if k not in PROBLEM_FIELDS}
        if given.get("eager_ms") is not None:
            row["eager_ms"], row["compile_ms"] = given["eager_ms"], given.get("compile_ms")
    for row in rows.values():
        if row["id"] in skipped:
            row["solutions"]["inductor"] = {"verdict": "skipped", "reason": skipped[row["id"]]}
    return list(rows.values())


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x" if values else "-"


def summary(rows: list[dict]) -> str:
    lines = [f"{'family':<20} {'problems':>8} {'eager ms min/med/max':>24} {'outside':>7} "
             + " ".join(f"{kind + ' kept':>14} {'speedup':>8}" for kind in SOLUTION_KINDS)]
    for family in sorted({r["family"] for r in rows}):
        mine = [r for r in rows if r["family"] == family]
        eager = [r["eager_ms"] for r in mine if r["eager_ms"] is not None]
        spread = (f"{min(eager):.2f}/{statistics.median(eager):.2f}/{max(eager):.2f}" if eager else "null")
        outside = sum(not EAGER_RANGE_MS[0] <= ms <= EAGER_RANGE_MS[1] for ms in eager) if eager else "-"
        cells = []
        for kind in SOLUTION_KINDS:
            given = [r["solutions"][kind] for r in mine if r["solutions"][kind] is not None]
            kept = [s for s in given if s.get("verdict") == "correct" and not s["findings"]]
            speedups = [s["speedup_vs_eager"] for s in kept if s["speedup_vs_eager"] is not None]
            cells.append(f"{f'{len(kept)}/{len(mine)}':>14} {_median(speedups):>8}")
        lines.append(f"{family:<20} {len(mine):>8} {spread:>24} {outside!s:>7} " + " ".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="problems to generate")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True, help="directory (the set under OUT/gen)")
    parser.add_argument("--device", default="cuda:0", help="cuda:N, or cpu for a smoke test (no timing)")
    parser.add_argument("--no-inductor", action="store_true", help="template solutions only")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = sample(args.n, args.seed, args.out, args.device, inductor=not args.no_inductor)
    with (args.out / "sample.jsonl").open("w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    if not args.device.startswith("cuda"):
        print("timing: null on the CPU (nothing is timed); kept counts and verdicts only")
    print(summary(rows))
    print(f"eager range wanted: {EAGER_RANGE_MS[0]}-{EAGER_RANGE_MS[1]} ms (H100); "
          f"rows in {args.out / 'sample.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
