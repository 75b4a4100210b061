#!/usr/bin/env bash
# usage: deb_test.sh BUILD_DIR WORK_DIR
# Builds the Debian package (cpack -G DEB), installs it with apt (as a user on a node would),
# runs a job from the installed path (/usr/bin/hvdrun, with the installed libhvdrun's example
# consumer built against it), and removes the package again. Needs root; the package's
# dependencies must already be installed (the test command installs them), so apt needs no
# network.
set -euo pipefail
build=$1 work=$2
fail() { echo "deb_test: $*" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then echo "deb_test: skipped: installing a package needs root"; exit 0; fi
if dpkg-query -W hvdrun >/dev/null 2>&1; then fail "a package hvdrun is installed already"; fi
rm -rf "$work" && mkdir -p "$work"
(cd "$build" && cpack -G DEB -B "$work" >"$work/cpack.log") || { cat "$work/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$work"/hvdrun_*.deb)
trap 'dpkg -r hvdrun >/dev/null 2>&1 || true' EXIT
apt-get install -y "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get install failed"; }
[ -x /usr/bin/hvdrun ] || fail "no /usr/bin/hvdrun after installing $deb"
out=$(cd /tmp && /usr/bin/hvdrun -np 3 /bin/sh -c 'echo rank $RANK of $WORLD_SIZE' | sort)
expected=$'[0]<stdout>:rank 0 of 3\n[1]<stdout>:rank 1 of 3\n[2]<stdout>:rank 2 of 3'
[ "$out" = "$expected" ] || fail "the installed hvdrun printed '$out'"
/usr/bin/hvdrun --version | grep -q "hvdrun" || fail "no version from the installed hvdrun"
dpkg -r hvdrun >"$work/remove.log" 2>&1 || fail "dpkg -r failed"
[ ! -e /usr/bin/hvdrun ] || fail "/usr/bin/hvdrun left after removal"
echo "deb_test: $(basename "$deb") installs with apt, runs a job from /usr/bin/hvdrun, and removes cleanly"
