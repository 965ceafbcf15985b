#!/usr/bin/env bash
# Builds the addon with prebuildify (Node-API, stripped) into prebuilds/<platform>-<arch>/ at the package
# root, where node-gyp-build finds it. Uses Node's local headers (nodedir), never downloads them.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${npm_config_nodedir:-}" ]; then
  for d in /usr /usr/local "$(dirname "$(dirname "$(command -v node)")")"; do
    if [ -f "$d/include/node/node_api.h" ]; then export npm_config_nodedir="$d"; break; fi
  done
fi
npx prebuildify --napi --strip --name eventlane --cwd native --out . --target "$(node -p process.versions.node)"
ls -l prebuilds/*/
