#!/usr/bin/env bash
# Run a command under other numerical kernels than this CPU's own, to check the cross-CPU
# contract of the golden runs (docs/architecture.md) on one machine:
#   bash scripts/other-kernels.sh .venv/bin/python -m pytest tests/test_golden.py
# torch's generic kernels, oneDNN and MKL held to SSE4, NumPy without the SIMD paths it
# would pick at run time, Numba compiling for a generic CPU, and another OpenBLAS core type
# than the one it detects.
set -euo pipefail
export ATEN_CPU_CAPABILITY=default
export ONEDNN_MAX_CPU_ISA=SSE41
export MKL_ENABLE_INSTRUCTIONS=SSE4_2
export NUMBA_CPU_NAME=generic  # Numba's kernels compiled for no particular CPU
case "$(uname -m)" in
  x86_64) export OPENBLAS_CORETYPE=Sandybridge ;;  # AVX without FMA: other rounding
  aarch64) export OPENBLAS_CORETYPE=ARMV8 ;;
esac
PY="${PYTHON:-.venv/bin/python}"
# every runtime-dispatched NumPy target this CPU has (AVX2, AVX-512, ...): baseline only
NPY_DISABLE_CPU_FEATURES="$("$PY" -c '
import numpy._core._multiarray_umath as m
print(" ".join(f for f in m.__cpu_dispatch__ if m.__cpu_features__.get(f)))')"
export NPY_DISABLE_CPU_FEATURES
echo "other kernels: ATEN_CPU_CAPABILITY=$ATEN_CPU_CAPABILITY ONEDNN_MAX_CPU_ISA=$ONEDNN_MAX_CPU_ISA" \
  "MKL_ENABLE_INSTRUCTIONS=$MKL_ENABLE_INSTRUCTIONS NUMBA_CPU_NAME=$NUMBA_CPU_NAME" \
  "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-}" \
  "NPY_DISABLE_CPU_FEATURES='$NPY_DISABLE_CPU_FEATURES'"
exec "$@"
