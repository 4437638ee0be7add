# interleaved 4-GPU Ray pool rows on the same warm machine (Ray already installed by x4b.sh):
# CUDA's default work queues, then CUDA_DEVICE_MAX_CONNECTIONS=1 for every process, then the default again
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
row() {  # NAME GPUS ROUNDS [ENV=VAL...]
  name=$1; gpus=$2; rounds=$3; shift 3
  vmstat -n 1 > $OUT/vmstat-$name.txt & vm=$!
  env "$@" timeout 170 python3 bench/scaling.py --via ray --gpus $gpus --rounds $rounds --cache-dir /tmp/kr-cache \
    --json $OUT/$name.json 2>&1 | grep -v ' INFO \|^\s*$' | grep -v 'logging.cc\|^    @\|^PC: \|SIGTERM\|RAW:' | tee -a $OUT/rows.log
  kill $vm
}
row ray-4-default-a 4 4 X=1
row ray-4-one-connection-b 4 4 CUDA_DEVICE_MAX_CONNECTIONS=1
row ray-4-default-c 4 4 X=1
