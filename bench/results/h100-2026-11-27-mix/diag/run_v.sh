# the overhead bound's parts on one machine: main (fresh timed inputs on), fresh timed inputs off, b9c8bd7 (2026-11-23), main again
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
mkdir -p /tmp/base && tar xzf .scratch-gpu/base-b9c8bd7.tgz -C /tmp/base
for v in fresh-on fresh-off b9c8bd7 fresh-on2; do
  if [ $v = fresh-off ]; then sed -i 's/    fresh_timed_inputs: bool = True/    fresh_timed_inputs: bool = False/' src/kernelrl/evaluate/config.py; grep -n "fresh_timed_inputs: bool" src/kernelrl/evaluate/config.py; fi
  if [ $v = fresh-on2 ]; then sed -i 's/    fresh_timed_inputs: bool = False/    fresh_timed_inputs: bool = True/' src/kernelrl/evaluate/config.py; grep -n "fresh_timed_inputs: bool" src/kernelrl/evaluate/config.py; fi
  if [ $v = b9c8bd7 ]; then
    (cd /tmp/base && PYTHONPATH=/tmp/base/src:/tmp/site timeout 105 python3 bench/throughput.py --device cuda --modes pool --rounds 3 --no-inductor --json $OUT/pool-$v.json 2>&1 | tail -4 | tee $OUT/pool-$v.log)
  else
    timeout 105 python3 bench/throughput.py --device cuda --modes pool --rounds 3 --no-inductor --json $OUT/pool-$v.json 2>&1 | tail -4 | tee $OUT/pool-$v.log
  fi
done
