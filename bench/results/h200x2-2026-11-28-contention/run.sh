# The command as run on the GPU host, from the repository root, OUT a results folder. .carry/a/install.sh
# (where it appears) installed the ray and serve extras from carried wheels into /tmp/site.
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
pip install --no-deps -e . -q >/dev/null 2>&1
nvidia-smi -L > $OUT/gpus.txt
C=/tmp/kr-cache; S="python3 bench/scaling.py --via multi --gpus 1 --rounds 2 --cache-dir $C"
python3 bench/cpu_contention.py --copies 1,4,8,2,6,12 --repeats 5 --json $OUT/contention.json 2>&1 | tee $OUT/contention.log
for r in 1 2; do
  $S --json $OUT/alone-$r.json 2>&1 | grep -v ' INFO ' | tee -a $OUT/rows.log
  for i in 1 2 3 4; do python3 -c 'while True: pass' & done
  $S --json $OUT/loaded-$r.json 2>&1 | grep -v ' INFO ' | sed 's/^/[4 busy cores] /' | tee -a $OUT/rows.log
  kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
done
