"""Recourse policy families, one package (or module) per family.

Each family registers its policies, goal selectors and recommenders with the core's
:class:`abm.registry.Registry` through the ``recourse_abm.policies`` entry-point group
(see ``pyproject.toml``). Policies import the abm core only; importing this package
loads nothing heavy.
"""
