# the protocol test again (its request now says what the judge planned), then a generated sample, timed
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_protocol.py -k real_child_times 2>&1 | tail -3
timeout 470 python3 bench/generated_sample.py --n ${N:-60} --seed 7 --out /tmp/gs --device cuda:0 > $OUT/sample.log 2>&1
echo "sample rc $?"; tail -40 $OUT/sample.log | cut -c1-300
cp /tmp/gs/sample.jsonl /tmp/gs/manifest.json $OUT/ 2>/dev/null; ls /tmp/gs | head
