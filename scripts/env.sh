# Sourced by the scripts: picks up a build venv made by setup.sh when there was no root.
venv="${CODA_VENV:-$(pwd)/.venv-build}"
if [ -f "$venv/env.sh" ]; then
  # shellcheck disable=SC1091
  . "$venv/env.sh"
fi
