"""Deprecated since 0.9 (removed in 0.10): the papers' reproductions and the project's own
studies are :mod:`lab.reproduce`, RL training is :mod:`lab.training`. "Experiment" now
means one thing only: the kind of run a study runs (:mod:`lab.study.experiments`).

``import lab.experiments.pareto`` and the like still work, with a warning: a finder maps
each old module name to the module's new home.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

__path__: list[str] = []  # a package to the import system, so its submodules are looked up
_MOVED = {"rl_training": "lab.training"}


def new_name(name: str) -> str:
    """Where the module ``lab.experiments.<tail>`` lives now."""
    first, _, rest = name.removeprefix(f"{__name__}.").partition(".")
    return _MOVED.get(first, f"lab.reproduce.{first}") + (f".{rest}" if rest else "")


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: object = None, target: object = None):
        if name.startswith(f"{__name__}."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):  # the default: an empty module, replaced below
        return None

    def exec_module(self, module: ModuleType) -> None:
        new = new_name(module.__name__)
        warnings.warn(
            f"{module.__name__} is deprecated: use {new}", DeprecationWarning, stacklevel=2
        )
        # the import system returns what sys.modules holds after this: the module itself
        sys.modules[module.__name__] = importlib.import_module(new)


if not any(isinstance(f, _Moved) for f in sys.meta_path):
    sys.meta_path.insert(0, _Moved())  # before the path finder, which would load a copy

warnings.warn(
    "lab.experiments is deprecated: use lab.reproduce (and lab.training)",
    DeprecationWarning,
    stacklevel=2,
)
