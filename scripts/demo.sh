#!/usr/bin/env bash
# Builds lanes (Release) and its Python package, then runs the demo and the Python examples:
# ./scripts/demo.sh
source "$(dirname "$0")/common.sh"
lanes_install_deps
lanes_build "$LANES_ROOT/build"
"$LANES_ROOT/build/examples/demo"
for example in "$LANES_ROOT"/examples/python/*.py; do
  echo
  PYTHONPATH="$LANES_ROOT/build/python" "$LANES_VENV/bin/python" "$example"
done
