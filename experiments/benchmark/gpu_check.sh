# GPU check of the shipped agents and of training (run on a machine with a GPU: bash experiments/benchmark/gpu_check.sh): a tiny world, the tiny preset trained on
# cuda for 2 epochs, then `exag ask` on cuda and on cpu with each shipped agent on the same image.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
x() { ${PY:-python3} -c "import sys, exag_cli; sys.exit(exag_cli.main(sys.argv[1:]))" "$@"; }
t0=$(date +%s)
x world build --out /tmp/tw --images 24 --pool 6 --workers 8 2>&1 | tail -1
echo "world $(( $(date +%s) - t0 )) s"
x train agent --preset tiny --world /tmp/tw --out /tmp/ta --epochs 2 --device cuda 2>&1 | grep -v "it/s\|Warn" | tail -2
echo "trained $(( $(date +%s) - t0 )) s"
img=$(ls /tmp/tw/images | head -1)
for agent in weak medium strong /tmp/ta; do
  for dev in cuda cpu; do
    echo "== $agent $dev"; x ask --agent $agent --device $dev --image /tmp/tw/images/$img "How many cubes are there?" "What color is the large sphere?" 2>&1 | ${PY:-python3} -c "
import sys, json
for line in sys.stdin:
    try: d = json.loads(line); print(d['question'], '->', d['answer'], round(d['probability'], 4), d.get('answered_by'))
    except Exception: print(line.rstrip()[:200])"
  done
done
echo "done $(( $(date +%s) - t0 )) s"
