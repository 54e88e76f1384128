"""Synthetic run directories, as train() leaves them, for the aggregation and plotting tests."""
import json

from ppo_control.config import make_config


def write_run(root, name, returns, finished=True, error=None, step=100, wall_per_iter=0.5, eval_factor=2.0,
              summary_wall=10.0, summary_sps=100.0, **cfg):
    """config.json, metrics.jsonl (a None return = no episode that iteration), summary.json, error.txt."""
    d = root / name
    d.mkdir(parents=True)
    config = make_config("default", **{"env_id": "Hopper-v5", **cfg}).to_dict()
    (d / "config.json").write_text(json.dumps({"config": config, "environment": {}}))
    with open(d / "metrics.jsonl", "w") as f:
        for i, r in enumerate(returns, 1):
            f.write(json.dumps({"iteration": i, "global_step": i * step, "wall_time": wall_per_iter * i,
                                "charts/episodic_return": r}) + "\n")
    if finished:
        (d / "summary.json").write_text(json.dumps({
            "final_return": returns[-1], "eval_return": eval_factor * returns[-1], "wall_time": summary_wall,
            "SPS": summary_sps, "global_step": step * len(returns)}))
    if error:
        (d / "error.txt").write_text(error)
    return d
