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

# Also after a merge or pull changed the lock file (npm writes node_modules/.package-lock.json).
if [ ! -x node_modules/.bin/tsx ] || [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
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
# The search engine (index.sink "opensearch"): OpenSearch's integ-test zip plus the analysis-common
# module (language analyzers), fetched by Maven coordinates. Needs Java 11..23; skipped without it.
OS_VERSION="2.19.1"
OS_HOME=".emulator/opensearch-$OS_VERSION"
if [ -x "$OS_HOME/bin/opensearch" ] && [ -f "$OS_HOME/modules/analysis-common/plugin-descriptor.properties" ]; then
  :
elif ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  echo "[setup] no java/mvn on the PATH: skipping the search engine (the crawl works with index.sink \"feed\"; install a JDK 17 and Maven, then re-run npm run setup)" >&2
else
  echo "[setup] installing OpenSearch $OS_VERSION into $OS_HOME" >&2
  M2="${HOME}/.m2/repository/org/opensearch"
  mvn -q dependency:get -Dtransitive=false -Dartifact="org.opensearch.distribution.integ-test-zip:opensearch:$OS_VERSION:zip"
  mvn -q dependency:get -Dtransitive=false -Dartifact="org.opensearch.plugin:analysis-common:$OS_VERSION"
  rm -rf "$OS_HOME.tmp" && mkdir -p "$OS_HOME.tmp"
  python3 -c 'import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$M2/distribution/integ-test-zip/opensearch/$OS_VERSION/opensearch-$OS_VERSION.zip" "$OS_HOME.tmp"
  mod="$OS_HOME.tmp/opensearch-$OS_VERSION/modules/analysis-common"
  mkdir -p "$mod"
  cp "$M2/plugin/analysis-common/$OS_VERSION/analysis-common-$OS_VERSION.jar" "$mod/"
  printf '%s\n' "description=Adds analyzers and tokenizers (english...)" "version=$OS_VERSION" \
    "name=analysis-common" "classname=org.opensearch.analysis.common.CommonAnalysisPlugin" \
    "java.version=11" "opensearch.version=$OS_VERSION" "custom.foldername=" "extended.plugins=" \
    "has.native.controller=false" > "$mod/plugin-descriptor.properties"
  chmod +x "$OS_HOME.tmp/opensearch-$OS_VERSION/bin/"*
  rm -rf "$OS_HOME" && mv "$OS_HOME.tmp/opensearch-$OS_VERSION" "$OS_HOME" && rm -rf "$OS_HOME.tmp"
fi
# OpenSearch refuses to run as root: the launcher runs it as this unprivileged system user.
if [ -x "$OS_HOME/bin/opensearch" ] && [ "$(id -u)" = "0" ] && ! id trawl-search >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin trawl-search
fi
# jvm.options writes logs/gc.log under the engine's home, whoever runs it.
if [ -d "$OS_HOME" ]; then mkdir -p "$OS_HOME/logs" && chmod 1777 "$OS_HOME/logs"; fi
# A real browser for the report's test (test/integration/report-browser.test.ts): Debian's chromium,
# driven by playwright-core (its own browser downloads do not work here). Skipped without apt.
if ! command -v chromium >/dev/null 2>&1 && [ -z "${TRAWL_CHROMIUM:-}" ]; then
  SUDO=""
  if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; fi
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = "0" ] || [ -n "$SUDO" ]; }; then
    echo "[setup] installing chromium (apt) for the report's browser test" >&2
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null; } ||
      echo "[setup] apt-get install chromium failed: the report's browser test will be skipped" >&2
  else
    echo "[setup] no apt-get as root: skipping chromium; the report's browser test will be skipped (install chromium, or set TRAWL_CHROMIUM to a Chromium binary)" >&2
  fi
fi
echo "[setup] ready" >&2
