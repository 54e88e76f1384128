import warnings

import pytest

from ppo_control.config import make_config

warnings.filterwarnings("ignore", category=DeprecationWarning)


@pytest.fixture
def tiny(tmp_path):
    """A PPO config that runs in about a second (InvertedPendulum, 2 envs, 64-step rollouts)."""
    def make(**kw):
        base = dict(env_id="InvertedPendulum-v5", num_envs=2, num_steps=64, num_minibatches=4, update_epochs=2,
                    total_steps=256, eval_episodes=0, progress=False, tensorboard=False, out_dir=str(tmp_path),
                    run_name="run", checkpoint_every=1, vectorization="sync")
        base.update(kw)
        return make_config("default", **base)
    return make
