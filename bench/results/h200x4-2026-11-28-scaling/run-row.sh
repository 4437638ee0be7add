# usage: bash .carry/s/x4.sh NAME VIA GPUS ROUNDS [PROFILE]; rows to $OUT/NAME.json, log to $OUT/rows.log
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
[ -d /tmp/site/ray ] || bash .carry/r/install.sh > $OUT/install.log 2>&1
nvidia-smi -L > $OUT/gpus.txt; nvidia-smi topo -m > $OUT/topology.txt 2>&1
vmstat -n 1 > $OUT/vmstat-$1.txt &
python3 bench/scaling.py --via $2 --gpus $3 --rounds $4 --profile ${5:-default} --cache-dir /tmp/kr-cache \
  --json $OUT/$1.json 2>&1 | grep -v ' INFO \|^\s*$' | tee -a $OUT/rows.log
kill %1
