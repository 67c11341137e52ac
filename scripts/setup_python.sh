#!/usr/bin/env bash
# The Python package: a virtual environment (.venv-py, or $CODA_PY_VENV) with its pinned tools
# (maturin, gymnasium, numpy, pytest, ray), the abi3 wheel built from the working tree
# (target/wheels) and installed into it. Run after scripts/setup.sh (cmake, libclang).
set -euo pipefail
cd "$(dirname "$0")/.."
pyvenv="${CODA_PY_VENV:-$(pwd)/.venv-py}"
if [ ! -x "$pyvenv/bin/python" ]; then
  python3 -m venv "$pyvenv"
fi
# Pinned: the versions the tests and the published timings ran with.
"$pyvenv/bin/pip" install -q --disable-pip-version-check maturin==1.16.0 gymnasium==1.4.0 \
  'numpy>=1.24,<3' pytest==8.4.2 'ray==2.60.0'
. scripts/env.sh
start=$(date +%s)
"$pyvenv/bin/maturin" build --release --locked -o target/wheels 2>&1 | grep -E 'Built wheel|error|warning' >&2
"$pyvenv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps \
  target/wheels/coda-0.1.0-cp310-abi3-*.whl
echo "setup_python: wheel built and installed into $pyvenv in $(( $(date +%s) - start )) s" >&2
