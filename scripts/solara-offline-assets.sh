#!/usr/bin/env bash
# Fill Solara's CDN cache (<venv>/share/solara/cdn) with the front-end packages the
# dashboard loads (require.js, the Solara/Vuetify app, grid layout, Vega), fetched from
# the npm registry with `npm pack`. Solara's server serves files from this cache before
# trying the jsDelivr CDN, so the dashboard works on machines that can reach npm but not
# the CDN (CI, these build machines). Online users do not need it. Idempotent.
# Usage: scripts/solara-offline-assets.sh [VENV]   (default: .venv)
set -euo pipefail
VENV=${1:-.venv}
CDN="$VENV/share/solara/cdn"
PACKAGES=(
  requirejs@2.3.6
  font-awesome@4.5.0
  @widgetti/solara-vuetify-app@10.1.1
  @widgetti/vue-grid-layout@2.3.13-alpha.2
  vega@5
  vega-lite@5
  vega-embed@6
)
missing=()
for spec in "${PACKAGES[@]}"; do
  [ -d "$CDN/$spec" ] || missing+=("$spec")
done
[ ${#missing[@]} -eq 0 ] && exit 0
command -v npm >/dev/null 2>&1 || { echo "npm is needed to fetch Solara's front-end assets" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for spec in "${missing[@]}"; do
  tarball=$(cd "$TMP" && npm pack "$spec" --silent | tail -1)
  mkdir -p "$CDN/$spec.partial"
  tar -xzf "$TMP/$tarball" -C "$CDN/$spec.partial" --strip-components=1
  mv "$CDN/$spec.partial" "$CDN/$spec"   # only complete packages count as present
  echo "cached $spec"
done
