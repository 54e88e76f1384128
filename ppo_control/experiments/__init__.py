"""Experiment tooling around ``train``: many runs at once and what is made of their outputs.

``jobs`` runs one job (new, resumed or skipped from its run directory), ``runner`` runs many on
local processes or, through ``ray_backend``, on a Ray cluster; ``sweep`` turns grids and
environment lists into jobs and holds the ``sweep``/``bench``/``plot`` commands; ``aggregate``
reads run directories into per-setting statistics and tables, and ``plotting`` draws their
curves and heatmaps. The core package (``ppo_control/*.py``, ``envs/``) never imports this one;
only ``cli.py`` does, to register the commands.
"""
