#!/usr/bin/env python3
"""Variants of a generated kernel's WGSL for flag_variants.sh: what the
shared words' note (session 25's 569734c, measured and reverted: the WGSL
must come from that build) and the shift form of
`mul.wide` by a power of two (exprs.rs) each cost. Usage:
flag_variants.py IN.wgsl OUTDIR ENTRY; writes OUTDIR/<variant>/ENTRY.wgsl.

- nopub:   the barriers do not publish the thread's note (inexact)
- noread:  the regions do not read the notes (inexact: measures the read)
- noflag:  neither note, publication nor read (inexact: the tests the note
           saves, gone)
- mulwold: mul.wide by powers of two through mulw_s32/mulw_u32 again, and
           mulw_u32's low word by its 16-bit pieces (the previous emitter)
"""
import os
import re
import sys

src, outdir, entry = sys.argv[1:4]
w = open(src).read()
NOTE = "g_sub = g_sub | select(0u, 1u, ((v & 0x7f800000u) == 0u) & ((v << 1u) != 0u)); "
READ = re.compile(r"^\s*sus\d+ = sus\d+ \| \(\(g_sub \| atomicLoad\(&shr_sub\)\) != 0u\);\n", re.M)
PUB = "shr_pub(); workgroupBarrier();"
assert NOTE in w and READ.search(w), "no shared words' note in this kernel"


def mulwold(t):
    t = re.sub(
        r"vec2<u32>\((\w+) << (\d+)u, bitcast<u32>\(bitcast<i32>\(\1\) >> \d+u\)\)",
        lambda m: f"mulw_s32({m.group(1)}, {1 << int(m.group(2))}u)",
        t,
    )
    t = re.sub(
        r"vec2<u32>\((\w+) << (\d+)u, \1 >> \d+u\)",
        lambda m: f"mulw_u32({m.group(1)}, {1 << int(m.group(2))}u)",
        t,
    )
    return t.replace("  let lo = a * b;\n", "  let lo = (ll & 0xffffu) | (mid << 16u);\n")


variants = {
    "nopub": w.replace(PUB, "workgroupBarrier();"),
    "noread": READ.sub("", w),
    "noflag": READ.sub("", w.replace(NOTE, "").replace(PUB, "workgroupBarrier();")),
    "mulwold": mulwold(w),
}
for name, text in variants.items():
    assert text != w, name
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, entry + ".wgsl"), "w").write(text)
