"""g08 (and g05, h18) on whichever kernelrl is on PYTHONPATH: census checks off, static off, as the GPU corpus test."""
import sys, time, kernelrl
from pathlib import Path
from kernelrl import load_suite, VerdictSettings
from kernelrl.evaluate.evaluator import Evaluator

CENSUS = ("rt-aten-op", "rt-host-read", "rt-output-provenance", "rt-census-tampered")
cases = ["tests/exploits_runtime/g08_honest_only_when_measured.py", "tests/exploits_runtime/g05_graph_replay_matmul.py",
         "tests/exploits/h18_relu_zeros_atomic.py"]
print("kernelrl from", kernelrl.__file__, flush=True)
with Evaluator(device="cuda", verdict=VerdictSettings(static_checks=False)) as ev:
    for path in cases:
        p = Path(path)
        if not p.exists():
            matches = sorted(Path("tests/exploits").glob(p.name.split("_")[0] + "_*.py"))
            if not matches:
                continue
            p = matches[0]
        head = {l.split(":", 1)[0][2:].strip(): l.split(":", 1)[1].strip() for l in p.read_text().splitlines()
                if l.startswith("# ") and ":" in l}
        prob = head.get("problem", "level1/2_matmul_square")
        t = time.monotonic()
        r = ev.evaluate(load_suite().get(prob), p.read_text(),
                        verdict=VerdictSettings(static_checks=False, runtime_policy={c: "off" for c in CENSUS}))
        tm = r.timing
        print(sys.argv[1], p.name, r.status.value, "|", r.message[:160], "| share", tm and tm.kernel_gpu_fraction,
              tm and tm.kernel_gpu_fraction_method, "| speedup", tm and tm.speedup_vs_eager,
              f"| {time.monotonic() - t:.1f} s", flush=True)
