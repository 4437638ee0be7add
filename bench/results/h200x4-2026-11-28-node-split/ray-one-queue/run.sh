# call on the x4 host: Ray from both parts; Ray pool rows on 1 and 4 GPUs, both with the evaluator's one work queue
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
[ -f /tmp/raypart.aa ] || { echo "fresh machine: no /tmp/raypart.aa"; exit 3; }
if [ ! -d /tmp/site/ray ]; then
  cat /tmp/raypart.aa .carry/rb/raypart.ab > /tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    /tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl .carry/rb/*.whl > $OUT/install.log 2>&1 || { tail $OUT/install.log; exit 1; }
fi
nvidia-smi -L > $OUT/gpus.txt
vmstat -n 1 > $OUT/vmstat-ray-1-4-q1.txt & vm=$!
timeout 540 python3 bench/scaling.py --via ray --gpus 1,4 --rounds 4 --work-queues 1 --cache-dir /tmp/kr-cache \
  --json $OUT/ray-1-4-q1.json 2>&1 | grep -v ' INFO \|^\s*$' | tee -a $OUT/rows.log
echo "rows rc $?"; kill $vm
