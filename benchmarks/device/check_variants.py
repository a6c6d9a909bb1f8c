#!/usr/bin/env python3
"""Hand-made variants of a checked PTX kernel's WGSL (VGPU_DUMP_WGSL), each
without one family of checks, to time what it costs (check_variants.sh loads
each with VGPU_LOAD_WGSL). The variants are not checked kernels any more.

usage: check_variants.py IN.wgsl OUTDIR ENTRY  -> OUTDIR/<variant>/<ENTRY>.wgsl
  noshrd   shared loads without their initialisation notes (sh_rd)
  nouni    barriers without the release (shadow_release's judgement after
           the one barrier): one workgroupBarrier, shared memory taken as
           all written
  noinit   the whole initialisation check: nouni, noshrd and no shadow marks
           of stores (sh_wr)
  nosteps  no watchdog (step counts and their tests)
  nogaddr  global accesses without the region table search (the offset as is)
  none     all of noinit, nosteps and nogaddr
  bare1    none, and no judgement at the block's end (its barrier)
  bare2    bare1, and no fault-record tests around accesses and barriers
  bare3    bare2, and shared accesses without their bounds test (saddr)
  fbar     bare1 without the fault record's per-barrier code (the count of barriers passed)
  fst      bare1 without the fault tests around stores and atomics only
  nbar0    as generated, without the counts of barriers passed
  keys0    as generated, a fault kept without its time (nor the block's
           least time lowered)
  noit     as generated, without the iteration counts that end a thread in
           a loop after its fault (`itN`, their `return` in loops with
           barriers)
  wdnock   as generated, the watchdog's step counts kept, their tests gone
  wdlim    as generated, the watchdog's limit (words[1]) read once per
           thread into a private, not at each test
  wdflag   as generated, each watchdog test a branch-free flag
           (`wd_hit |= steps > limit`), raised once at the thread's end
  wdg      as generated, each watchdog test keeping its branch but only
           noting its line in a private (no raise)
  wdhdr    as generated, the watchdog counting loop-header visits only
           (one per header, the other blocks' counts gone)
  same     as generated (loaded like the variants: the run-to-run noise)
  gfast    as generated, a global access site's region cache holding the
           region's absolute start and length: one subtraction and two
           comparisons where gaddr's fast path has two subtractions and
           four comparisons (a.x >= GB and o >= r.x folded into d < len)

Session 23's call 2 also ran `end1` and `old3` on the block's end of
fd9a4d0 (a second barrier before the earliest fault was recorded, since
removed); see this file at fd9a4d0.

Sessions 21 and 22 also ran `uni1` (a plain barrier once all shared memory
was written) and `rel1` (the one-barrier release by hand) on the WGSL of
their time, which wrote each barrier as a uniform load; the emitter writes
the one-barrier release since session 22 (bdc6800), so neither applies to
what it generates now: see this file at 408c4e2 for them.
"""
import re, sys, os
src = open(sys.argv[1]).read()
out, entry = sys.argv[2], sys.argv[3]
# A checked barrier's release, as checks.rs's shadow_release writes it.
REL = re.compile(r"( *)workgroupBarrier\(\);\n *if \(!sh_full\) \{\n *let u = atomicLoad\(&wg_uninit\[sh_rp\]\);\n(?:.*\n)*? *sh_full = atomicLoad\(&wg_nfull\) >= SH_WORDS;\n *\}\n")


