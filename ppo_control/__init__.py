"""ppo_control: PPO and GRPO for continuous control on MuJoCo."""
from .config import Config, ConfigError, make_config
from .envs import EnvError
from .checkpoint import CheckpointError
from .evaluate import Policy, evaluate, load_policy
from .train import train

__version__ = "0.1.0"
__all__ = ["Config", "ConfigError", "make_config", "EnvError", "CheckpointError", "Policy", "evaluate",
           "load_policy", "train", "__version__"]
