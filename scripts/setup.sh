#!/usr/bin/env bash
# Idempotent set-up shared by README's two commands and CI, in two layers:
#  - the shared environment outside the repo (${EXAG_VENV:-~/.cache/exag/venv}) holds every third-party
#    dependency, torch included: installed once, reused by CI, later runs and every clone. exag itself is
#    never installed there, so nothing in it points at a checkout;
#  - this checkout's own layer, `.venv/` in the repo (gitignored): a tiny virtual environment on the same
#    base Python whose site-packages reaches the shared one (a .pth file), with this checkout installed
#    editable (--no-deps). Its `python` and `exag` run this checkout's code and no other's, whichever
#    clone was set up last. `source .venv/bin/activate` to call it as `exag`.
# With nothing changed it takes well under a second. EXAG_SETUP_NO_INSTALL=1 sets up only from what is
# already there: it exits with status 3 instead of installing dependencies, and installs no Chromium.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${EXAG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/exag/venv}"
layer="$repo/.venv"
python="${EXAG_PYTHON:-python3}"
no_install="${EXAG_SETUP_NO_INSTALL:-}"
# PyPI's torchvision is built against PyPI's torch: the pair is installed in one resolution so a CPU-only
# torch already on the machine can never be mixed with an incompatible torchvision.
torch_pair=("torch>=2.14,<2.16" "torchvision>=0.29,<0.31")

# One set-up at a time per shared environment (two clones set up at once would race in it).
mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv.lock"
    flock 9
fi

# --- the shared environment: third-party dependencies only -------------------------------------------
if [ ! -x "$venv/bin/python" ]; then
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "exag needs Python >= 3.11 (found: $("$python" --version 2>&1))" >&2
        exit 1
    fi
    [ -n "$no_install" ] && { echo "[setup] no environment at $venv (EXAG_SETUP_NO_INSTALL is set)" >&2; exit 3; }
    echo "[setup] creating the shared environment in $venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
fi

# The requirements are pyproject.toml's build requirements, dependencies and dev extras: reinstall only
# when they (or the torch pair) change, not when other parts of pyproject.toml or the checkout do.
reqs="$("$venv/bin/python" - "$repo/pyproject.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    doc = tomllib.load(f)
project = doc["project"]
print("\n".join([*doc.get("build-system", {}).get("requires", []), *project.get("dependencies", []),
                 *project.get("optional-dependencies", {}).get("dev", [])]))
PY
)"
deps="$(printf '%s\n' "${torch_pair[@]}" "$reqs" | sha256sum | cut -d' ' -f1)"
stamp="$venv/.exag-deps"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$deps" ]; then
    [ -n "$no_install" ] && { echo "[setup] the shared dependencies in $venv are not those of $repo/pyproject.toml (EXAG_SETUP_NO_INSTALL is set)" >&2; exit 3; }
    echo "[setup] installing torch + torchvision (first run downloads several GB)"
    "$venv/bin/python" -m pip install --quiet "${torch_pair[@]}"
    echo "[setup] installing exag's dependencies"
    printf '%s\n' "$reqs" > "$venv/.exag-requirements.txt"
    "$venv/bin/python" -m pip install --quiet -r "$venv/.exag-requirements.txt"
    echo "$deps" > "$stamp"
fi
rm -f "$venv/.exag-stamp"   # the old single-layer stamp (dependencies + the checkout last set up)

# Older set-ups installed a checkout editable into the shared environment: every clone then ran the code
# of whichever clone was set up last. Remove it, so the shared environment points at no checkout.
shared_site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if compgen -G "$shared_site/exag-*.dist-info" >/dev/null || compgen -G "$shared_site/__editable__*exag*" >/dev/null; then
    echo "[setup] removing the exag installed in the shared environment (each checkout has its own in .venv)"
    "$venv/bin/python" -m pip uninstall --quiet -y exag
fi

# --- this checkout's layer -----------------------------------------------------------------------------
# Rebuilt (a second or two, nothing fetched) when the checkout moved, its pyproject.toml or this script
# changed, or the shared environment was remade.
want="$(cat "$repo/pyproject.toml" "${BASH_SOURCE[0]}" "$venv/pyvenv.cfg" | sha256sum | cut -d' ' -f1) $venv $repo"
marker="$layer/.exag-layer"
if [ "$(cat "$marker" 2>/dev/null || true)" != "$want" ]; then
    if [ -e "$layer" ] && [ ! -f "$marker" ]; then
        echo "[setup] $layer exists but was not made by scripts/setup.sh: move it away and run again" >&2
        exit 1
    fi
    echo "[setup] making this checkout's environment in $layer"
    rm -rf "$layer"
    mkdir -p "$layer"
    echo "building" > "$marker"   # ours, even if interrupted before it is done
    # venv run from the shared environment builds on its base interpreter: the same Python version.
    "$venv/bin/python" -m venv --without-pip "$layer"
    layer_site="$("$layer/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    # addsitedir (not a bare path) so the shared site-packages' own .pth files are processed too; it is
    # appended after the layer's site-packages, so this checkout's install comes first.
    printf 'import site; site.addsitedir(%s)\n' "$("$venv/bin/python" -c 'import sys; print(repr(sys.argv[1]))' "$shared_site")" \
        > "$layer_site/_exag_shared.pth"
    # pip and setuptools come from the shared environment; --no-deps: they are all there already.
    log="$(mktemp)"
    if ! (cd "$repo" && "$layer/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$repo") >"$log" 2>&1; then
        cat "$log" >&2; rm -f "$log"
        echo "[setup] could not install $repo into $layer" >&2
        exit 1
    fi
    rm -f "$log"
    # the documented commands that come from the shared environment (the docs site, the tests), on this
    # layer's PATH too, run by its python so that this checkout's exag is the one they see
    for command in mkdocs pytest; do
        printf '#!/bin/sh\nexec "%s" -m %s "$@"\n' "$layer/bin/python" "$command" > "$layer/bin/$command"
        chmod +x "$layer/bin/$command"
    done
    echo "$want" > "$marker"
fi

# The browser tests drive the system's Chromium (Playwright's own browser download does not work
# offline). Install it where we may; elsewhere those tests are skipped with a reason.
if [ -z "$no_install" ] && ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] installing chromium for the browser tests (apt-get)"
    (apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) \
        || echo "[setup] could not install chromium; browser tests will be skipped"
fi
