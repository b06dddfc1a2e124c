#!/usr/bin/env bash
# Builds lanes (Release) and runs the demo: ./scripts/demo.sh
source "$(dirname "$0")/common.sh"
lanes_install_deps
lanes_build "$LANES_ROOT/build"
"$LANES_ROOT/build/examples/demo"
