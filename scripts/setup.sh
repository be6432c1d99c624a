#!/usr/bin/env bash
# Idempotent set-up shared by README's two commands and CI: a virtual environment outside the repo
# (so CI and later runs reuse it), torch + torchvision installed together from PyPI, then exag itself.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${EXAG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/exag/venv}"
python="${EXAG_PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "exag needs Python >= 3.11 (found: $("$python" --version 2>&1))" >&2
    exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
    echo "[setup] creating virtual environment in $venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
fi

# Reinstall only when the dependency list changed; when only the checkout changed (a fresh clone, the
# packages already there), just re-point the editable install at it: seconds, nothing resolved or fetched.
stamp="$venv/.exag-stamp"
deps="$(cat "$repo/pyproject.toml" "$repo/scripts/setup.sh" | sha256sum | cut -d' ' -f1)"
want="$deps $repo"
have="$(cat "$stamp" 2>/dev/null || true)"
if [ "$have" != "$want" ] && [ "${have%% *}" = "$deps" ]; then
    echo "[setup] pointing the environment at $repo"
    "$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$repo" \
        && echo "$want" > "$stamp"
fi
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    # PyPI's torchvision is built against PyPI's torch: install the pair in one resolution so a
    # CPU-only torch already on the machine can never be mixed with an incompatible torchvision.
    echo "[setup] installing torch + torchvision (first run downloads several GB)"
    "$venv/bin/python" -m pip install --quiet "torch>=2.14,<2.16" "torchvision>=0.29,<0.31"
    echo "[setup] installing exag and its dependencies"
    "$venv/bin/python" -m pip install --quiet -e "$repo[dev]"
    echo "$want" > "$stamp"
fi

# The browser tests drive the system's Chromium (Playwright's own browser download does not work
# offline). Install it where we may; elsewhere those tests are skipped with a reason.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] installing chromium for the browser tests (apt-get)"
    (apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) \
        || echo "[setup] could not install chromium; browser tests will be skipped"
fi
