"""A study script under benchmarks/studies/ imported as a module, for its tests."""
import importlib.util
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks" / "studies"


def load_benchmark(name: str):
    """``benchmarks/studies/NAME.py`` executed as the module ``NAME``."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