def variant(kind, t):
    if kind in ("noshrd", "noinit", "none"):
        t = re.sub(r"\n\s*sh_rd\([^;]*\);", "", t)
    if kind in ("noinit", "none"):
        t = re.sub(r"\n\s*sh_wr\([^;]*\);", "", t)
    if kind in ("nouni", "noinit", "none"):
        t = REL.sub(r"\1workgroupBarrier();\n\1sh_full = true;\n", t)
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
        # The per-barrier cost of the fault record: the count of barriers
        # passed (before 1b8fe4f: a test and raise_t before each barrier).
        t = re.sub(r"\n\s*g_nbar = g_nbar \+ 1u;", "", t)
        t = re.sub(r"\n\s*if \(g_fcls != 0u\) \{ raise_t\(g_fcls, g_fline, g_fa, g_lid\); \}", "", t)
    if kind in ("bare2", "bare3", "fst"):
        t = re.sub(r"if \(g_fcls == 0u\) \{ ([^{}]*) \}", r"\1", t)
    if kind == "bare3":
        t = t.replace("saddr(", "saddr_x(").replace("fn saddr_x(", "fn saddr(")
        t += ("\nfn saddr_x(a: vec2<u32>, size: u32, align: u32, line: u32, limit: u32, "
              "rb: u32, re: u32) -> u32 { return a.x; }\n")
    if kind == "nbar0":
        t = re.sub(r"g_nbar = g_nbar \+ 1u;\n\s*", "", t)
    if kind == "keys0":
        t = re.sub(r" g_fkey = 2u \* g_nbar[^;]*;", "", t)
        t = re.sub(r"\n\s*atomicMax\(&wg_fmin, ~g_fkey\);", "", t)
    if kind == "noit":
        t = re.sub(r"\n\s*it\d+ = it\d+ \+ 1u;\n\s*if \(it\d+ > words\[1\] / \d+u\) \{ return; \}", "", t)
    if kind == "wdnock":
        t = re.sub(r"\n\s*if \(steps > words\[1\]\) \{[^}]*\}", "", t)
    if kind == "wdlim":
        t = t.replace("if (steps > words[1])", "if (steps > wd_lim)")
        t = re.sub(r"(it\d+) > words\[1\] /", r"\1 > wd_lim /", t)
        t = t.replace("  seed_caches();\n", "  seed_caches();\n  wd_lim = words[1];\n", 1)
        t += "\nvar<private> wd_lim: u32;\n"
    if kind in ("wdflag", "wdg"):
        if kind == "wdflag":
            rep = r"wd_hit = wd_hit | u32(steps > words[1]);"
        else:
            rep = r"if (steps > words[1]) { wd_hit = \1u; }"
        t = re.sub(r"if \(steps > words\[1\]\) \{ raise\(3u, (\d+)u, vec2<u32>\(0u, 0u\)\); [^}]*\}", rep, t)
        t = t.replace("  run_thread(lid, cta, ncta, lidx);\n",
                      "  run_thread(lid, cta, ncta, lidx);\n  if (wd_hit != 0u) { raise(3u, wd_hit, vec2<u32>(0u, 0u)); }\n", 1)
        t += "\nvar<private> wd_hit: u32;\n"
    if kind == "wdhdr":
        t = re.sub(r"steps = steps \+ \d+u;(\n\s*if \(steps > words)", r"steps = steps + 1u;\1", t)
        t = re.sub(r"\n\s*steps = steps \+ \d+u;(?!\n\s*if \(steps)", "", t)
    if kind == "gfast":
        old = ("  let o = a.x - GB;\n  let r = *c;\n"
               "  if (a.y == 0u && a.x >= GB && o >= r.x && o < r.y && r.y - o >= size && (o % align) == 0u) { return o; }\n")
        new = ("  let o = a.x - GB;\n  let r = *c;\n  let d = a.x - r.x;\n"
               "  if (a.y == 0u && d < r.y && r.y - d >= size && (a.x % align) == 0u) { return o; }\n")
        if old not in t:
            return t  # the emitter's own form since fecd795
        t = t.replace(old, new)
        t = t.replace("        *c = vec2<u32>(s, e);\n", "        *c = vec2<u32>(s + GB, e - s);\n")
        t = re.sub(r"(gc\d+) = vec2<u32>\(words\[s \+ (\d+)u\], words\[s \+ (\d+)u\]\);",
                   r"\1 = vec2<u32>(words[s + \2u] + GB, words[s + \3u] - words[s + \2u]);", t)
    return t


VARIANTS = ("noshrd", "nouni", "noinit", "nosteps", "nogaddr", "none",
            "bare1", "bare2", "bare3", "fbar", "fst", "nbar0", "keys0",
            "noit", "wdnock", "wdlim", "gfast", "wdflag", "wdg", "wdhdr", "same")
for k in VARIANTS:
    d = os.path.join(out, k)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, entry + ".wgsl"), "w").write(variant(k, src))
