#!/bin/sh
# The stock-KVM lab (tests/lab/README.md):
#   tests/lab/lab.sh fetch
#   tests/lab/lab.sh run [--build DIR] [--timeout S] [--retries N] DIR SCRIPT
exec python3 "$(dirname "$0")/lab.py" "$@"
