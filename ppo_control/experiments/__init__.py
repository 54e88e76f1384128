"""Experiment tooling around ``train``: many runs at once and what is made of their outputs.

``jobs`` runs one job (new, resumed or skipped from its run directory), ``runner`` runs many on
local processes or, through ``ray_backend``, on a Ray cluster; ``sweep`` turns grids into jobs
and holds the ``sweep``/``plot`` commands; ``suites`` reads a benchmark suite file into jobs and
finds each job's run by its config, ``report`` writes a suite's tables and figures and the
README/docs table blocks, ``suite_cli`` holds the ``bench``/``report`` commands; ``aggregate``
reads run directories (the one run loader) into per-setting statistics and tables, and
``plotting`` draws their curves and heatmaps. The core package (``ppo_control/*.py``, ``envs/``) never imports this one;
only ``cli.py`` does, to register the commands.
"""
