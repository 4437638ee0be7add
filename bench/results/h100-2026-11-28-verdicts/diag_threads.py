"""Which threads appear in sandbox processes while an honest candidate (h19) runs on a GPU: every 0.2 s, for
every process whose cmdline mentions kernelrl.sandbox, new task ids with comm, wchan and the library their
program counter is in (/proc/PID/task/TID/syscall + maps; root)."""
import os, sys, threading, time, json
from kernelrl import Evaluator, VerdictSettings, load_suite

seen = {}
stop = False

def lib_of(pid, pc):
    try:
        for line in open(f"/proc/{pid}/maps"):
            a, rest = line.split(" ", 1)
            lo, hi = (int(x, 16) for x in a.split("-"))
            if lo <= pc < hi:
                return rest.split()[-1] if len(rest.split()) >= 5 else "[anon]"
    except OSError:
        pass
    return "?"

def monitor(out):
    while not stop:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            if b"kernelrl" not in cmd or pid == str(os.getpid()):
                continue
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                key = (pid, tid)
                if key in seen:
                    seen[key]["last"] = time.monotonic()
                    continue
                d = {"pid": pid, "tid": tid, "first": time.monotonic(), "last": time.monotonic()}
                for f in ("comm", "wchan"):
                    try:
                        d[f] = open(f"/proc/{pid}/task/{tid}/{f}").read().strip()
                    except OSError:
                        pass
                try:
                    parts = open(f"/proc/{pid}/task/{tid}/syscall").read().split()
                    d["syscall"] = parts[0]
                    d["lib"] = lib_of(pid, int(parts[-1], 16)) if len(parts) > 2 else "running"
                except (OSError, ValueError):
                    pass
                seen[key] = d
        time.sleep(0.2)

t = threading.Thread(target=monitor, args=(None,), daemon=True)
t.start()
code = open(sys.argv[1]).read()
with Evaluator(device="cuda", verdict=VerdictSettings(trials=2, runtime_policy={"rt-native-thread": "warn"})) as ev:
    start = time.monotonic()
    r = ev.evaluate(load_suite().get("level0/1_relu"), code)
    print(r.status.value, r.message, [(f.rule, f.detail) for f in r.findings], r.phases_s, flush=True)
time.sleep(0.5)
stop = True
for d in seen.values():
    d["lived"] = round(d["last"] - d["first"], 2)
    d["first"] = round(d["first"] - start, 2)
    d.pop("last")
rows = sorted(seen.values(), key=lambda d: (d["pid"], int(d["tid"])))
for d in rows:
    if d["first"] > 0:
        print(json.dumps(d))
