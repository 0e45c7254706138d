#!/usr/bin/env bash
# Train capacity-goal's μ again with training seeds 1 and 2 (issue 48, item 6) on a lent
# machine with many cores: installs the wheels carried in .device-wheels/ (the packages
# its ready Python lacks), trains 16 at a time, and copies the new predictor directories
# (weights and manifests, no checkpoints) to $OUT. Run from the repository root.
set -uo pipefail
python -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
export OMP_NUM_THREADS=1 PYTHONPATH=$PWD
work=${WORK:-/tmp/cg}
mkdir -p "$work"
cp -r results/capacity-goal/predictors "$work/" 2>/dev/null
timeout "${LIMIT:-480}" python -c "
from lab.reproduce import capacity_goal as cg
cg.train('$work', seeds=(1, 2), workers=${WORKERS:-16})
"
echo "train exit $?"
mkdir -p "$OUT/predictors"
for d in "$work"/predictors/*-seed*; do
  [ -f "$d/manifest.json" ] || continue
  mkdir -p "$OUT/predictors/$(basename "$d")"
  find "$d" -maxdepth 1 -type f -exec cp {} "$OUT/predictors/$(basename "$d")/" \;
done
ls "$OUT/predictors" | wc -l
