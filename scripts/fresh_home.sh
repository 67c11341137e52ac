#!/usr/bin/env bash
# Runs a command as on a machine that never ran coda: HOME is a new, empty folder, and so is
# cargo's home (no registry cache, no git checkouts, no config); only the Rust toolchain stays
# reachable (rustup's proxies and RUSTUP_HOME) and Python itself (the system's or pyenv's). The
# variables through which pip, maturin, Ray, cargo and the XDG folders would find earlier state
# are unset, so whatever earlier work left on this machine (~/.ray/auth_token, pip's cache, a
# cargo config) cannot hide a missing set-up step. CI runs the README's commands through it.
# Usage: scripts/fresh_home.sh COMMAND [ARGS...]   (prints what the command left in the home)
set -euo pipefail
fresh=$(mktemp -d "${TMPDIR:-/tmp}/coda-fresh-home.XXXXXX")
trap 'rm -rf "$fresh"' EXIT
mkdir -p "$fresh/home" "$fresh/cargo/bin"

cargo_path=$(command -v cargo) || { echo "fresh_home: cargo not found" >&2; exit 1; }
cargo_bin=$(dirname "$cargo_path")
if [ -x "$cargo_bin/rustup" ]; then
  # rustup's proxies (cargo, rustc, ... are links to rustup) find the toolchain in RUSTUP_HOME;
  # they are linked into the new cargo home, which then holds nothing else.
  export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
  for b in "$cargo_bin"/*; do ln -s "$b" "$fresh/cargo/bin/"; done
  path=""
  IFS=: read -ra parts <<< "$PATH"
  for p in "${parts[@]}"; do
    [ "$p" = "$cargo_bin" ] && p="$fresh/cargo/bin"
    path="${path:+$path:}$p"
  done
  export PATH="$path"
fi

# Variables that point at state other tools would read from outside the home (the machine's
# network settings — certificates, proxies, timeouts — are kept: a fresh machine has them too).
for v in $(compgen -e); do
  case "$v" in
    XDG_*|RAY_*|MATURIN_*|CODA_*|UV_*|PIP_CACHE_DIR|PIP_FIND_LINKS|PIP_CONFIG_FILE|PIP_TARGET|\
    PIP_PREFIX|PIP_USER|PIP_REQUIRE_VIRTUALENV|CARGO_TARGET_DIR|CARGO_BUILD_*|\
    CARGO_ENCODED_RUSTFLAGS|PYTHONPATH|PYTHONUSERBASE|PYTHONSTARTUP|VIRTUAL_ENV|LIBTORCH|\
    LIBTORCH_*|LIBCLANG_PATH|LD_LIBRARY_PATH|RUSTFLAGS|RUSTC_WRAPPER)
      unset "$v" ;;
  esac
done
export HOME="$fresh/home" CARGO_HOME="$fresh/cargo" FRESH_HOME="$fresh/home"

set +e
"$@"
rc=$?
set -e
# What the run left in the home: caches a second run would reuse (not needed by any step).
left=$(cd "$fresh/home" && find . -mindepth 1 -maxdepth 2 2>/dev/null | sort | head -20 | tr '\n' ' ')
echo "fresh_home: exit $rc; the home now holds: ${left:-nothing}" >&2
exit "$rc"
