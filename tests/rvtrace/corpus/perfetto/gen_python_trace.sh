#!/bin/sh
# gen_python_trace.sh PERFETTO_CHECKOUT — regenerate python-trace-builder.pftrace
# and its .calls (SOURCES.md): takes Perfetto's Python trace builder
# (python/perfetto) and its trace schema (protos/perfetto/trace/
# perfetto_trace.proto) from a google/perfetto checkout, compiles the
# schema with Debian's protoc for Debian's python3-protobuf (the checkout's
# own perfetto_trace_pb2.py needs protobuf 6), and runs gen_python_trace.py
# with Debian's python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r "$src/python/perfetto" "$scratch/perfetto"
rm -rf "$scratch/perfetto/protos"
mkdir -p "$scratch/gen"
protoc -I "$src" --python_out="$scratch/gen" protos/perfetto/trace/perfetto_trace.proto
mkdir -p "$scratch/perfetto/protos/perfetto/trace"
touch "$scratch/perfetto/protos/__init__.py" "$scratch/perfetto/protos/perfetto/__init__.py" \
	"$scratch/perfetto/protos/perfetto/trace/__init__.py"
cp "$scratch/gen/protos/perfetto/trace/perfetto_trace_pb2.py" "$scratch/perfetto/protos/perfetto/trace/"
/usr/bin/python3 "$here/gen_python_trace.py" "$scratch" "$here/python-trace-builder.pftrace"
python3 "$here/../count_calls.py" "$here/python-trace-builder.pftrace"
