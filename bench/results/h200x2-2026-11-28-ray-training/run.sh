# the Ray pool's training-profile rows on 1 and 2 GPUs (the retry that waits only for slot holders)
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
cat /tmp/raypart.aa .carry/rb/raypart.ab > /tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  /tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl .carry/rb/*.whl > $OUT/install.log 2>&1 || { tail $OUT/install.log; exit 1; }
nvidia-smi -L > $OUT/gpus.txt
vmstat -n 1 > $OUT/vmstat-ray-training.txt &
timeout 540 python3 bench/scaling.py --via ray --gpus 1,2 --rounds 4 --profile training --cache-dir /tmp/kr-cache \
  --json $OUT/scaling-training-ray.json 2>&1 | grep -v ' INFO \|^\s*$' | tee -a $OUT/rows.log
kill %1
