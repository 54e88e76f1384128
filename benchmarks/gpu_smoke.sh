#!/usr/bin/env bash
# Everything that needs a GPU, in one go, for a machine that has one (it is not part of CI):
#   the CUDA tests (update equality on the GPU, PPO and GRPO training with the networks on CUDA,
#   periodic/final evaluation, checkpoints loaded on the CPU, resume), then a short HalfCheetah
#   training with --device cuda and the same run on the CPU, side by side (wall time, SPS).
# Usage: bash benchmarks/gpu_smoke.sh [OUT_DIR]   (needs torch with CUDA, gymnasium[mujoco], pytest)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/gpu_smoke}}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print('GPU:', torch.cuda.get_device_name(0), 'torch', torch.__version__)" | tee "$out/gpu.txt"
python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_update.py tests/test_networks.py 2>&1 | tee "$out/pytest.txt"
for dev in cuda cpu; do
  for preset in classic fast; do
    python3 -m ppo_control train --preset "$preset" --env-id HalfCheetah-v5 --total-steps 65536 --device "$dev" \
      --no-progress --no-tensorboard --eval-episodes 2 --out-dir "$out/runs" --run-name "${preset}_${dev}" \
      > "$out/train_${preset}_${dev}.json"
    python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(sys.argv[2], sys.argv[3], 'SPS %.0f' % s['SPS'], 'wall %.1f s' % s['wall_time'])" \
      "$out/train_${preset}_${dev}.json" "$preset" "$dev" | tee -a "$out/speed.txt"
  done
done
