#!/usr/bin/env bash
# The Python package on the lent GPU machine (one call of the device tool; it has PyTorch but no
# network and no Rust): installs the coda wheel built here and sb3-contrib's wheels carried in
# target/device/wheels, trains MaskablePPO on coda's environment for a few minutes
# (examples/python/maskable_ppo.py), and measures labelling against worker processes up to its
# 16 cores (benches/python/label_scaling.py). Results under $OUT.
set -euo pipefail
out=${OUT:?}
py=${CODA_DEVICE_PY:-/opt/torch/.venv/bin/python}
lib=/tmp/coda-pylib
nproc > "$out/nproc.txt"; lscpu | grep -E 'Model name|^CPU\(s\)' > "$out/cpu.txt" || true
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/gpu.txt" 2>/dev/null || true
wheels=${CODA_DEVICE_WHEELS:-target/device/wheels}
"$py" -m pip install -q --no-index --target "$lib" \
  --no-deps "$wheels"/*.whl target/wheels/coda-0.1.0-cp310-abi3-*.whl 2>&1 | tail -3
export PYTHONPATH=$lib
"$py" -c "import coda, torch; print('coda', coda.__file__, 'torch', torch.__version__, 'cuda', torch.cuda.is_available())" | tee "$out/versions.txt"
# Each step on its own: a failure of one still leaves the other's results. MaskablePPO only
# when its wheels were carried (with the repository, sb3's pandas and matplotlib exceed what
# one call may carry: it then runs on the development machine).
ls "$wheels"/sb3_contrib-*.whl > /dev/null 2>&1 && { timeout 300 "$py" examples/python/maskable_ppo.py --minutes "${PPO_MINUTES:-3}" --device cpu \
    --out "$out/ppo" 2>&1 || echo "maskable_ppo: exit $?"; } | tail -8 | tee "$out/ppo.log"
{ timeout 450 "$py" benches/python/label_scaling.py --workers 1,2,4,8,16 --rounds 8 \
    --csv "$out/label_scaling.csv" 2>&1 || echo "label_scaling: exit $?"; } | tee "$out/label.log"
