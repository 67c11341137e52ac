#!/usr/bin/env bash
# Installs what building coda needs, only when it is missing: cmake and libclang (HiGHS is
# compiled from source by highs-sys, whose bindings are generated with libclang).
set -euo pipefail

have_libclang() {
  [ -n "${LIBCLANG_PATH:-}" ] && compgen -G "${LIBCLANG_PATH}/libclang*.so*" >/dev/null && return 0
  compgen -G '/usr/lib/x86_64-linux-gnu/libclang*.so*' >/dev/null && return 0
  compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null && return 0
  return 1
}

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi

if command -v cmake >/dev/null 2>&1 && have_libclang; then
  exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing cmake and libclang with apt-get" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends cmake libclang1-14 >/dev/null
else
  # No root: a Python virtual environment provides both.
  venv="${CODA_VENV:-$(pwd)/.venv-build}"
  echo "setup: installing cmake and libclang into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q cmake libclang
  echo "export PATH=$venv/bin:\$PATH" > "$venv/env.sh"
  echo "export LIBCLANG_PATH=$(ls -d "$venv"/lib/python3*/site-packages/clang/native)" >> "$venv/env.sh"
  echo "setup: run 'source $venv/env.sh' before cargo if you build by hand" >&2
fi
