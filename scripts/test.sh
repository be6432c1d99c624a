#!/usr/bin/env bash
# README's second command (and CI's): set up, then run the whole test suite.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/scripts/setup.sh"
cd "$repo"
# One pytest-xdist worker per core (at most 4: the tiny world, agent and NLE model are made once and shared by
# all), each test file on one worker (its tests share their module's server and browser); the 40 slowest tests
# are listed at the end, to keep the suite's time in view. EXAG_TEST_WORKERS=N overrides; 0 runs the suite in
# this one process.
cores="$(nproc 2>/dev/null || echo 2)"
workers="${EXAG_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}"
exec "$repo/.venv/bin/python" -m pytest -n "$workers" --dist loadfile --durations=40 "$@"   # this checkout's environment (see scripts/setup.sh)
