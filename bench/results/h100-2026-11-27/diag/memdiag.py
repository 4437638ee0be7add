"""One GPU evaluation of a 1 GiB-in/1 GiB-out problem's reference solution, the sandbox's allocator state per step."""
import sys
from pathlib import Path
from kernelrl import EvalConfig, Evaluator, load_suite
suite = load_suite()
name = sys.argv[1] if len(sys.argv) > 1 else "level1/1_row_softmax"
p = suite.get(name)
code = Path(f"src/kernelrl/problems/suites/builtin/solutions/{name}.py").read_text()
with Evaluator(EvalConfig(device="cuda", inductor_baseline=False, result_cache=False)) as ev:
    r = ev.evaluate(p, code + "\n# memdiag\n")
    print(name, r.status.value, f"wall {r.wall_time_s:.2f}", flush=True)
    print("\n".join(l for l in r.log.splitlines() if l.startswith("MEM")))
    print("peak fields:", {k: v for k, v in vars(r).items() if "peak" in k or "memory" in k} if hasattr(r, "__dict__") else "")
