# one H200, fresh: SmolLM2's first part to /tmp; held-out generation's decode speed (adapted, merged, static)
set -o pipefail; export PYTHONUNBUFFERED=1
cp .carry/ga/smol.part.aa /tmp/ &
nvidia-smi -L > $OUT/gpus.txt
timeout 400 python3 bench/generation.py --device cuda --batch 128 --prompt 1000 --new 256 --repeats 1 --json $OUT/generation.json 2>&1 | grep -v -i warn | tee $OUT/generation.log
wait; ls -la /tmp/smol.part.aa
