#!/usr/bin/env bash
# Issue 12, experiment 2 at 10M steps: GRPO's settings against PPO's tuned preset at equal env steps,
# in chunks. A call trains for at most CHUNK_MIN minutes (default 50), then stops the run in progress
# with SIGTERM: it saves a checkpoint and the next call resumes it (the sweep skips finished runs and
# resumes interrupted ones), so any number of calls adds up to the same runs. Seed-major order, so a
# partial campaign covers every setting. Deterministic evaluation every 250k steps for both algorithms.
#   CHUNK_MIN=50 ENVS="HalfCheetah-v5" SEEDS="1 2 3 4 5" bash benchmarks/grpo_10m.sh
# SETTINGS lists what runs per env and seed: grpo:H:GAMMA (visited starts, per-step advantages, G 8,
# 64 envs, init log-std -0.5: setting A of results/grpo_1m/reading.md with horizon H and discount GAMMA),
# grpo:START:H:GAMMA (the same from START = reset | visited | branch starts; the run name then carries
# start_state), grpo:START:H:GAMMA:SCALE (the same with --grpo-adv-scale SCALE, group or batch; the run
# name then carries grpo_adv_scale; SCALE may be left empty), grpo:START:H:GAMMA:SCALE:FIELD=V[:FIELD=V...] (the same
# with more config fields set through --grid, e.g. grpo:visited:512:0.998::ent_coef=0.01: the run name carries
# them too), ppo (the tuned preset) and ppo:FIELD=V[:FIELD=V...] (the tuned preset with config fields set
# through --grid, e.g. ppo:lr_decay_steps=1000000:lr_floor=0.1, the lr schedule of a 1M run held at 10M;
# the run name carries them), ppo_default and ppo_default:FIELD=V... (the same on PPO's default preset, into
# $OUT/ppo_default: measured 28-30 min a run on HalfCheetah and 39-41 on Walker2d, two at a time on 2 cores;
# Ant is guessed at 60-120 min from the 1M wall times of results/runs/mujoco_suite/ppo_default). Default:
# HalfCheetah's first GRPO setting (visited H 32 / 0.95) and PPO; the ablation's best HalfCheetah cell is
# grpo:reset:256:0.995 (results/grpo_factorial/reading.md).
# Checkpoints are git-ignored: to go on in another checkout, commit each unfinished run's checkpoint.pt
# with `git add -f` (a stopped chunk prints which runs are unfinished).
set -eu
OUT=${OUT:-results/runs/grpo_10m}
STEPS=${STEPS:-10000000}
deadline=$(( $(date +%s) + ${CHUNK_S:-$(( ${CHUNK_MIN:-50} * 60 ))} ))
GRPO="--algo grpo --no-crn --grpo-advantage per_step --group-size 8 --num-envs 64
      --init-log-std -0.5"
COMMON="--total-steps $STEPS --eval-interval 250000 --workers 1 --no-report --no-progress"
chunk_done() {
  echo "grpo_10m: chunk time used up; run the same command again to go on. Unfinished runs (commit their"
  echo "checkpoint.pt with git add -f to go on in another checkout):"
  for d in "$OUT"/*/*/; do [ -f "$d/checkpoint.pt" ] && [ ! -f "$d/summary.json" ] && echo "  $d"; done
  exit 0
}
# add_fields "F=V:F=V...": one --grid per word onto $grids; exits 2 on a word without "="
add_fields() {
  local kv extra
  IFS=: read -ra extra <<< "$1"
  for kv in ${extra[@]+"${extra[@]}"}; do
    case $kv in
      *=*) grids="$grids --grid $kv" ;;
      *) echo "grpo_10m: '$kv' in setting '$setting' is not FIELD=VALUE (e.g. ent_coef=0.01)" >&2; exit 2 ;;
    esac
  done
}
for seed in ${SEEDS:-1 2 3 4 5}; do
  for env in ${ENVS:-HalfCheetah-v5}; do
    for setting in ${SETTINGS:-grpo:32:0.95 ppo}; do
      left=$(( deadline - $(date +%s) ))
      [ $left -ge 30 ] || chunk_done
      case $setting in
        ppo | ppo:* | ppo_default | ppo_default:*)
          preset=tuned; [[ $setting != ppo_default* ]] || preset=default
          grids=""; [[ $setting != *:* ]] || add_fields "${setting#*:}"
          args="--preset $preset $COMMON --out-dir $OUT/ppo_$preset $grids" ;;
        grpo:*)
          IFS=: read -r _ a b c d rest <<< "$setting"
          if [ -n "$c" ]; then start="--grid start_state=$a"; h=$b; g=$c
          else start="--start-state visited"; h=$a; g=$b; fi
          grids="--grid horizon=$h --grid gamma=$g"; [ -z "$d" ] || grids="$grids --grid grpo_adv_scale=$d"
          add_fields "$rest"
          args="$GRPO $COMMON --out-dir $OUT/grpo $start $grids" ;;
        *) echo "grpo_10m: setting '$setting' is neither ppo[:FIELD=V...], ppo_default[:FIELD=V...] nor grpo:... (see the header)" >&2; exit 2 ;;
      esac
      rc=0
      timeout -s TERM -k 300 $left ppo-control sweep --env-id $env --seeds $seed $args || rc=$?
      [ $rc -ne 124 ] || chunk_done
      [ $rc -eq 0 ] || exit $rc
    done
  done
done
echo "grpo_10m: every run finished"
