#!/usr/bin/env bash
# Installs what is missing, builds, and boots the self-test guest.
# Extra arguments go to vmm, e.g. ./run.sh -c 4 --split-lock=off
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
vmm_install_packages
vmm_build build
exec ./build/vmm "$@" build/guest.bin
