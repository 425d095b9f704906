#!/usr/bin/env bash
# One-time setup for a fresh machine: npm packages (incl. the Node 24 binary the
# Lambda runtime matches) and the embedded AWS emulator (moto server, pinned) in a
# project-local virtualenv. Idempotent: re-running skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
MOTO_VERSION="5.2.5"
VENV=".emulator/venv"
# The local cloud `trawl deploy --local` deploys to (CloudFormation + Lambda without Docker), own venv.
MINISTACK_VERSION="1.5.33"
MINISTACK_VENV=".emulator/ministack"

if [ ! -x node_modules/.bin/tsx ] || [ ! -x node_modules/.bin/node ]; then
  echo "[setup] installing npm packages" >&2
  npm ci --no-audit --no-fund
fi

if [ ! -x "$VENV/bin/moto_server" ] || ! "$VENV/bin/python" -c "import moto,sys; sys.exit(moto.__version__!='$MOTO_VERSION')" 2>/dev/null; then
  echo "[setup] installing moto[server]==$MOTO_VERSION into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
fi
if [ ! -x "$MINISTACK_VENV/bin/ministack" ] || ! "$MINISTACK_VENV/bin/python" -c "import importlib.metadata as m,sys; sys.exit(m.version('ministack')!='$MINISTACK_VERSION')" 2>/dev/null; then
  echo "[setup] installing ministack==$MINISTACK_VERSION into $MINISTACK_VENV" >&2
  python3 -m venv "$MINISTACK_VENV"
  "$MINISTACK_VENV/bin/pip" install --quiet --disable-pip-version-check "ministack==$MINISTACK_VERSION"
fi
echo "[setup] ready" >&2
