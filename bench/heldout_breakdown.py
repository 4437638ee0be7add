"""A held-out evaluation of a training run, broken down: per family and per difficulty, the problems the
evaluator refused (their audit: they cannot grade a kernel, so they are counted apart), and how original the
correct programs are (distinct programs; copies of the problem's own reference solution, which training never
saw; copies of a training-split solution, which it did: count those out of a learning claim).

    python bench/heldout_breakdown.py RUN/sft/heldout/sft-greedy-step693 --suite gen-2500 [--json OUT.json]
        [--verdicts OUT.jsonl] [--against OTHER]

Reads the directory's trajectories.jsonl (one row per completion: problem_id, family, level, result).
--verdicts writes one line per completion (problem_id, family, level, status, message); --against compares the
problems solved with another model's on the same problems (OTHER: its held-out directory or such a verdicts
file), so a training phase's gain is the problems it gained minus those it lost, named.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections import Counter, defaultdict
from pathlib import Path

from kernelrl.problems import load_suite
from kernelrl.report.originality import program_counts, program_of, reference_programs, training_copies


def breakdown(heldout_dir: Path, suite_dir: str) -> dict:
    rows = [json.loads(line) for line in (heldout_dir / "trajectories.jsonl").open()]
    suite = load_suite(suite_dir)
    refused = sorted({r["problem_id"] for r in rows if r["result"]["status"] == "unsupported"})
    groups: dict[str, dict] = {"family": defaultdict(Counter), "difficulty": defaultdict(Counter)}
    solved: dict[str, bool] = {}
    programs = []
    for r in rows:
        ok = r["result"]["status"] == "correct"
        solved[r["problem_id"]] = solved.get(r["problem_id"], False) or ok
        for key, value in (("family", r["family"]), ("difficulty", r["level"])):
            counts = groups[key][str(value)]
            counts["attempts"] += 1
            counts[r["result"]["status"]] += 1  # "correct" among them
        if ok and r.get("code"):
            programs.append(program_of(r["problem_id"], r["code"]))
    gradable = [p for p in solved if p not in refused]
    own = program_counts(programs, reference_programs(suite))[0]
    return {
        "dir": str(heldout_dir), "suite": suite_dir, "completions": len(rows), "problems": len(solved),
        "solved": sum(solved.values()), "refused_by_audit": refused,
        "solved_of_gradable": f"{sum(solved[p] for p in gradable)}/{len(gradable)}",
        "family": {k: dict(v) for k, v in sorted(groups["family"].items())},
        "difficulty": {k: dict(v) for k, v in sorted(groups["difficulty"].items(),
                                                     key=lambda kv: int(kv[0]))},
        "own_reference": {"verbatim": own.verbatim, "near_duplicate": own.near_duplicate},
        "training_copies": dataclasses.asdict(training_copies(programs, suite)),
    }


def solved_problems(path: Path) -> dict[str, bool]:
    """Problem id -> solved by any completion, from a held-out directory or a --verdicts file."""
    lines = (path / "trajectories.jsonl" if path.is_dir() else path).read_text().splitlines()
    solved: dict[str, bool] = {}
    for line in lines:
        row = json.loads(line)
        status = row["result"]["status"] if "result" in row else row["status"]
        solved[row["problem_id"]] = solved.get(row["problem_id"], False) or status == "correct"
    return solved


def compare(heldout_dir: Path, other: Path) -> dict:
    mine, theirs = solved_problems(heldout_dir), solved_problems(other)
    if set(mine) != set(theirs):
        raise SystemExit(f"{other} holds other problems than {heldout_dir}: not comparable")
    return {"other": str(other), "solved": sum(mine.values()), "other_solved": sum(theirs.values()),
            "gained": sorted(p for p in mine if mine[p] and not theirs[p]),
            "lost": sorted(p for p in mine if theirs[p] and not mine[p])}


def write_verdicts(heldout_dir: Path, out: Path) -> None:
    with out.open("w") as f:
        for line in (heldout_dir / "trajectories.jsonl").read_text().splitlines():
            row = json.loads(line)
            result = row["result"]
            verdict = {"problem_id": row["problem_id"], "family": row["family"], "level": row["level"],
                       "status": result["status"], "message": (result.get("message") or "")[:200]}
            f.write(json.dumps(verdict) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("heldout_dir", type=Path)
    parser.add_argument("--suite", required=True, help="the suite directory the run trained on")
    parser.add_argument("--json", type=Path, help="write the breakdown here too")
    parser.add_argument("--verdicts", type=Path, help="write one line per completion here")
    parser.add_argument("--against", type=Path, help="another model's held-out directory or verdicts file")
    args = parser.parse_args()
    found = breakdown(args.heldout_dir, args.suite)
    if args.against:
        found["against"] = compare(args.heldout_dir, args.against)
    print(f"{found['dir']}: {found['completions']} completions, {found['problems']} problems, "
          f"{found['solved']} solved ({found['solved_of_gradable']} of those the audit does not refuse)")
    print(f"refused by the audit: {len(found['refused_by_audit'])} {found['refused_by_audit']}")
    for key in ("family", "difficulty"):
        rows = (f"{k} {v.get('correct', 0)}/{v['attempts']}" for k, v in found[key].items())
        print(f"by {key}: " + ", ".join(rows))
    copies = found["training_copies"]
    print(f"correct programs: {copies['correct']}, distinct {copies['distinct']}; the problem's own "
          f"reference (never trained on) verbatim {found['own_reference']['verbatim']}, other constants "
          f"{found['own_reference']['near_duplicate']}; a training solution verbatim {copies['verbatim']}, "
          f"other constants {copies['near_duplicate']}")
    if args.against:
        against = found["against"]
        print(f"against {against['other']}: {against['solved']} solved against {against['other_solved']}; "
              f"gained {len(against['gained'])} {against['gained']}, "
              f"lost {len(against['lost'])} {against['lost']}")
    if args.verdicts:
        write_verdicts(args.heldout_dir, args.verdicts)
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
