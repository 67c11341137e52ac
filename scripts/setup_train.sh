#!/usr/bin/env bash
# Installs libtorch for the `train` feature only (inference never needs it): the CPU build of
# torch 2.13.0 (what tch 0.26 links against) into a virtual environment, without the CUDA
# wheels it would otherwise pull (~540 MB instead of ~2.7 GB; libtorch_cpu needs only libcudart
# and libcupti). Writes `.venv-train/env.sh`, which scripts/train_env.sh sources.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${CODA_TRAIN_VENV:-$(pwd)/.venv-train}"
if [ -f "$venv/env.sh" ]; then
  exit 0
fi
echo "setup: installing libtorch (CPU) into $venv" >&2
python3 -m venv "$venv"
"$venv/bin/pip" install -q 'cuda-toolkit[cudart,cupti]==13.0.3'
"$venv/bin/pip" install -q --no-deps torch==2.13.0
site=$(ls -d "$venv"/lib/python3*/site-packages)
libs="$site/torch/lib"
for d in "$site"/nvidia/*/lib; do
  [ -d "$d" ] && libs="$libs:$d"
done
{
  echo "export LIBTORCH=$site/torch"
  echo "export LD_LIBRARY_PATH=$libs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
} > "$venv/env.sh.tmp"
mv "$venv/env.sh.tmp" "$venv/env.sh"
