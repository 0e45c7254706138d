#!/usr/bin/env bash
# Everything the dashboard's browser tests need, on top of scripts/setup.sh:
#   - Debian's chromium (the tests drive it headless; `playwright install` is never used),
#   - Python playwright in .venv (the driver only),
#   - Solara's front-end assets in .venv/share/solara/cdn (see solara-offline-assets.sh).
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV_PY=.venv/bin/python
[ -x "$VENV_PY" ] || { echo "run scripts/setup.sh first (.venv is missing)" >&2; exit 1; }
if [ ! -x /usr/bin/chromium ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
# SolaraViz (Mesa 3.3) breaks with ipyvuetify 3 / ipyvue 3
if ! "$VENV_PY" -c "import ipyvuetify, ipyvue, sys; sys.exit(int(ipyvuetify.__version__.split('.')[0]) >= 2 or int(ipyvue.__version__.split('.')[0]) >= 2)" 2>/dev/null; then
  "$VENV_PY" -m pip install --quiet "ipyvuetify==1.12.0" "ipyvue==1.13.0"
fi
if ! "$VENV_PY" -c "import playwright" 2>/dev/null; then
  "$VENV_PY" -m pip install --quiet "playwright==1.65.2"
fi
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null
fi
bash scripts/solara-offline-assets.sh .venv
echo "browser test setup ready: $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
