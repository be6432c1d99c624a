# Issue 45's checks on a lent machine (16 cores, one H100/H200; bash experiments/benchmark/device_capacity.sh,
# with the wheels of experiments/benchmark/device_wheels.sh carried as .wheels/). Installs them beside the
# machine's torch, renders the game world's images, then measures:
#  1. one GPU worker against one CPU worker: rounds/s, CPU per round, same answers (worker_throughput);
#  2. the capacity ladder with the web tier spread over processes and GPU workers.
# Writes its reports under $OUT (the device tool brings them back). About 8 minutes.
set -euo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
python3 -m venv --system-site-packages /tmp/dv && /tmp/dv/bin/pip install --quiet --no-index --no-deps .wheels/*.whl
py=/tmp/dv/bin/python
$py -c "import exag_cli, sys; sys.exit(exag_cli.main(['world', 'build', '--help']))" >/dev/null
$py -c "from vqa_agent.world.default import game_world; from vqa_agent.world.build import render_missing; render_missing(game_world(), progress=False)"
nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv || true
timeout 200 $py -m experiments.benchmark.worker_throughput --device cpu,cuda --concurrency 256 --seconds 20 \
    --json "$OUT/gpu_worker.json" 2>&1 | tail -40
timeout 300 $py -m experiments.benchmark.capacity --web-processes 8 --workers 2 --device cuda --ladder 1000 \
    --duration 40 --quiet --out "$OUT/device_capacity_1000.json" 2>&1 | tail -25
