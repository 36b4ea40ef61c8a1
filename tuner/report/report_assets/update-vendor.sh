#!/usr/bin/env bash
# Refreshes vendor/ from the versions pinned in package.json (package-lock.json):
# the ECharts build that the report inlines and the licences of what that build
# contains (ECharts, zrender, tslib, d3 parts). CI never runs this; it builds
# from the committed vendor/ files.
#
# vendor/echarts.min.js is not ECharts' full dist/echarts.min.js (1.1 MB, every
# chart type and component) but a build of echarts_entry.js with esbuild: only
# the series, components and renderers the report uses (listed, with why, in
# echarts_entry.js), ~0.69 MB minified, so Chromium has ~40 % less script to
# parse and compile before the first chart. Same inputs, same output: esbuild
# and ECharts are pinned, and nothing in the bundle depends on the machine.
set -euo pipefail
cd "$(dirname "$0")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp package.json package-lock.json echarts_entry.js "$work/"
(cd "$work" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null)
modules="$work/node_modules"
version() { node -p "require('$modules/$1/package.json').version"; }
banner="/*
* Licensed to the Apache Software Foundation (ASF) under one
* or more contributor license agreements.  See the NOTICE file
* distributed with this work for additional information
* regarding copyright ownership.  The ASF licenses this file
* to you under the Apache License, Version 2.0 (the
* \"License\"); you may not use this file except in compliance
* with the License.  You may obtain a copy of the License at
*
*   http://www.apache.org/licenses/LICENSE-2.0
*
* Unless required by applicable law or agreed to in writing,
* software distributed under the License is distributed on an
* \"AS IS\" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
* KIND, either express or implied.  See the License for the
* specific language governing permissions and limitations
* under the License.
*/
/* Apache ECharts $(version echarts) with zrender $(version zrender) (BSD-3-Clause), tslib $(version tslib) (0BSD)
 * and parts of d3 (BSD-3-Clause): a partial build for tune's HTML report, made by
 * tuner/report/report_assets/update-vendor.sh from echarts_entry.js with esbuild $(version esbuild).
 * Licences: LICENSE-echarts, LICENSE-zrender, LICENSE-tslib, LICENSE-d3 next to this file. */"
# An IIFE that sets the global `echarts` (as the full build does), minified;
# process.env.NODE_ENV makes ECharts' development checks and messages drop out.
(cd "$work" && "$modules/.bin/esbuild" echarts_entry.js --bundle --minify --format=iife --global-name=echarts \
  --target=es2017 --define:process.env.NODE_ENV='"production"' --legal-comments=none --charset=ascii \
  --banner:js="$banner" --log-level=warning --outfile=echarts.min.js)
cp "$work/echarts.min.js" vendor/echarts.min.js
cat "$modules/echarts/LICENSE" "$modules/echarts/NOTICE" > vendor/LICENSE-echarts
cp "$modules/echarts/licenses/LICENSE-d3" vendor/LICENSE-d3
cp "$modules/zrender/LICENSE" vendor/LICENSE-zrender
cp "$modules/tslib/LICENSE.txt" vendor/LICENSE-tslib
echo "vendor/: echarts $(version echarts) (esbuild $(version esbuild), $(wc -c < vendor/echarts.min.js) bytes)"
