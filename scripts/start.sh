#!/usr/bin/env bash
# README's first command: set up, then run ExAG's main job with the default world.
# (Until the game exists: build the default world and write a contact sheet of sample scenes.)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/scripts/setup.sh"
venv="${EXAG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/exag/venv}"
cd "$repo"
"$venv/bin/exag" world build --out data/world "$@"
"$venv/bin/exag" world sheet --world data/world --out data/contact_sheet.png
