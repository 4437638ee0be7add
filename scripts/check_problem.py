"""Developer check for suite authors: run a problem's reference on its input sets and, optionally, a Triton
solution in the interpreter (CPU), comparing outputs at the evaluator's tolerance. In-process and unsandboxed:
for trusted files only (use `kernelrl eval` for candidates).

Usage: TRITON_INTERPRET=1 python scripts/check_problem.py PROBLEM.py [SOLUTION.py] [--sets check,sweep_odd]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

from kernelrl.problems.input_sets import call_with  # noqa: E402
from kernelrl.verify.tolerance import tolerance_for  # noqa: E402


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def flat(out):
    return [out] if isinstance(out, torch.Tensor) else list(out)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem")
    parser.add_argument("solution", nargs="?")
    parser.add_argument("--sets", default=None, help="comma-separated set names (default: all but bench)")
    args = parser.parse_args()
    problem = load(args.problem, "problem_under_check")
    solution = load(args.solution, "solution_under_check") if args.solution else None
    sets = problem.get_input_sets() if hasattr(problem, "get_input_sets") else {"default": {}}
    names = args.sets.split(",") if args.sets else [n for n in sets if n != "bench"]
    ok = True
    for name in names:
        params = sets[name]
        torch.manual_seed(42)
        init = call_with(problem.get_init_inputs, params)
        torch.manual_seed(42)
        ref_model = problem.Model(*init)
        outs = []
        for seed in (1, 2):
            torch.manual_seed(seed)
            inputs = call_with(problem.get_inputs, params)
            with torch.no_grad():
                outs.append((inputs,
                             flat(ref_model(*[x.clone() if isinstance(x, torch.Tensor) else x
                                              for x in inputs]))))
        (inputs, ref), (_, ref2) = outs
        mags = [float(t.float().abs().mean()) for t in ref]
        dependent = any(not torch.allclose(a, b, atol=1e-4, rtol=1e-4)
                        for a, b in zip(ref, ref2, strict=True))
        zeros = all(torch.allclose(torch.zeros_like(t), t, atol=1e-4, rtol=1e-4) for t in ref)
        line = f"{name}: outputs {[tuple(t.shape) for t in ref]} mean|out| {[f'{m:.3g}' for m in mags]}"
        if not dependent or zeros:
            ok = False
            line += "  DEGENERATE (input-independent or all-zeros passes)"
        if solution is not None:
            torch.manual_seed(42)
            init = call_with(problem.get_init_inputs, params)
            torch.manual_seed(42)
            model = solution.ModelNew(*init)
            with torch.no_grad():
                got = flat(model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
            for i, (e, a) in enumerate(zip(ref, got, strict=False)):
                tol = tolerance_for([str(e.dtype).removeprefix("torch.")])  # the evaluator's tolerance
                good = (e.shape == a.shape and e.dtype == a.dtype
                        and torch.allclose(e, a, atol=tol.atol, rtol=tol.rtol))
                if not good:
                    ok = False
                    err = (e.double() - a.double()).abs().max().item() if e.shape == a.shape else "shape"
                    line += f"  SOLUTION MISMATCH output {i}: max abs err {err}"
            if ok:
                line += "  solution ok"
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
