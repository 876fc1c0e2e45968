#!/usr/bin/env bash
# Builds the Ascend side of ms_ops: every aicore/<family>/<op> into one CANN custom OPP package (vendor
# "ms_ops", op types <Op>Msops), build_cann/custom_opp_<os>_<arch>.run.
#
# Needs a CANN toolkit (8.x, with the ASC CMake modules) and CMake >= 3.19; the CPU-only machines
# of this project have neither (their build is `pip install .`).
#
# Usage: source <CANN>/set_env.sh; aicore/build_cann.sh [soc ...]     (default soc: ascend910b)
# Then:  build_cann/custom_opp_*.run --install-path=<dir>
#        source <dir>/vendors/ms_ops/bin/set_env.bash   (sets ASCEND_CUSTOM_OPP_PATH for MindSpore)
set -euo pipefail

if [[ -z "${ASCEND_HOME_PATH:-}" || ! -d "${ASCEND_HOME_PATH}" ]]; then
  echo "build_cann.sh: this build needs a CANN toolkit, and ASCEND_HOME_PATH is not set" \
       "(or not a directory). Install CANN and 'source <CANN>/set_env.sh' first." >&2
  echo "build_cann.sh: the CPU build of the same kernels needs no CANN: 'pip install .'" >&2
  exit 1
fi
command -v cmake >/dev/null || { echo "build_cann.sh: cmake (>= 3.19) not found" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${MS_OPS_CANN_BUILD_DIR:-$here/../build_cann}
socs=$(IFS=';'; echo "${*:-ascend910b}")

cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -Dvendor_name=ms_ops \
      -DASCEND_CANN_PACKAGE_PATH="$ASCEND_HOME_PATH" -DASCEND_COMPUTE_UNIT="$socs"
cmake --build "$build" --target binary package -j"$(nproc)"

package=$(find "$build" -maxdepth 1 -name 'custom_opp_*.run' | head -n 1)
[[ -n "$package" ]] || { echo "build_cann.sh: no custom_opp_*.run in $build" >&2; exit 1; }
echo "built $package"
