"""GPU evaluations with the separate uid (now the default on a GPU too): verdicts, applied layers, times."""
import sys, time
from pathlib import Path
from kernelrl import EvalConfig, Evaluator, load_suite
suite = load_suite()
root = Path("src/kernelrl/problems/suites/builtin/solutions")
cases = [(n, (root / f"{n}.py").read_text()) for n in
         ["level1/3_matmul_tall_skinny", "level1/24_layernorm", "level1/9_conv1d", "level1/16_attention"]]
cases.append(("level0/1_relu", Path("src/kernelrl/examples/relu_cuda.py").read_text()))  # CUDA C++ build under the uid
for uid in (65534, None):
    with Evaluator(EvalConfig(device="cuda", inductor_baseline=False, result_cache=False, candidate_uid=uid)) as ev:
        for name, code in cases:
            t = time.monotonic()
            r = ev.evaluate(suite.get(name), code + f"\n# uid diag {uid}\n")
            print(f"uid={uid} {name}: {r.status.value} {time.monotonic() - t:.1f}s speedup {r.timing.speedup_vs_eager if r.timing else None} "
                  f"separate-uid={'separate-uid' in (r.environment.isolation if r.environment else [])} phases {r.phases_s}", flush=True)
            if r.status.value != "correct":
                print("   ", r.message, r.feedback[:800], r.log[-800:])
