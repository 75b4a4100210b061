#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the example training job on 4
# local processes with the CPU backend: build/hvdrun -np 4 build/examples/train.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
exec "$root/build/hvdrun" -np 4 "$root/build/examples/train" "$@"
