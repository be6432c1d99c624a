# Issue 45's checks on a lent machine (16 cores, one H100/H200), as one command that fits its few minutes:
#   bash experiments/benchmark/device_capacity.sh      (with the wheels of device_wheels.sh carried as .wheels/)
# Installs the wheels beside the machine's torch, renders the game world's images on every core, then
#  1. the capacity ladder at 1,000 players: `exag serve` as it starts by default (8 web processes, 16 workers, one on the GPU);
#  2. one GPU worker against one CPU worker: rounds/s, CPU per round, the same answers (worker_throughput).
# Each step has its own time limit and writes its report under $OUT as soon as it ends.
# Locally (no GPU, no wheels to install): SKIP_INSTALL=1 PY=.venv/bin/python LADDER=20 DURATION=5 SECONDS_=3 bash ...
set -uo pipefail
py="${PY:-$(command -v /opt/torch/.venv/bin/python || command -v python3)}"     # the Python that has torch
if [ -z "${SKIP_INSTALL:-}" ]; then
    $py -m pip install --quiet --no-index --no-deps --target /tmp/dvlib .wheels/*.whl || exit 1
fi
export PYTHONPATH=$PWD:/tmp/dvlib PYTHONUNBUFFERED=1 OUT="${OUT:-/tmp/out}" PATH=/tmp/dvlib/bin:$PATH
mkdir -p "$OUT"
t0=$(date +%s)
$py -c "from vqa_agent.world.default import game_world; from vqa_agent.world.build import render_missing; print(render_missing(game_world(), progress=False), 'images rendered')"
echo "world ready after $(( $(date +%s) - t0 )) s"; nproc; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
# exag serve's own defaults unless WEB / WORKERS say otherwise: half the cores as web processes, a worker a
# core, one of them on the GPU
sizes=(${WEB:+--web-processes "$WEB"} ${WORKERS:+--workers "$WORKERS"})
timeout "${CAPACITY_S:-150}" $py -m experiments.benchmark.capacity "${sizes[@]}" --device "${DEVICE:-auto}" \
    --ladder "${LADDER:-1000}" --duration "${DURATION:-30}" --quiet \
    --out "$OUT/device_capacity_1000.json" 2>&1 | grep -v "^\s*$" | tail -22
echo "capacity done after $(( $(date +%s) - t0 )) s"
timeout "${WORKER_S:-80}" $py -m experiments.benchmark.worker_throughput --device "cpu,${GPU:-cuda}" --concurrency 256 \
    --seconds "${SECONDS_:-10}" --check-rounds 50 --json "$OUT/gpu_worker.json" 2>&1 | grep -v "^\s*$" | tail -42
echo "all done after $(( $(date +%s) - t0 )) s"
