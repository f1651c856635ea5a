#!/bin/bash
# pip install of the fxio Python package into a fresh virtualenv (issue 35),
# as an AI engineer installs it where torch lives, next to the .deb:
#   python3 -m venv --system-site-packages VENV
#   VENV/bin/pip install --no-build-isolation --no-index ctl/fxio/python
# No network here: build isolation off, the build requirements of
# pyproject.toml (setuptools, pybind11) are Debian's (python3-setuptools,
# python3-pybind11, make deps), seen through --system-site-packages. The
# _fxio extension is built for the venv's Python with libfxio's sources in
# it (setup.py). Then, with the tree's own PYTHONPATH nowhere:
#   - fxio and fxio._fxio load from the venv's site-packages, VERSION is
#     the tree's;
#   - the package's pytest suite (ctl/fxio/python/tests) runs against the
#     installed copy, as ctest's fxio-python runs it against the build
#     tree (FXIO_FAKE_HIP from build/ctl, which make check built first).
# The source is copied first (ctl/fxio, kmod's headers, VERSION): setuptools
# writes build/ and fxio.egg-info beside setup.py, and the tree stays clean.
# Everything lives under build/pip-venv (its file system does O_DIRECT,
# which the suite's disk fixture needs; /tmp may be tmpfs).
# Usage: tests/pip-venv.sh [PYTHON]   (default /usr/bin/python3)
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
PY=${1:-/usr/bin/python3}
W=$TOP/build/pip-venv
HIP=$TOP/build/ctl/ctl/fxio/fakehip/libamdhip64.so.6
die() { echo "pip-venv: FAIL: $*" >&2; exit 1; }
[ -f "$HIP" ] || die "$HIP missing: build the unit tree first (make check does)"
rm -rf "$W"
mkdir -p "$W/src/ctl/fxio" "$W/src/kmod"
cp -r "$TOP/ctl/fxio/python" "$TOP/ctl/fxio/src" "$TOP/ctl/fxio/include" "$W/src/ctl/fxio/"
cp -r "$TOP/kmod/include" "$TOP"/kmod/*.h "$W/src/kmod/"
cp "$TOP/VERSION" "$W/src/"
rm -rf "$W/src/ctl/fxio/python/build" "$W/src/ctl/fxio/python/fxio.egg-info"

echo "+ $PY -m venv --system-site-packages $W/venv"
"$PY" -m venv --system-site-packages "$W/venv" || die "$PY -m venv (python3-venv)"
cd "$W"
unset PYTHONPATH
echo "+ pip install --no-build-isolation --no-index --no-deps $W/src/ctl/fxio/python"
"$W/venv/bin/pip" install --no-build-isolation --no-index --no-deps \
	"$W/src/ctl/fxio/python" > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; die "pip install"; }
tail -n 1 "$W/pip.log"

"$W/venv/bin/python" - "$W/venv/" "$(cat "$TOP/VERSION")" <<'EOF' || die "import fxio from the venv"
import sys
import fxio
venv, version = sys.argv[1], sys.argv[2]
for mod in (fxio, fxio._fxio):
    if not mod.__file__.startswith(venv):
        sys.exit("%s loaded from %s, not from the venv %s" % (mod.__name__, mod.__file__, venv))
print("fxio %s from %s, libfxio %d.%d" % (version, fxio._fxio.__file__, *fxio.VERSION))
from importlib.metadata import version as dist_version
if dist_version("fxio") != version:
    sys.exit("installed fxio %s, the tree's VERSION %s" % (dist_version("fxio"), version))
EOF

echo "+ pytest ctl/fxio/python/tests against the installed package"
FXIO_FAKE_HIP=$HIP PYTHONDONTWRITEBYTECODE=1 "$W/venv/bin/python" -m pytest -q -rs \
	-p no:cacheprovider --basetemp="$W/pytest-tmp" "$TOP/ctl/fxio/python/tests" ||
	die "the fxio suite against the venv's package"
echo "pip-venv: PASS"
