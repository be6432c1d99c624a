# Issue 45's checks on a lent machine (16 cores, one H100/H200; bash experiments/benchmark/device_capacity.sh,
# with the wheels of experiments/benchmark/device_wheels.sh carried as .wheels/). Installs them beside the
# machine's torch, renders the game world's images, then measures:
#  1. one GPU worker against one CPU worker: rounds/s, CPU per round, same answers (worker_throughput);
#  2. the capacity ladder with the web tier spread over processes and GPU workers.
# Writes its reports under $OUT (the device tool brings them back). About 8 minutes.
set -euo pipefail
py="${PY:-$(command -v /opt/torch/.venv/bin/python || command -v python3)}"     # the Python that has torch
$py -m pip install --quiet --no-index --no-deps --target /tmp/dvlib .wheels/*.whl
export PYTHONPATH=$PWD:/tmp/dvlib PYTHONUNBUFFERED=1 OUT="${OUT:-/tmp/out}" PATH=/tmp/dvlib/bin:$PATH
mkdir -p "$OUT"
$py -c "import exag_cli, sys; sys.exit(exag_cli.main(['world', 'build', '--help']))" >/dev/null
$py -c "from vqa_agent.world.default import game_world; from vqa_agent.world.build import render_missing; render_missing(game_world(), progress=False)"
nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv || true
timeout 200 $py -m experiments.benchmark.worker_throughput --device cpu,cuda --concurrency 256 --seconds 20 \
    --json "$OUT/gpu_worker.json" 2>&1 | tail -40
timeout 300 $py -m experiments.benchmark.capacity --web-processes 8 --workers 2 --device cuda --ladder 1000 \
    --duration 40 --quiet --out "$OUT/device_capacity_1000.json" 2>&1 | tail -25
