# Shared by scripts/demo.sh and scripts/test.sh: installs missing Debian packages, then configures
# and builds lanes into a build directory.
set -euo pipefail

LANES_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LANES_PACKAGES=(g++ cmake make libopenblas-pthread-dev libgtest-dev libxsimd-dev libopenmpi-dev openmpi-bin
  libxsmm-dev libdnnl-dev python3-dev python3-venv)

lanes_install_deps() {
  local missing=()
  for p in "${LANES_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "lanes: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "lanes: missing Debian packages: ${missing[*]}" >&2
    echo "       install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
}

# lanes_python_env: a virtual environment in build/venv with what the Python package needs to
# build and test (python/requirements-dev.txt), made once and remade when that file changes.
LANES_VENV="$LANES_ROOT/build/venv"
lanes_python_env() {
  local stamp
  stamp=$(sha256sum "$LANES_ROOT/python/requirements-dev.txt" | cut -d' ' -f1)
  [ "$(cat "$LANES_VENV/.requirements-sha256" 2>/dev/null)" = "$stamp" ] && return 0
  echo "lanes: installing the Python build and test requirements into $LANES_VENV"
  rm -rf "$LANES_VENV"
  python3 -m venv "$LANES_VENV"
  "$LANES_VENV/bin/pip" install -q --upgrade pip
  "$LANES_VENV/bin/pip" install -q -r "$LANES_ROOT/python/requirements-dev.txt"
  echo "$stamp" > "$LANES_VENV/.requirements-sha256"
}

# lanes_build DIR [cmake args...]: the library, its tests, benchmarks and examples, and the
# Python package (into DIR/python, against build/venv's Python).
lanes_build() {
  local dir=$1
  shift
  lanes_python_env
  cmake -S "$LANES_ROOT" -B "$dir" -DLANES_BUILD_PYTHON=ON -DPython_EXECUTABLE="$LANES_VENV/bin/python" \
    "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)"
}
