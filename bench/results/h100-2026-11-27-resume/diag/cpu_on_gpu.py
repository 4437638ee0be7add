"""Device-only diag: CPU-mode evaluations on a GPU host (test_pool's pooled fixture timed out at import there)."""
import glob, os, subprocess, sys, threading, time
sys.path.insert(0, "tests")
from conftest import example
from kernelrl import Evaluator
from kernelrl.problems import load_suite  # noqa

def procs_in(pgids):
    out = []
    for st in glob.glob("/proc/[0-9]*/stat"):
        try:
            pid = int(st.split("/")[2]); f = open(st).read().rsplit(")", 1)[1].split()
            if int(f[2]) in pgids:
                info = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status") if ":" in l)
                out.append((pid, info["Uid"].split()[0], info["VmSize"].strip(), info["VmRSS"].strip(), info["Threads"].strip()))
        except Exception:
            pass
    return out

def dump_all_children(tag):
    me = os.getpid()
    for st in glob.glob("/proc/[0-9]*/status"):
        try:
            info = dict(l.split(":", 1) for l in open(st) if ":" in l)
            pid = int(st.split("/")[2])
            if pid != me and "python" in info.get("Name", "") and info["Uid"].split()[0] == "65534":
                print(f"--- py-spy {tag} pid {pid} VmSize {info['VmSize'].strip()} Threads {info['Threads'].strip()}", flush=True)
                r = subprocess.run(["py-spy", "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30)
                print(r.stdout[-4000:], r.stderr[-500:], flush=True)
        except Exception as exc:
            print("dump failed", exc)

suite = load_suite()
relu = suite.get("level0/1_relu")
for warm, mem, standbys in ((True, 4, 3), (True, 16, 3), (True, 4, 0), (False, 4, 0)):
    kw = dict(device="cpu", trials=2, run_timeout_s=8, compile_timeout_s=30, memory_limit_gb=mem,
              static_checks=False, warm_pool=warm, max_concurrency=3)
    if warm:
        kw["standby_sandboxes"] = standbys
    t0 = time.time()
    with Evaluator(**kw) as ev:
        if warm:
            ev.warm_up()
            time.sleep(3)
            pg = {s.child.pgid for s in ev.launcher.standbys}
            print("standby procs (pid uid VmSize VmRSS Threads):", procs_in(pg), flush=True)
        timer = threading.Timer(12, dump_all_children, args=(f"warm={warm} mem={mem}",))
        timer.start()
        r = ev.evaluate(relu, example("relu_triton.py"))
        timer.cancel()
    print(f"== warm_pool={warm} memory_limit_gb={mem} standbys={standbys}: {r.status.value} stage={r.stage} "
          f"wall={r.wall_time_s:.2f} iso={r.environment.isolation} total={time.time()-t0:.1f}s", flush=True)
    print("   feedback:", (r.feedback or "")[:400].replace("\n", " | "), flush=True)
    print("   log:", (r.log or "")[-1500:].replace("\n", " | "), flush=True)
