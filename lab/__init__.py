"""The application layer: what people run on top of the core and the policies.

cli and commands (the ``recourse-abm`` command line), study (the one experiment
runner), experiments (RL training, paper reproductions), envs (gymnasium
environments), evaluation, results and plots. It may import :mod:`abm` core modules
and :mod:`policies`; neither imports it, and neither does :mod:`dashboards`, the other
front end (the ``dashboard`` command starts it by path).
"""
