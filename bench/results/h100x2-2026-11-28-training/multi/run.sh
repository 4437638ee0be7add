# The command as run on the GPU host, from the repository root, OUT a results folder. .carry/a/install.sh
# (where it appears) installed the ray and serve extras from carried wheels into /tmp/site.
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
pip install --no-deps -e . -q >/dev/null 2>&1
nvidia-smi -L > $OUT/gpus.txt
C=/tmp/kr-cache
python3 bench/scaling.py --via multi --gpus 1,2 --rounds 6 --profile training --cache-dir $C \
  --json $OUT/scaling-training-multi.json 2>&1 | grep -v ' INFO ' | tee -a $OUT/rows.log
python3 bench/scaling.py --via multi --gpus 1 --rounds 2 --cache-dir $C --json $OUT/alone.json 2>&1 \
  | grep -v ' INFO ' | tee -a $OUT/rows.log
# GPU 1 busy with what sandboxes do in the driver: fresh processes that create a CUDA context, allocate,
# launch and exit, four at a time; then a one-GPU row on GPU 0 beside it
for i in 1 2 3 4; do (while true; do CUDA_VISIBLE_DEVICES=1 python3 -c 'import torch; x=torch.randn(4096,4096,device="cuda"); [x.mul_(1.0001) for _ in range(50)]; torch.cuda.synchronize()'; done) & done
python3 bench/scaling.py --via multi --gpus 1 --rounds 2 --cache-dir $C --json $OUT/driver-loaded.json 2>&1 \
  | grep -v ' INFO ' | sed 's/^/[GPU 1: 4 context loops] /' | tee -a $OUT/rows.log
kill $(jobs -p) 2>/dev/null; pkill -f 'x.mul_' ; wait 2>/dev/null
