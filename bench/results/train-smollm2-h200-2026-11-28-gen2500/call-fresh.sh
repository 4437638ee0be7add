# one H200, fresh: SmolLM2's first part to /tmp and the train wheels to /tmp/site, nothing else
set -o pipefail
cp .carry/ga/smol.part.aa /tmp/ &
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry/ga/*.whl > $OUT/install-wheels.log 2>&1 || tail -3 $OUT/install-wheels.log
python3 -m pip install -q --no-deps --no-build-isolation -e . > $OUT/install.log 2>&1 || tail -3 $OUT/install.log
wait; ls -la /tmp/smol.part.aa
