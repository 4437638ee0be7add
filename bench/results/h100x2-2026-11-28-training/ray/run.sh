# The command as run on the GPU host, from the repository root, OUT a results folder. .carry/a/install.sh
# (where it appears) installed the ray and serve extras from carried wheels into /tmp/site.
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
bash .carry/a/install.sh > $OUT/install.log 2>&1
pip install --no-deps -e . -q >/dev/null 2>&1
nvidia-smi -L > $OUT/gpus.txt
vmstat -n 1 > $OUT/vmstat-ray-training.txt &
python3 bench/scaling.py --via ray --gpus 1,2 --rounds 4 --profile training --cache-dir /tmp/kr-cache \
  --json $OUT/scaling-training-ray.json 2>&1 | grep -v ' INFO \|^\s*$' | tee -a $OUT/rows.log
kill %1
