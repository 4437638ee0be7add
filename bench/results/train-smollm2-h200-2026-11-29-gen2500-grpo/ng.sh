# right after na.sh on the same warm machine: the GRPO phase for PHASE_TIMEOUT seconds from the carried SFT
# state (.carry/run), then what its rollouts were: statuses, rewards, and the start of a few completions
set -o pipefail
PHASES=grpo bash .carry/s/n6.sh > $OUT/n6.log 2>&1; echo "n6 rc $?"; grep "run rc" $OUT/n6.log
cp /tmp/run/grpo/rollouts.jsonl /tmp/run/grpo/metrics.jsonl $OUT/ 2>/dev/null
python3 - <<'PY'
import json, collections
rs = [json.loads(l) for l in open('/tmp/run/grpo/rollouts.jsonl') if l.strip()]
print("rollouts", len(rs), collections.Counter(r["status"] for r in rs))
for step in sorted({r["step"] for r in rs}):
    s = [r for r in rs if r["step"] == step]
    print("step", step, "mean reward", round(sum(r["reward"] for r in s) / len(s), 3), collections.Counter(r["status"] for r in s))
for r in rs[:: max(1, len(rs) // 4)]:
    print(r["problem_id"], r["status"], repr(r["completion"][:160]))
PY
grep '"phase": "grpo"' /tmp/run/grpo/metrics.jsonl | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l); print({k: r.get(k) for k in ('step', 'reward', 'reward_std', 'completions/mean_length', 'completions/clipped_ratio', 'kernelrl/correct_rate', 'kernelrl/generation_seconds', 'kernelrl/eval_seconds', 'step_time')})"
