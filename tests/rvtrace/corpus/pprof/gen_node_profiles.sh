#!/bin/sh
# gen_node_profiles.sh — regenerate the Node.js profilers' files of this
# directory (SOURCES.md): installs npm `pprof` and `@datadog/pprof` at the
# versions recorded there in a scratch directory (npm `pprof` builds its
# addon with node-gyp against the installed node's headers), runs
# gen_node_profiles.js, and writes each file's `go tool pprof -top` listing
# (Go from Debian's golang-go: the independent reader test_pprof compares
# with).  Sampling is not deterministic: commit the files and their
# .top.txt from the same run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
npm init -y >/dev/null
npm install --no-audit --no-fund --ignore-scripts pprof@5.0.0 @datadog/pprof@5.20.0 >/dev/null
# node-gyp builds against the installed node's headers, /usr/include/node
# (nodesource's nodejs; Debian's needs libnode-dev).
(cd node_modules/pprof && npx --yes node-gyp rebuild --nodedir=/usr >/dev/null)
node "$here/gen_node_profiles.js" "$scratch/node_modules" "$here/"
for f in google-node-wall google-node-heap datadog-node-wall datadog-node-heap; do
	case $f in *heap) unit=B ;; *) unit=ns ;; esac
	go tool pprof -top -nodecount=100000 -nodefraction=0 -edgefraction=0 \
		-unit=$unit "$here/$f.pb.gz" >"$here/$f.top.txt" 2>/dev/null
done
