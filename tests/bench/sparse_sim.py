#!/usr/bin/env python3
"""sparse_sim.py EXACT.rvt K OUT.rvt [TICK_US] — sparse time simulated on an
exact capture (issue 14, lever 5; FORMAT.md §1 "Sparse time").

Writes OUT.rvt: the same execution as EXACT.rvt with the timestamps a sparse
ring would not have had replaced by 0xffffffff, by the tracer's rule: the
first event stamped, then every K-th, and the first event after each tick of
the ticker (every TICK_US µs, default 1000, on the capture's own clock) or
after a CLOCK record; a stamped 0xffffffff becomes 0xfffffffe.  Version 3,
flag bit 3 and a SPARSE record; the CHECKSUM record is dropped (flag bit 2
cleared), which readers accept.  Decoding OUT.rvt and EXACT.rvt and comparing
their self times then measures the interpolation error alone, free of the
run-to-run noise two live runs add (tests/bench/sparse_compare.sh).
"""
import struct
import sys
from array import array

NONE = 0xFFFFFFFF


def main():
    src, k, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    tick_us = float(sys.argv[4]) if len(sys.argv) > 4 else 1000.0
    buf = bytearray(open(src, "rb").read())
    ver, = struct.unpack_from("<H", buf, 8)
    flags, = struct.unpack_from("<I", buf, 12)
    ref, = struct.unpack_from("<Q", buf, 16)
    hz, = struct.unpack_from("<Q", buf, 40)
    shift = buf[48]
    count, soff, moff, fsize = struct.unpack_from("<QQQQ", buf, 96)
    if ver not in (1, 2) or flags & 8:
        sys.exit("sparse_sim: %s is not an exact capture" % src)
    slots = array("Q")
    slots.frombytes(bytes(buf[soff:soff + 8 * count]))

    # Backwards (FORMAT.md §1): the items newest first, and the high word at
    # the oldest one (pass 1 of the decoder).
    items = []  # (kind, slot index, ts, value): kind 0 event, 2 CLOCK, 3 other marker
    refsh = ref >> shift
    hi, prev = refsh >> 32, refsh & 0xFFFFFFFF
    i = count
    while i > 0:
        i -= 1
        s = slots[i]
        lo, ts = s & 0xFFFFFFFF, s >> 32
        if 1 <= lo <= 15:
            if i == 0:
                break  # torn
            i -= 1
            if lo >= 2:
                v = slots[i]
                if lo == 2 and (v & 0xFFFFFFFF) == ts:
                    hi = v >> 32
                    items.append((2, i + 1, ts, v))
                else:
                    if ts > prev:
                        hi -= 1
                    items.append((3, i + 1, ts, v))
                prev = ts
                continue
            i_ev = i + 1
        else:
            i_ev = i
        if ts > prev:
            hi -= 1
        prev = ts
        items.append((0, i_ev, ts, 0))
    items.reverse()

    # Forwards: full counters, then the sparse rule.
    tick = max(1, int(hz * tick_us / 1e6) >> shift)
    left, last_full, after_clock = 0, None, True
    stamped = unstamped = 0
    for kind, idx, ts, v in items:
        if kind == 2:
            hi, prev = v >> 32, ts
            after_clock = True
            continue
        if ts < prev:
            hi += 1
        prev = ts
        if kind == 3:
            continue
        full = hi << 32 | ts
        if after_clock or (last_full is not None and full // tick != last_full // tick):
            left = 0
        after_clock = False
        last_full = full
        left -= 1
        s = slots[idx]
        if left < 0:
            left = k - 1
            stamped += 1
            if ts == NONE:
                slots[idx] = (s & 0xFFFFFFFF) | (0xFFFFFFFE << 32)
        else:
            unstamped += 1
            slots[idx] = (s & 0xFFFFFFFF) | (NONE << 32)

    # Records: all but CHECKSUM and END, then SPARSE and END.
    recs = bytearray()
    off = moff
    while off + 8 <= len(buf):
        typ, _, ln = struct.unpack_from("<HHI", buf, off)
        pad = (ln + 7) & ~7
        if typ == 0xFFFF:
            break
        if typ != 8:
            recs += buf[off:off + 8 + pad]
        off += 8 + pad
    recs += struct.pack("<HHIII", 11, 0, 8, k, int(tick_us))
    recs += struct.pack("<HHI", 0xFFFF, 0, 0)
    hdr = bytearray(buf[:soff])
    struct.pack_into("<H", hdr, 8, 3)
    struct.pack_into("<I", hdr, 12, (flags & ~4) | 8)
    struct.pack_into("<Q", hdr, 120, soff + 8 * count + len(recs))
    with open(out, "wb") as f:
        f.write(hdr)
        f.write(slots.tobytes())
        f.write(recs)
    print("sparse_sim: K=%d: %d events stamped, %d not" % (k, stamped, unstamped))


main()
