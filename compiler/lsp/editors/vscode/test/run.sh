#!/usr/bin/env bash
# Tests the VS Code set-up of compiler/lsp/README.md as written, in a real VS Code: code-server
# (Coder's build of VS Code's workbench, server and extension host, from npm) on 127.0.0.1,
# driven by headless Chromium (Debian's) through puppeteer-core.
#
# It installs the extension as the README says (npm install, link into the extensions folder),
# sets the README's settings, opens a net with a type error and checks, in VS Code's DOM: the
# language mode, the error squiggle, the Problems panel entry, a hover, go to definition, the
# breadcrumbs (document symbols), and that the error goes away once it is fixed in the editor.
#
# usage: compiler/lsp/editors/vscode/test/run.sh [path/to/pnet-lsp]     (default: pnet-lsp on PATH)
# Exits 0 when every check passed, 1 when one failed, 2 when something could not be installed
# or started. Needs Node 20 with npm, a C++ compiler, make and python3 (node-gyp builds VS Code's
# native modules once), chromium and ripgrep (installed with apt-get when missing and root).
# Environment:
#   PNET_VSCODE_CACHE  where code-server and puppeteer-core are installed, once
#                      (default: ${XDG_CACHE_HOME:-$HOME/.cache}/pnet-vscode-test)
#   CHROMIUM           the browser (default: chromium on PATH)
#   KEEP=1             keep the temporary folder (settings, logs, the net) for a look
set -uo pipefail

CODE_SERVER_VERSION=4.100.3 # the newest code-server whose engines.node accepts Node 20 (VS Code 1.100.3)
PUPPETEER_VERSION=24.43.1   # the newest puppeteer-core for Node 18+ (25 needs Node 22)

here=$(cd "$(dirname "$0")" && pwd)
ext_src=$(dirname "$here")             # compiler/lsp/editors/vscode
root=$(cd "$ext_src/../../../.." && pwd) # the workspace
start=$SECONDS

die() {
  echo "vscode-test: $*" >&2
  exit 2
}
step() { echo "== $*"; }
# npm, without its warnings (this machine's ~/.npmrc has a `nodedir`, which npm 11 warns about).
npmq() {
  npm "$@" 2>&1 | grep -v '^npm warn'
  return "${PIPESTATUS[0]}"
}

# --- prerequisites --------------------------------------------------------------------------
server=${1:-pnet-lsp}
server_path=$(command -v "$server") || die "pnet-lsp not found: $server (build it: cargo build -p pnet-lsp)"
server_path=$(cd "$(dirname "$server_path")" && pwd)/$(basename "$server_path")
command -v node >/dev/null && command -v npm >/dev/null || die "node and npm are needed"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" = 20 ] || die "code-server $CODE_SERVER_VERSION needs Node 20, this is $(node --version)"

missing=()
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium" ] || missing+=(chromium)
command -v rg >/dev/null || missing+=(ripgrep)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "apt-get install -y ${missing[*]}"
    apt-get install -y "${missing[@]}" >/dev/null 2>&1 ||
      { apt-get update >/dev/null 2>&1 && apt-get install -y "${missing[@]}" >/dev/null 2>&1; } ||
      die "apt-get install -y ${missing[*]} failed"
    chromium=${CHROMIUM:-$(command -v chromium)}
  else
    die "missing: ${missing[*]} (Debian: apt-get install -y ${missing[*]})"
  fi
fi

cache=${PNET_VSCODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pnet-vscode-test}
mkdir -p "$cache" || die "cannot create $cache"
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

# --- code-server, once ------------------------------------------------------------------------
# Not `npm install -g code-server`: its postinstall runs `npm install` in lib/vscode, whose
# @vscode/ripgrep downloads rg from GitHub and whose argon2 tries a GitHub prebuild first. The
# same steps by hand: no install scripts, then the native modules built from source by node-gyp
# (with the machine's Node headers), Debian's rg in place of the download, the postinstall's
# symlinks.
cs_home=$cache/code-server-$CODE_SERVER_VERSION
cs=$cs_home/node_modules/code-server
if [ ! -f "$cs_home/.installed" ]; then
  step "installing code-server $CODE_SERVER_VERSION into $cs_home (once)"
  rm -rf "$cs_home" && mkdir -p "$cs_home" && echo '{"private":true}' >"$cs_home/package.json"
  (
    set -e
    cd "$cs_home"
    npmq install --ignore-scripts --no-package-lock "code-server@$CODE_SERVER_VERSION"
    npm_config_build_from_source=true npm rebuild argon2 >"$cs_home/build.log" 2>&1
    cd "$cs/lib/vscode"
    npmq install --omit=dev --ignore-scripts
    npm rebuild @vscode/spdlog native-watchdog @vscode/deviceid >>"$cs_home/build.log" 2>&1
    # node-pty's postinstall ends with `npx node-gyp` for a compile_commands.json: only the
    # module itself matters.
    npm rebuild node-pty >>"$cs_home/build.log" 2>&1 || true
    test -f node_modules/node-pty/build/Release/pty.node
    mkdir -p node_modules/@vscode/ripgrep/bin
    ln -sfn "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
    ln -sfn node_modules node_modules.asar
    ln -sfn code-linux.sh bin/remote-cli/code-server
    ln -sfn browser-linux.sh bin/helpers/browser.sh
  ) || die "installing code-server failed (see $cs_home/build.log)"
  touch "$cs_home/.installed"
