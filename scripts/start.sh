#!/usr/bin/env bash
# README's first command: set up, then start the game with the default world and agent. The first start
# builds the game world (the game's image pool and the RelQA question bank) unless data/world exists.
# Extra arguments go to `exag serve` (e.g. --port 8000, --host 0.0.0.0).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/scripts/setup.sh"
cd "$repo"
exec "$repo/.venv/bin/exag" serve "$@"   # this checkout's environment (see scripts/setup.sh)
