# the overhead bound on one machine, interleaved: main (fresh timed inputs on) vs b9c8bd7 (2026-11-23) x2, fresh off once
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
mkdir -p /tmp/base && tar xzf .scratch-gpu/base-b9c8bd7.tgz -C /tmp/base
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
for v in on-1 base-1 on-2 base-2 off-1; do
  if [ $v = off-1 ]; then sed -i 's/    fresh_timed_inputs: bool = True/    fresh_timed_inputs: bool = False/' src/kernelrl/evaluate/config.py; fi
  case $v in base-*) dir=/tmp/base; pp=/tmp/base/src:/tmp/site;; *) dir=$PWD; pp=/tmp/site;; esac
  (cd $dir && PYTHONPATH=$pp timeout 100 python3 bench/throughput.py --device cuda --modes pool --rounds 3 --no-inductor --json $OUT/pool-$v.json 2>&1 | grep "pool:" | sed "s/^/$v /" | tee -a $OUT/pool-interleaved.log)
done
