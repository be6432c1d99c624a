#!/usr/bin/env bash
# README's second command (and CI's): set up, then run the whole test suite.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/scripts/setup.sh"
venv="${EXAG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/exag/venv}"
cd "$repo"
exec "$venv/bin/python" -m pytest "$@"
