# one call: Ray unpacked from a pruned, xz-compressed install (no Java jars, no RLlib, no source maps: 26 MB),
# then the Ray pool's training-profile rows on 1 and 2 GPUs with the evaluator's one hardware work queue
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
mkdir -p /tmp/site && tar xJf .carry/rx/ray-site.tar.xz -C /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry/rx/*.whl \
  > $OUT/install.log 2>&1 || { tail $OUT/install.log; exit 1; }
nvidia-smi -L > $OUT/gpus.txt; nproc >> $OUT/gpus.txt
vmstat -n 1 > $OUT/vmstat-ray-training-q1.txt & vm=$!
timeout ${LIMIT:-430} python3 bench/scaling.py --via ray --gpus 1,2 --rounds 4 --profile training --work-queues 1 \
  --cache-dir /tmp/kr-cache --json $OUT/scaling-training-ray-q1.json 2>&1 | grep -v ' INFO \|^\s*$' | tee -a $OUT/rows.log
echo "rows rc $?"; kill $vm