fi

pp_home=$cache/puppeteer-core-$PUPPETEER_VERSION
if [ ! -f "$pp_home/.installed" ]; then
  step "installing puppeteer-core $PUPPETEER_VERSION into $pp_home (once; it downloads no browser)"
  rm -rf "$pp_home" && mkdir -p "$pp_home" && echo '{"private":true}' >"$pp_home/package.json"
  (cd "$pp_home" && npmq install --no-package-lock "puppeteer-core@$PUPPETEER_VERSION") ||
    die "installing puppeteer-core failed"
  touch "$pp_home/.installed"
fi

# --- the README's set-up, in a temporary VS Code profile ----------------------------------------
tmp=$(mktemp -d)
cs_pid=
cleanup() {
  [ -n "$cs_pid" ] && kill "$cs_pid" 2>/dev/null && wait "$cs_pid" 2>/dev/null
  if [ "${KEEP:-}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
mkdir -p "$tmp/user-data/User" "$tmp/extensions" "$tmp/nets" "$tmp/xdg"

# README: `cd compiler/lsp/editors/vscode && npm install && ln -s "$PWD" <extensions>/pnet-lsp-client`
# (on a copy of the folder, so that the work tree gets no node_modules).
step "the extension: npm install, linked into the extensions folder"
mkdir -p "$tmp/vscode" && cp "$ext_src/package.json" "$ext_src/extension.js" "$tmp/vscode/"
(cd "$tmp/vscode" && npmq install --no-package-lock) || die "npm install of the extension failed"
[ -d "$tmp/vscode/node_modules/vscode-languageclient" ] || die "npm install did not install vscode-languageclient"
ln -s "$tmp/vscode" "$tmp/extensions/pnet-lsp-client"

# README's settings; and for an unattended run: no workspace-trust prompt (in Restricted Mode
# VS Code disables the extension), no welcome page, no telemetry.
cat >"$tmp/user-data/User/settings.json" <<JSON
{
  "pnet.serverPath": "$server_path",
  "pnet.searchPaths": ["$root/examples"],
  "pnet.warnings": ["all"],
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false
}
JSON

# A net with a type error: examples/countdown with `${n} - true` for `${n} - 1L`.
sed 's/\${n} - 1L/${n} - true/' "$root/examples/countdown/countdown.xpnet" >"$tmp/nets/countdown.xpnet"
grep -q '\${n} - true' "$tmp/nets/countdown.xpnet" || die "examples/countdown/countdown.xpnet changed: no \`\${n} - 1L\`"
# The same as an .xml net, with the README's files.associations in the folder's settings.
cp "$tmp/nets/countdown.xpnet" "$tmp/nets/broken.xml"
mkdir -p "$tmp/nets/.vscode" && echo '{ "files.associations": { "*.xml": "xpnet" } }' >"$tmp/nets/.vscode/settings.json"

# --- code-server on 127.0.0.1 ------------------------------------------------------------------
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
step "code-server $CODE_SERVER_VERSION on http://127.0.0.1:$port (auth none)"
XDG_CONFIG_HOME=$tmp/xdg XDG_DATA_HOME=$tmp/xdg node "$cs/out/node/entry.js" \
  --bind-addr "127.0.0.1:$port" --auth none --disable-telemetry --disable-update-check \
  --config "$tmp/config.yaml" --user-data-dir "$tmp/user-data" --extensions-dir "$tmp/extensions" \
  >"$tmp/code-server.log" 2>&1 &
cs_pid=$!
for _ in $(seq 1 120); do
  grep -q "HTTP server listening" "$tmp/code-server.log" && break
  kill -0 "$cs_pid" 2>/dev/null || { cat "$tmp/code-server.log"; die "code-server exited"; }
  sleep 0.5
done
grep -q "HTTP server listening" "$tmp/code-server.log" || { cat "$tmp/code-server.log"; die "code-server did not start"; }

# --- the checks, in the browser --------------------------------------------------------------
step "VS Code in headless $("$chromium" --version 2>/dev/null | head -1)"
shots=$cache/screenshots
rm -rf "$shots" && mkdir -p "$shots"
PUPPETEER_CORE=$pp_home/node_modules/puppeteer-core CHROMIUM=$chromium URL=http://127.0.0.1:$port \
  FOLDER=$tmp/nets FILE=countdown.xpnet XML_FILE=broken.xml SHOTS=$shots \
  timeout 300 node "$here/check.cjs"
status=$?
[ $status = 0 ] || { echo "--- code-server log"; tail -20 "$tmp/code-server.log"; }
echo "screenshots: $shots; $((SECONDS - start)) s in all"
exit $status
