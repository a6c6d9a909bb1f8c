#!/usr/bin/env python3
"""Hand-made variants of a checked PTX kernel's WGSL (VGPU_DUMP_WGSL), each
without one family of checks, to time what it costs (check_variants.sh loads
each with VGPU_LOAD_WGSL). The variants are not checked kernels any more.

usage: check_variants.py IN.wgsl OUTDIR ENTRY  -> OUTDIR/<variant>/<ENTRY>.wgsl
  noshrd   shared loads without their initialisation notes (sh_rd)
  nouni    barriers without the release (before session 22 its uniform
           load, judgement and second barrier; since, shadow_release's
           judgement after the one barrier): one workgroupBarrier, shared
           memory taken as all written
  uni1     the release as generated, but once all shared memory is written
           a plain workgroupBarrier (a function-local flag set from a uniform
           load), for the cost of the uniform load's two barriers
  noinit   the whole initialisation check: nouni, noshrd and no shadow marks
           of stores (sh_wr)
  nosteps  no watchdog (step counts and their tests)
  nogaddr  global accesses without the region table search (the offset as is)
  none     all of noinit, nosteps and nogaddr
  bare1    none, and no judgement at the block's end (its barrier)
  bare2    bare1, and no fault-record tests around accesses and barriers
  bare3    bare2, and shared accesses without their bounds test (saddr)
  fbar     bare1 without the fault-record tests before barriers only
  fst      bare1 without the fault tests around stores and atomics only
  rel1     (WGSL generated before session 22) the release without its
           second barrier: full words counted as stores complete them (no
           scan by thread 0), pending reads of unwritten bytes in one of two
           slots by the interval's parity, judged by every thread after the
           one barrier; what checks.rs's shadow_release now writes
"""
import re, sys, os
src = open(sys.argv[1]).read()
out, entry = sys.argv[2], sys.argv[3]
# A checked barrier's release, as wgsl/cfg/structured.rs writes it.
UNI = re.compile(r"  if \(workgroupUniformLoad\(&wg_full_at\) < SH_WORDS\) \{\n(?:.*\n)*?  sh_full = wg_full_at >= SH_WORDS;\n  \}\n")
# The release as checks.rs's shadow_release writes it (one barrier), since
# session 22.
REL = re.compile(r"( *)workgroupBarrier\(\);\n *if \(!sh_full\) \{\n *let u = atomicLoad\(&wg_uninit\[sh_rp\]\);\n(?:.*\n)*? *sh_full = atomicLoad\(&wg_nfull\) >= SH_WORDS;\n *\}\n")


def variant(kind, t):
    if kind in ("noshrd", "noinit", "none"):
        t = re.sub(r"\n\s*sh_rd\([^;]*\);", "", t)
    if kind in ("noinit", "none"):
        t = re.sub(r"\n\s*sh_wr\([^;]*\);", "", t)
    if kind in ("nouni", "noinit", "none"):
        t = UNI.sub("  workgroupBarrier();\n  sh_full = true;\n", t)
        t = REL.sub(r"\1workgroupBarrier();\n\1sh_full = true;\n", t)
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
    if kind in ("bare1", "bare2", "bare3", "fbar", "fst"):
        t = variant("none", t)
        t = re.sub(r"(  run_thread\(lid, cta, ncta, lidx\);\n)(?:.*\n)*?\}\n\nfn run_thread", r"\1}\n\nfn run_thread", t, count=1)
    if kind in ("bare2", "bare3", "fbar"):
        t = re.sub(r"\n\s*if \(g_fcls != 0u\) \{ raise_t\(g_fcls, g_fline, g_fa, g_lid\); \}", "", t)
    if kind in ("bare2", "bare3", "fst"):
        t = re.sub(r"if \(g_fcls == 0u\) \{ ([^{}]*) \}", r"\1", t)
    if kind == "bare3":
        t = t.replace("saddr(", "saddr_x(").replace("fn saddr_x(", "fn saddr(")
        t += ("\nfn saddr_x(a: vec2<u32>, size: u32, align: u32, line: u32, limit: u32, "
              "rb: u32, re: u32) -> u32 { return a.x; }\n")
    if kind == "rel1":
        t = t.replace("var<workgroup> wg_uninit: atomic<u32>;\n",
                      "var<workgroup> wg_uninit: atomic<u32>;\nvar<workgroup> wg_nfull: atomic<u32>;\n"
                      "var<workgroup> wg_un2: array<atomic<u32>, 2>;\nvar<private> rp: u32;\n", 1)
        t = t.replace("atomicMax(&wg_uninit, ((1023u", "atomicMax(&wg_un2[rp], ((1023u", 1)
        t = re.sub(r"fn sh_wr\(o: u32, size: u32\) \{\n.*\n\}\n",
                   "fn sh_wr(o: u32, size: u32) {\n  if (!sh_full && o < SHARED_BYTES) {\n"
                   "    let w = o >> 5u; let m = msk(size) << (o & 31u);\n"
                   "    let fm = msk(min(SHARED_BYTES - 32u * w, 32u));\n"
                   "    let old = atomicOr(&wg_init[w], m);\n"
                   "    if ((old & fm) != fm && ((old | m) & fm) == fm) { atomicAdd(&wg_nfull, 1u); }\n"
                   "  }\n}\n", t, count=1)
        t = UNI.sub("  workgroupBarrier();\n  if (!sh_full) {\n    let u = atomicLoad(&wg_un2[rp]);\n"
                    "    if (u != 0u) { raise_lidx(6u, u & 0x3fffffu, 1023u - (u >> 22u)); }\n"
                    "    rp = rp ^ 1u;\n    sh_full = atomicLoad(&wg_nfull) >= SH_WORDS;\n  }\n", t)
        t = t.replace("    sh_fill();", "    wg_full_at = atomicLoad(&wg_nfull);")
    return t


VARIANTS = ("noshrd", "nouni", "uni1", "noinit", "nosteps", "nogaddr", "none",
            "bare1", "bare2", "bare3", "fbar", "fst", "rel1")
for k in VARIANTS:
    d = os.path.join(out, k)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, entry + ".wgsl"), "w").write(variant(k, src))
