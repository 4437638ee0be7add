#!/usr/bin/env bash
# interleaved A/B of fresh-candidate throughput: base (.carry/base/src) against this tree (src)
set -u
cd "$(dirname "$0")/../.."
for i in 1 2 3; do
  for side in base new; do
    src=$PWD/src; [ "$side" = base ] && src=$PWD/.carry/base/src
    PYTHONPATH=$src timeout 150 python3 bench/throughput.py --device cuda --modes fresh-candidates \
      --candidates solutions --only level1/ --concurrency auto --rounds 1 --cache-dir /tmp/bench-cache \
      --json $OUT/ab-$side-$i.json > $OUT/ab-$side-$i.log 2>&1
    echo "$side $i rc $? $(grep -m1 -E 'evals/min' $OUT/ab-$side-$i.log | cut -c1-150)"
  done
done
