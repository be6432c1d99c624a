#!/usr/bin/env bash
# README's second command (and CI's): set up, then run the whole test suite.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/scripts/setup.sh"
cd "$repo"
exec "$repo/.venv/bin/python" -m pytest "$@"   # this checkout's environment (see scripts/setup.sh)
