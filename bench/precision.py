"""rt-low-precision on honest kernels: every reference solution of the built-in suite and every honest twin
of the exploit corpus (tests/exploits/h*.py), each evaluated with the check at its default policy
and then with it off, one evaluation at a time, result cache off. Prints the verdicts, every
rt-low-precision finding (an honest kernel flagged is a false finding) and the median wall
time of an evaluation with and without the check (the judge's float64 reference per trial).

  python bench/precision.py [--device cpu] [--only level1/,level2/] [--out results.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECK = "rt-low-precision"


def candidates(only: str | None, device: str) -> list[tuple[str, str, str]]:
    """(label, problem id, code) of the reference solutions
    and the honest twins (the CUDA-only ones on a GPU)."""
    from kernelrl import load_suite

    suite = load_suite()
    found = []
    for problem in suite.problems:
        path = suite.solution_path(problem)
        if path is not None and (not only or any(problem.id.startswith(p) for p in only.split(","))):
            found.append((f"solution {problem.id}", problem.id, path.read_text()))
    for path in sorted((ROOT / "tests" / "exploits").glob("h[0-9][0-9]_*.py")):
        text = path.read_text()
        header = dict(re.findall(r"^# (\w+): (.*)$", text, re.M))
        runs_here = header.get("device", "cpu") in ("cpu", "gpu" if device.startswith("cuda") else "cpu")
        if runs_here and (not only or any(header["problem"].startswith(p) for p in only.split(","))):
            found.append((f"honest {path.stem}", header["problem"], text))
    return found


def run(device: str, items: list[tuple[str, str, str]], policy: str | None, timing: bool,
        out: str | None = None) -> list[dict]:
    """Each candidate with the check at `policy` (None: its default on the device), then with it off, one
    evaluation at a time (so the two see the same load)."""
    from kernelrl import Evaluator, VerdictSettings, load_suite

    suite = load_suite()
    rows = []
    # one evaluator, the check's policy per call
    on = VerdictSettings(timing=timing, runtime_policy={CHECK: policy} if policy else None)
    off = VerdictSettings(timing=timing, runtime_policy={CHECK: "off"})
    with Evaluator(device=device, result_cache=False) as ev:
        for label, pid, code in items:
            for name, verdict in (("on", on), ("off", off)):
                result = ev.evaluate(suite.get(pid), code, verdict=verdict)
                flagged = [f.detail for f in result.findings if f.rule == CHECK]
                # GPU: what the admission keeps back for the judge's float64 runs, learned so far
                reserve = (ev.gpu_memory() or {}).get("judge_reserve_bytes")
                rows.append({"label": label, "problem": pid, "check": name, "status": str(result.status),
                             "wall_s": round(result.wall_time_s, 3), "flagged": flagged,
                             "judge_reserve_bytes": reserve})
                if out:  # as it goes: a run cut short keeps what it measured
                    with open(out, "a") as f:
                        f.write(json.dumps(rows[-1]) + "\n")
                print(f"{name:3s} {label:55s} {result.status!s:14s} {result.wall_time_s:6.2f}s"
                      + (f"  FLAGGED: {flagged[0]}" if flagged else ""), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--only", help="comma-separated problem id prefixes")
    parser.add_argument("--out", help="JSONL of every evaluation (appended as they finish)")
    parser.add_argument("--policy", choices=["warn", "reject"],
                        help="the check's policy in the 'on' runs (default: its default on "
                             "the device; off on a GPU)")
    parser.add_argument("--no-timing", action="store_true",
                        help="correctness only (VerdictSettings.timing=False)")
    args = parser.parse_args()
    os.environ.setdefault("KERNELRL_RESULT_CACHE", "0")
    items = candidates(args.only, args.device)
    rows = run(args.device, items, args.policy, not args.no_timing, args.out)
    on = [r for r in rows if r["check"] == "on"]
    off = [r for r in rows if r["check"] == "off"]
    flagged = [r for r in on if r["flagged"]]
    print(f"\n{len(items)} honest candidates ({sum(r['label'].startswith('solution') for r in on)} reference "
          f"solutions); correct with the check: {sum(r['status'] == 'correct' for r in on)}, without: "
          f"{sum(r['status'] == 'correct' for r in off)}; flagged rt-low-precision: {len(flagged)}"
          + "".join(f"\n  {r['label']}: {r['flagged'][0]}" for r in flagged))
    print(f"median wall per evaluation: {statistics.median(r['wall_s'] for r in on):.2f} s with the check, "
          f"{statistics.median(r['wall_s'] for r in off):.2f} s without")
    reserves = [r["judge_reserve_bytes"] for r in rows if r.get("judge_reserve_bytes") is not None]
    if reserves:
        print(f"the admission's reserve for the judge's float64 runs: {max(reserves) / 2**30:.2f} GiB "
              "at the end")
    sys.exit(0)


if __name__ == "__main__":
    main()
