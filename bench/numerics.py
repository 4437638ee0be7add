"""False rejections of honest kernels: how often a right answer is judged `wrong_output`, under plain allclose
(before the tolerance model) and under the model (kernelrl.verify.tolerance: an element may also be within
atol + rtol*|exact| + k*|reference - exact| of the reference recomputed in float64).

  python bench/numerics.py [--seeds 5] [--only level1/6_matvec,level2/] [--device cpu] [--trials 5]
  python bench/numerics.py --long-seeds 10 --seeds 0       # only the production-size simulation (no sandbox)

Two parts, numbers printed, nothing checked:

- `evaluations`: every reference solution of the built-in suite whose problem reduces over a long dimension
  (tags: reduction, gemm/gemv, conv, attention, normalization, scans, losses, RNN cells) evaluated through the
  real evaluator with `--seeds` fresh secret seeds each, each seed twice: with `reference_error_k=0` (before)
  and with the default k (after), on the same inputs (the master seed is drawn here, secretly at random, and
  given to both). A reference solution is right by construction, so every `wrong_output` is a false rejection.
  In CPU mode the correctness sets are the problems' small check and sweep sets (the interpreter is slow).
- `long reductions`: at the sizes where the H100 saw false rejections (the matvec's inner dimension 24,576,
  the large-K matmul's 131,072), no sandbox: an honest fp32 kernel's summation order (K in blocks of 512
  accumulated in fp32, as the reference solutions' Triton kernels do) against torch's fp32 reference, judged
  by the same comparison code as the judge's, per trial (one fresh input draw) before and after.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time

LONG_TAGS = {"reduction", "gemm", "gemv", "bmm", "conv", "conv1d", "conv2d", "attention", "normalization",
             "layernorm", "rmsnorm", "groupnorm", "batchnorm", "scan", "loss", "rnn", "dot", "mlp", "pooling"}


def _selected(pid: str, only: str | None) -> bool:
    return not only or any(pid.startswith(part) for part in only.split(","))


def evaluations(args) -> None:
    from kernelrl import Evaluator, Status, VerdictSettings, load_suite

    suite = load_suite()
    problems = [p for p in suite
                if suite.solution_path(p) is not None and LONG_TAGS & set(p.metadata.get("tags", []))
                and _selected(p.id, args.only)
                and not (args.device == "cpu" and p.metadata.get("dtype") == "bfloat16")]
    print(f"evaluations: {len(problems)} reference solutions of long-reduction problems x {args.seeds} fresh "
          f"seeds, device {args.device}, {args.trials} trials each on input sets "
          f"{args.input_sets or 'default'}, before (k=0) and after (k={args.k:g}) on the same seeds")
    totals = {"before": 0, "after": 0, "widened_evals": 0, "widened_trials": 0, "evals": 0, "other": 0}
    started = time.monotonic()
    common = dict(trials=args.trials, timing=False,
                  input_sets=tuple(args.input_sets.split(",")) if args.input_sets else None)
    before, after = (VerdictSettings(reference_error_k=0.0, **common),
                     VerdictSettings(reference_error_k=args.k, **common))
    with Evaluator(device=args.device, result_cache=False, run_timeout_s=1800.0,
                   judge_timeout_s=1800.0) as ev:
        for problem in problems:
            code = suite.solution_path(problem).read_text()
            row = {"before": 0, "after": 0, "widened": 0, "other": []}
            for _ in range(args.seeds):
                seed = secrets.randbits(62)
                old = _with_seed(ev, before, problem, code, seed)
                new = _with_seed(ev, after, problem, code, seed)
                row["before"] += old.status is Status.WRONG_OUTPUT
                row["after"] += new.status is Status.WRONG_OUTPUT
                widened = new.correctness.trials_within_reference_error if new.correctness else 0
                row["widened"] += widened > 0
                totals["widened_trials"] += widened
                for r in (old, new):
                    if r.status not in (Status.CORRECT, Status.WRONG_OUTPUT):
                        row["other"].append(f"{r.status.value}: {r.message[:80]}")
            totals["before"] += row["before"]
            totals["after"] += row["after"]
            totals["widened_evals"] += row["widened"]
            totals["evals"] += args.seeds
            totals["other"] += len(row["other"])
            if row["before"] or row["after"] or row["widened"] or row["other"] or args.verbose:
                print(f"  {problem.id:42s} wrong_output before {row['before']}/{args.seeds}, "
                      f"after {row['after']}/{args.seeds}; passed only within the float64 "
                      f"allowance: {row['widened']}"
                      + (f"; other verdicts: {row['other'][:2]}" if row["other"] else ""), flush=True)
    print(f"  total: {totals['evals']} evaluations of honest kernels; false wrong_output before "
          f"{totals['before']}, after {totals['after']}; evaluations where a trial passed only within the "
          f"float64 allowance {totals['widened_evals']} ({totals['widened_trials']} trials); other verdicts "
          f"{totals['other']}; {time.monotonic() - started:.0f} s")


def _with_seed(evaluator, verdict, problem, code: str, seed: int):
    """One evaluation with this master seed, so that both tolerance models see the same inputs (the seed is a
    per-call verdict setting: nothing restarts)."""
    import dataclasses

    return evaluator.evaluate(problem, code, verdict=dataclasses.replace(verdict, seed=seed))


def long_reductions(args) -> None:
    import torch

    from kernelrl.verify.compare import compare_outputs
    from kernelrl.verify.exact import double_model, reference_errors

    class MatMul(torch.nn.Module):
        def forward(self, a, b):
            return a @ b

    # a Triton kernel's K loop: fp32 partial products accumulated block by block
    def blocked(a, b, block=512):
        acc = torch.zeros(a.shape[0], *b.shape[1:], dtype=torch.float32)
        for k0 in range(0, a.shape[1], block):
            acc += a[:, k0:k0 + block] @ b[k0:k0 + block]
        return acc

    # (name, inputs for a generator); shapes as the problems' bench sets, rows cut to fit this machine
    cases = [
        ("level1/6_matvec bench (m=4096 of 16384, k=24576)",
         lambda g: [torch.randn(4096, 24576, generator=g), torch.randn(24576, generator=g)]),
        ("level1/7_matmul_large_k bench (m=64 of 512, k=131072, n=512)",
         lambda g: [torch.randn(64, 131072, generator=g) * 131072 ** -0.5,
                    torch.randn(131072, 512, generator=g)]),
    ]
    print(f"long reductions: an honest blocked fp32 sum vs torch's fp32 reference, {args.long_seeds} fresh "
          f"draws each, atol=rtol=1e-4, k={args.k:g}")
    model = double_model(MatMul())
    for name, draw in cases:
        before = after = 0
        worst = 0.0
        started = time.monotonic()
        for _ in range(args.long_seeds):
            generator = torch.Generator().manual_seed(secrets.randbits(62))
            a, b = draw(generator)
            ref = a @ b
            cand = blocked(a, b.unsqueeze(-1) if b.dim() == 1 else b)
            cand = cand.squeeze(-1) if b.dim() == 1 else cand
            found = compare_outputs([ref], [cand], 1e-4, 1e-4)
            before += found is not None
            if found is not None:
                worst = max(worst, found["max_abs_error"])
                errors, why = reference_errors(model, [a, b], [ref])
                after += compare_outputs([ref], [cand], 1e-4, 1e-4, errors, args.k) is not None
        print(f"  {name}: trials rejected before {before}/{args.long_seeds}, after {after}/{args.long_seeds} "
              f"(largest rejected difference {worst:.3g}); {time.monotonic() - started:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5,
                        help="fresh secret seeds per reference solution (0: skip)")
    parser.add_argument("--long-seeds", type=int, default=5, help="draws per production-size case (0: skip)")
    parser.add_argument("--only", default=None,
                        help="problem id prefixes, comma-separated (level1/,level2/4_)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--input-sets", default=None, help="correctness input sets, comma-separated "
                        "(e.g. bench: the production sizes, feasible in CPU mode for a few problems "
                        "such as level1/6_matvec)")
    parser.add_argument("--k", type=float, default=None, help="the model's k (default: REFERENCE_ERROR_K)")
    parser.add_argument("--verbose", action="store_true", help="a line for every problem")
    args = parser.parse_args()
    from kernelrl.verify.tolerance import REFERENCE_ERROR_K

    args.k = REFERENCE_ERROR_K if args.k is None else args.k
    if args.seeds:
        evaluations(args)
    if args.long_seeds:
        long_reductions(args)


if __name__ == "__main__":
    sys.exit(main())
