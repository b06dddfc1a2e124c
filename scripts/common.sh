# Shared by scripts/demo.sh and scripts/test.sh: installs missing Debian packages, then configures
# and builds lanes into a build directory.
set -euo pipefail

LANES_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LANES_PACKAGES=(g++ cmake make libopenblas-pthread-dev libgtest-dev libxsimd-dev libopenmpi-dev openmpi-bin
  libxsmm-dev)

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

# lanes_build DIR [cmake args...]
lanes_build() {
  local dir=$1
  shift
  cmake -S "$LANES_ROOT" -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)"
}
