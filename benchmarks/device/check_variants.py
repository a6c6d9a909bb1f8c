#!/usr/bin/env python3
"""Hand-made variants of a checked PTX kernel's WGSL (VGPU_DUMP_WGSL), each
without one family of checks, to time what it costs (check_variants.sh loads
each with VGPU_LOAD_WGSL). The variants are not checked kernels any more.

usage: check_variants.py IN.wgsl OUTDIR ENTRY  -> OUTDIR/<variant>/<ENTRY>.wgsl
  noshrd   shared loads without their initialisation notes (sh_rd)
  nouni    barriers without the release (its uniform load, judgement and
           second barrier): one workgroupBarrier, shared memory taken as
           all written
  uni1     the release as generated, but once all shared memory is written
           a plain workgroupBarrier (a function-local flag set from a uniform
           load), for the cost of the uniform load's two barriers
  noinit   the whole initialisation check: nouni, noshrd and no shadow marks
           of stores (sh_wr)
  nosteps  no watchdog (step counts and their tests)
  nogaddr  global accesses without the region table search (the offset as is)
  none     all of noinit, nosteps and nogaddr
"""
import re, sys, os
src = open(sys.argv[1]).read()
out, entry = sys.argv[2], sys.argv[3]
# A checked barrier's release, as wgsl/cfg/structured.rs writes it.
UNI = re.compile(r"  if \(workgroupUniformLoad\(&wg_full_at\) < SH_WORDS\) \{\n(?:.*\n)*?  sh_full = wg_full_at >= SH_WORDS;\n  \}\n")


def variant(kind, t):
    if kind in ("noshrd", "noinit", "none"):
        t = re.sub(r"\n\s*sh_rd\([^;]*\);", "", t)
    if kind in ("noinit", "none"):
        t = re.sub(r"\n\s*sh_wr\([^;]*\);", "", t)
    if kind in ("nouni", "noinit", "none"):
        t = UNI.sub("  workgroupBarrier();\n  sh_full = true;\n", t)
    if kind == "uni1":
        def rep(m):
            return ("  if (full_u) { workgroupBarrier(); } else {\n" + m.group(0) +
                    "  full_u = workgroupUniformLoad(&wg_full_at) >= SH_WORDS;\n  }\n")
        t = UNI.sub(rep, t)
        t = re.sub(r"(fn run_thread\([^\n]*\{\n)", r"\1  var full_u = false;\n", t, count=1)
    if kind in ("nosteps", "none"):
        t = re.sub(r"\n\s*steps = steps \+ \d+u;", "", t)
        t = re.sub(r"\n\s*if \(steps > words\[1\]\) \{[^}]*\}", "", t)
    if kind in ("nogaddr", "none"):
        t = t.replace("gaddr(", "gaddr_x(").replace("fn gaddr_x(", "fn gaddr(")
        t += ("\nfn gaddr_x(a: vec2<u32>, size: u32, align: u32, line: u32, write: bool, "
              "c: ptr<private, vec2<u32>>) -> u32 { return a.x - GB; }\n")
    return t


for k in ("noshrd", "nouni", "uni1", "noinit", "nosteps", "nogaddr", "none"):
    d = os.path.join(out, k)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, entry + ".wgsl"), "w").write(variant(k, src))
