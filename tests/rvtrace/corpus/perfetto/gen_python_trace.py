#!/usr/bin/env python3
"""gen_python_trace.py PERFETTO_PYTHON OUT — writes python-trace-builder.pftrace
of this corpus (SOURCES.md): a small Python function tracer
(sys.setprofile / threading.setprofile) that records the calls of the
workload below on two threads and writes them with Perfetto's own Python
trace builder, perfetto.trace_builder.proto_builder.TraceProtoBuilder, as
Perfetto's "synthetic traces" documentation describes: a process track and
one thread track per thread (TrackDescriptor), SLICE_BEGIN / SLICE_END
TrackEvents on each thread's own packet sequence, names interned
(InternedData.event_names, SEQ_INCREMENTAL_STATE_CLEARED) on the main
thread and inline on the worker, an instant and a counter track.
PERFETTO_PYTHON: a directory holding the `perfetto` package
(gen_python_trace.sh prepares it from a Perfetto checkout).
"""
import os
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
from perfetto.trace_builder.proto_builder import TraceProtoBuilder  # noqa: E402
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import (  # noqa: E402
    TrackEvent, TracePacket, TrackDescriptor, CounterDescriptor)

events = []  # (thread ident, ns, "call"/"return", function name)
lock = threading.Lock()
HERE = os.path.abspath(__file__)


def profiler(frame, what, arg):
    if what in ("call", "return") and os.path.abspath(frame.f_code.co_filename) == HERE:
        with lock:
            events.append((threading.get_ident(), time.clock_gettime_ns(time.CLOCK_BOOTTIME),
                           what, frame.f_code.co_name))


def leaf_hash(n):
    h = 2166136261
    for i in range(n):
        h = ((h ^ i) * 16777619) & 0xFFFFFFFF
    return h


def parse_line(line):
    return [int(x) for x in line.split(",")]


def middle(k):
    s = 0
    for i in range(k):
        s += leaf_hash(300)
        s += sum(parse_line("1,2,3,%d" % i))
    return s


def worker():
    for _ in range(20):
        middle(5)
        time.sleep(0.001)


def work():
    t = threading.Thread(target=worker, name="worker")
    t.start()
    for _ in range(30):
        middle(4)
    t.join()


def main():
    threading.setprofile(profiler)
    sys.setprofile(profiler)
    work()
    sys.setprofile(None)
    threading.setprofile(None)

    pid = os.getpid()
    threads = sorted({e[0] for e in events})
    names = {threading.main_thread().ident: "main"}
    b = TraceProtoBuilder()
    PROCESS_UUID = 1000
    p = b.add_packet()
    p.track_descriptor.uuid = PROCESS_UUID
    p.track_descriptor.process.pid = pid
    p.track_descriptor.process.process_name = "gen_python_trace.py"
    seq_of = {}
    for i, ident in enumerate(threads):
        uuid, seq = 2000 + i, 10 + i
        seq_of[ident] = (uuid, seq, ident in names)
        p = b.add_packet()
        p.track_descriptor.uuid = uuid
        p.track_descriptor.parent_uuid = PROCESS_UUID
        p.track_descriptor.thread.pid = pid
        p.track_descriptor.thread.tid = 100 + i
        p.track_descriptor.thread.thread_name = names.get(ident, "worker")
    interned = {}
    first = set()
    for ident, ts, what, name in events:
        uuid, seq, intern = seq_of[ident]
        p = b.add_packet()
        p.timestamp = ts
        p.trusted_packet_sequence_id = seq
        if ident not in first:
            first.add(ident)
            p.sequence_flags = TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        else:
            p.sequence_flags = TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        p.track_event.track_uuid = uuid
        if what == "call":
            p.track_event.type = TrackEvent.TYPE_SLICE_BEGIN
            if intern:
                iid = interned.get(name)
                if iid is None:
                    iid = interned[name] = len(interned) + 1
                    en = p.interned_data.event_names.add()
                    en.iid = iid
                    en.name = name
                p.track_event.name_iid = iid
            else:
                p.track_event.name = name
        else:
            p.track_event.type = TrackEvent.TYPE_SLICE_END
    # An instant and a counter: valid packets that map to no call.
    end = max(e[1] for e in events)
    p = b.add_packet()
    p.timestamp = end
    p.trusted_packet_sequence_id = 99
    p.track_event.type = TrackEvent.TYPE_INSTANT
    p.track_event.track_uuid = PROCESS_UUID
    p.track_event.name = "done"
    p = b.add_packet()
    p.track_descriptor.uuid = 3000
    p.track_descriptor.parent_uuid = PROCESS_UUID
    p.track_descriptor.name = "events recorded"
    p.track_descriptor.counter.unit = CounterDescriptor.UNIT_COUNT
    p = b.add_packet()
    p.timestamp = end
    p.trusted_packet_sequence_id = 99
    p.track_event.type = TrackEvent.TYPE_COUNTER
    p.track_event.track_uuid = 3000
    p.track_event.counter_value = len(events)
    with open(sys.argv[2], "wb") as f:
        f.write(b.serialize())


main()
