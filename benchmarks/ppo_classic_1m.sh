#!/usr/bin/env bash
# Issue 2's first measurement: PPO, classic preset, 1M steps, HalfCheetah-v5 and Hopper-v5, seeds 1-2.
# Resumable: a finished run (summary.json) is skipped, an interrupted one continues from its checkpoint.
# Usage: bash benchmarks/ppo_classic_1m.sh [OUT_DIR] [PARALLEL]
set -u
OUT=${1:-results/runs/ppo_classic_1m}
PAR=${2:-2}
run() {
    local env=$1 seed=$2 name="$1__classic__s$2"
    if [ -f "$OUT/$name/summary.json" ]; then echo "skip $name (finished)"; return; fi
    if [ -f "$OUT/$name/checkpoint.pt" ]; then
        ppo-control train --resume "$OUT/$name" > "$OUT/$name.log" 2>&1
    else
        ppo-control train --preset classic --env-id "$env" --seed "$seed" --total-steps 1000000 \
            --out-dir "$OUT" --run-name "$name" --no-progress > "$OUT/$name.log" 2>&1
    fi
    echo "$name exit $?"
}
mkdir -p "$OUT"
export -f run; export OUT
printf '%s\n' "HalfCheetah-v5 1" "Hopper-v5 1" "HalfCheetah-v5 2" "Hopper-v5 2" | xargs -P "$PAR" -L 1 bash -c 'run $0 $1'
