# call 2 on the x4 host: Ray installed from both parts; Ray pool rows 1 and 4 GPUs (start-up marks), then 4 GPUs
# with CUDA_DEVICE_MAX_CONNECTIONS=1 (the sandboxes' contexts with one hardware queue)
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
if [ ! -d /tmp/site/ray ]; then
  cat /tmp/raypart.aa .carry/rb/raypart.ab > /tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    /tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl .carry/rb/*.whl > $OUT/install.log 2>&1 || { tail $OUT/install.log; exit 1; }
fi
row() {  # NAME GPUS ROUNDS [ENV=VAL...]
  name=$1; gpus=$2; rounds=$3; shift 3
  vmstat -n 1 > $OUT/vmstat-$name.txt & vm=$!
  env "$@" timeout ${ROW_TIMEOUT:-300} python3 bench/scaling.py --via ray --gpus $gpus --rounds $rounds --cache-dir /tmp/kr-cache \
    --json $OUT/$name.json 2>&1 | grep -v ' INFO \|^\s*$' | tee -a $OUT/rows.log
  kill $vm
}
row ray-1-4 1,4 4 X=1
ROW_TIMEOUT=200 row ray-4-one-connection 4 4 CUDA_DEVICE_MAX_CONNECTIONS=1
