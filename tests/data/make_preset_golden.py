"""Writes tests/data/preset_golden.json: every preset x task resolved by the presets as they were written
in Python (ppo_control/config.py at commit 190f9f7), so that the data files that replaced them
(ppo_control/presets/*.toml) are checked against what they replaced (tests/test_presets.py).

Runs from any checkout of the repository (it reads that commit's config.py through git, which needs only
the standard library):
    python tests/data/make_preset_golden.py
"""
import json
import subprocess
import sys
import types
from pathlib import Path

COMMIT = "190f9f7"
TASKS = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5", "Swimmer-v5",
         "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "Pusher-v5")
HERE = Path(__file__).resolve().parent


def old_config():
    source = subprocess.run(["git", "show", f"{COMMIT}:ppo_control/config.py"], cwd=HERE, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("old_config")
    sys.modules["old_config"] = module  # dataclasses looks the module up while building Config
    exec(compile(source, f"{COMMIT}:ppo_control/config.py", "exec"), module.__dict__)
    return module


def main():
    old = old_config()
    defaults = old.Config().to_dict()
    cases = {}
    for preset in old.PRESETS:
        if old.PRESETS[preset].get("algo") == "grpo":
            try:
                old.make_config(preset, algo="ppo")
            except old.ConfigError as e:
                cases[f"{preset}||ppo"] = {"error": str(e)}
        for env_id in TASKS:
            algos = [None] if old.PRESETS[preset].get("algo") == "grpo" else [None, "grpo"]
            for algo in algos:
                kw = dict(env_id=env_id, **({"algo": algo} if algo else {}))
                try:
                    cfg = old.make_config(preset, **kw)
                except old.ConfigError as e:  # e.g. a tuned row's PPO-only options under --algo grpo
                    cases[f"{preset}|{env_id}|{algo or ''}"] = {"error": str(e)}
                    continue
                long_cfg = old.make_config(preset, total_steps=10_000_000, **kw)
                cases[f"{preset}|{env_id}|{algo or ''}"] = {
                    "config": {k: v for k, v in cfg.to_dict().items() if v != defaults[k]},
                    "env_overrides_applied": {k: list(v) if isinstance(v, tuple) else v
                                              for k, v in old.applied_env_overrides(cfg).items()},
                    "long_run_warning_10m": old.long_run_warning(long_cfg)}
    out = HERE / "preset_golden.json"
    out.write_text(json.dumps({"commit": COMMIT, "defaults": defaults, "cases": cases}, indent=0, sort_keys=True)
                   + "\n")
    print(f"wrote {out} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
