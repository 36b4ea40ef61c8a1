#!/usr/bin/env bash
# Refreshes vendor/ from the version pinned in package.json (package-lock.json):
# the minified ECharts build that the report inlines, and the licences of what
# that build contains (ECharts, zrender, tslib, d3 parts). CI never runs this;
# it builds from the committed vendor/ files.
set -euo pipefail
cd "$(dirname "$0")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp package.json package-lock.json "$work/"
(cd "$work" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null)
modules="$work/node_modules"
cp "$modules/echarts/dist/echarts.min.js" vendor/echarts.min.js
cat "$modules/echarts/LICENSE" "$modules/echarts/NOTICE" > vendor/LICENSE-echarts
cp "$modules/echarts/licenses/LICENSE-d3" vendor/LICENSE-d3
cp "$modules/zrender/LICENSE" vendor/LICENSE-zrender
cp "$modules/tslib/LICENSE.txt" vendor/LICENSE-tslib
echo "vendor/: echarts $(node -p "require('$modules/echarts/package.json').version")"
