#!/usr/bin/env python3
"""Hand-made variants of a generated PTX kernel's WGSL (VGPU_DUMP_WGSL) for
session 27's questions, loaded with VGPU_LOAD_WGSL by mask_variants.sh:

usage: mask_variants.py IN.wgsl OUTDIR ENTRY -> OUTDIR/<variant>/<ENTRY>.wgsl
  same      as given (the run-to-run noise, and the dump's own speed)
  mask      the padded tiles' clamp `min(b >> 2u, CAP)` as `(b >> 2u) & M`
            (M = 2^m - 1 >= CAP), the shared array grown to M + 1 + kmax
            words: the same word for every in-bounds access, and the base's
            low zero bits (its alignment) visible to the driver
  bare      the fma regions' tests gone (`tiny(x)` false): the device's fma
            alone, inexact on subnormals (the cost of the tests)
  mask_bare both
  gsplit    checked kernels: gaddr's table search (its slow path) moved into a
            function of its own, gaddr_slow (mask_variants.sh also runs it
            with VGPU_SPV_NOINLINE=gaddr_slow, a knob build's DontInline)
  noops     the fma regions' operand tests gone, their result tests kept
            (inexact: the cost of the operand tests)
  nores     the result tests gone, the operand tests kept (inexact)
  noslow    the tests kept, each region's second run replaced by a store
            of one word (inexact: the cost of the second run's code)
  fold      a grid folded into a 2-D dispatch (more than 65,535 blocks in
            x): the block index as the linear index where the CUDA grid is
            1-D, without the three divisions by the grid's extents
  cover     lorenz_rk4: the tests of the loop-carried state and of the
            loop-invariant step sizes gone from the loop's regions (what
            testing each value once per thread rather than once per region
            would save; inexact as written)
  nowd      checked kernels: the watchdog gone (the step counts and each
            loop's iteration bound; inexact only for a kernel that hangs)
  noinit    checked kernels: the shared-memory initialisation check gone
            (the marks of each store, the test of each read, the report at
            each barrier and at the block's end; inexact only for a kernel
            that reads unwritten shared memory)
  noepi     checked kernels: the block's end without its two barriers (the
            initialisation report and the earliest fault's publication; a
            fault then goes unrecorded: the cost of the epilogue)
  nogaddr   checked kernels: each global access's region check gone (its
            byte offset used as given; inexact only for a kernel that strays)
  nochk     nowd, noinit, noepi and nogaddr together
  wdlet     checked kernels: the watchdog's limit (and each barrier loop's
            limit on its iterations, the limit divided) read once per thread
            into a `let` before the code (exact)
  noit      checked kernels: the barrier loops' iteration bound gone (the
            step counts and their tests kept; inexact only for a kernel
            that hangs)
  notest    checked kernels: the step counts' tests gone (the counts and
            the barrier loops' iteration bounds kept; inexact only for a
            kernel that hangs)
  hdronly   checked kernels: the steps counted at loop headers only (each
            header's count kept, every other block's gone: a lower bound
            of the thread's instructions; a hang still faults)
  hdrepi    hdronly and epibar
  wdnote    checked kernels: the watchdog's fault noted (its line and, where
            faults do not end the thread, its time) in place of raise(),
            taken as the thread's fault after run_thread returns (exact: a
            fault raised after the note is later)
  wdsel     checked kernels: the watchdog's test in a loop with barriers a
            branchless select of the line into the note (wdnote elsewhere;
            not exact: a later fault's record is not kept out)
  wdexit    checked kernels: the watchdog's tests out of the loops (after
            each loop's closing line; inexact: a hang is not caught)
  wdvre     wdnote and vreloop
  sel3      checked kernels (session 30's raise_if): the branchless raise
            selecting only g_fcls, g_fline and g_fkey, g_ft set to the
            thread's own index at its start (exact: g_fa and g_ft are
            their first values while g_fcls is 0)
  norec     checked kernels where faults do not end the thread: the fault
            record's details gone (raise sets only g_fcls; line, address,
            thread and time stay zero; inexact for a kernel that faults):
            what keeping them live costs
  keyonly   norec with the time kept (g_fkey: the block's earliest fault
            still chosen)
  sel1      checked kernels (raise_if): the watchdog noted in g_wd and
            g_wdk by select, taken as the thread's fault after run_thread
            returns (stores after it not held back)
  firstrun  checked kernels where faults do not end the thread: norec, and
            the block's end only the faulting blocks' least index noted
            (flt[12]) without a barrier: the first run of a scheme whose
            second run (only where a block faulted) records the details
  nosaddr   checked kernels: each 4-byte shared load's saddr test gone,
            its word read as a proven one is (rd_s_in, the index masked):
            what a proof of its bounds would save (inexact for a kernel
            that strays)
  frnosaddr firstrun of nosaddr
  nogate    checked kernels where faults do not end the thread: stores
            not held back after a fault (inexact for a kernel that faults)
  nohi      checked kernels: gaddr's fast path without its test of the
            address's high word (inexact for a wild 64-bit address)
  gfast     checked kernels before 5c4e5bb: gaddr's fast path as one test
            of the high word and the offset's low bits, one of the offset
            against the region's length less the size (exact where regions
            start aligned to the access; 5c4e5bb's gaddr keeps the length
            less the span in the cache and tests the address's low bits);
            gsplit too applies only to gaddr before 5c4e5bb
  wdga      nowd and nogaddr
  frnowd    firstrun of nowd
  frnog     firstrun of nogaddr
  epibar    checked kernels: the block's end without its barrier, each
            faulting thread recording its fault (the earliest of the block
            not chosen: inexact only for a kernel that faults)
  cheapemu  the emulated fma (`fma_f32`) gone from `fma_native_f32` (a
            suspect result returned with its last bit flipped; inexact where
            a case is suspect): what the emulation's code costs where it
            never runs
  devslow   each region's second run on the device's fma (`dev_fma` for
            `fma_native_f32`; inexact on subnormals): the cost of the
            second run's suspect tests and emulations, its copy kept
  slowloop  each region's second run as a loop over its fmas: a `switch`
            on the fma reached runs the statements up to the next fma, whose
            operands one `fma_native_f32` call after the `switch` takes (one
            emulation in the code, not one per fma; exact as generated)
  reloop    each region's straight second run (not the loop form) run
            again until no fma is left to emulate: its fmas the device's
            own, a suspect one (`fma_suspect`) taken from the emulated
            values found so far or, the first new one, noted; after the
            copy, the noted fma emulated once (`fma_f32`, one call in the
            code) and the copy run again from the restored inputs (exact:
            the registers live as in the fast copy, the emulation out of it)
  vloop     a loop without barriers whose body holds a region with a
            straight second run, written twice: the first copy without the
            second run (a suspect region restores its inputs and leaves the
            loop), the second after it, entered only then, each region of it
            run guarded from the start (exact: the cold code out of the hot
            loop)
  vreloop   vloop of reloop
  hoist     checked matmul_tiled with the fits test (c72104b): the loop
            written twice, the copy taken where the workgroup's entry fits
            (its `wdok`) and also every thread's global sites in the loop
            stay in their cached regions for every iteration the loop's
            bound allows (the A tile's pointer stepping by 64, the B tile's
            sign-extended index stepping by 16 N, each tested at its first
            and last iteration) and no fault came before: no watchdog test,
            no region test, no fault gate inside (exact: what loop versioning
            in the emitter would write)
  mintree   each region's tests as one running minimum of the tested
            magnitudes compared once with the threshold before `if (susN)`
            (exact: a flushed subnormal is still below 2^T, a NaN is never
            tiny and `min` keeps the other operand)
"""
import os, re, sys

src = open(sys.argv[1]).read()
out, entry = sys.argv[2], sys.argv[3]
CLAMP = re.compile(r"min\((r\d+) >> 2u, (\d+)u\)")


def mask(t):
    caps = {int(c) for _, c in CLAMP.findall(t)}
    if not caps:
        return None
    (cap,) = caps
    m = 1
    while m <= cap:
        m *= 2
    decl = re.search(r"var<workgroup> smem: array<u32, (\d+)>;", t)
    n = int(decl.group(1))
    kmax = n - cap - 1
    t = CLAMP.sub(lambda mm: f"(({mm.group(1)} >> 2u) & {m - 1}u)", t)
    return t.replace(decl.group(0), f"var<workgroup> smem: array<u32, {m + kmax}>;")


def bare(t):
    if "tiny(r" not in t:
        return None
    return re.sub(r"tiny\(r\d+\)", "false", t)


def cover(t):
    # The registers of the state (loaded before the loop, redefined by the
    # last region of each iteration) and the step sizes, as the dump names
    # them: the values tested in the loop's first region before any fma.
    names = ["r186", "r187", "r188", "r11", "r12", "r31"]
    for r in names:
        t = t.replace(f" | tiny({r})", "")
    return t


GADDR = re.compile(r"(fn gaddr\(a: vec2<u32>, size: u32, align: u32, line: u32, write: bool, c: ptr<private, vec2<u32>>\) -> u32 \{\n  let o = a.x - GB;\n  let r = \*c;\n  let d = a.x - r.x;\n  if \(.*\) \{ return o; \}\n)((?:.*\n)*?)\}\n")


def gsplit(t):
    m = GADDR.search(t)
    if not m:
        return None
    head, slow = m.group(1), m.group(2)
    new = (head + "  return gaddr_slow(a, size, align, line, write, c);\n}\n"
           "fn gaddr_slow(a: vec2<u32>, size: u32, align: u32, line: u32, write: bool, c: ptr<private, vec2<u32>>) -> u32 {\n"
           "  let o = a.x - GB;\n" + slow + "}\n")
    return t[:m.start()] + new + t[m.end():]


FOLD = "    cta = vec3<u32>(lin % ncta.x, (lin / ncta.x) % ncta.y, lin / (ncta.x * ncta.y));\n"


def fold(t):
    if FOLD not in t:
        return None
    return t.replace(FOLD, "    if (ncta.y == 1u && ncta.z == 1u) { cta = vec3<u32>(lin, 0u, 0u); } else {\n" + FOLD + "    }\n")


TEST = re.compile(r"^ *sus\d+ = sus\d+ \| tiny\(r\d+\)( \| (tiny\(r\d+\)|true))*;$")


def split_tests(t, keep_ops, keep_res):
    if "tiny(r" not in t:
        return None
    lines = t.split("\n")
    out = []
    for i, l in enumerate(lines):
        if TEST.match(l):
            res = "dev_fma(" in lines[i - 1] and l.count("tiny(") == 1
            if (res and not keep_res) or (not res and not keep_ops):
                continue
        out.append(l)
    return "\n".join(out)


def block_end(lines, i):
    """The index of the line closing the block that line i opens."""
    depth = 0
    j = i
    while True:
        depth += lines[j].count("{") - lines[j].count("}")
        if depth == 0:
            return j
        j += 1


SUS_IF = re.compile(r"^( *)if \((sus(\d+))\) \{$")


def second_runs(t, rewrite):
    """Each region's second run `if (susN) { ... }` of `t` as `rewrite(m,
    body)` returns it (m: the opening line's match, body: the lines inside;
    None: kept as it is); None where no run was rewritten."""
    lines = t.split("\n")
    out, i, done = [], 0, 0
    while i < len(lines):
        m = SUS_IF.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        j = block_end(lines, i)
        new = rewrite(m, lines[i + 1:j])
        if new is None:
            out.extend(lines[i:j + 1])
        else:
            out.extend(new)
            done += 1
        i = j + 1
    return "\n".join(out) if done else None


def noslow(t):
    if "tiny(r" not in t:
        return None
    return second_runs(t, lambda m, body: [f"{m.group(1)}if ({m.group(2)}) {{ gmem[0] = 0u; }}"])


WATCH = [re.compile(r"^ *steps = steps \+ \d+u;$"),
         re.compile(r"^ *if \(steps > words\[1\]\) \{ raise\(3u, .*\}$"),
         re.compile(r"^ *it\d+ = it\d+ \+ 1u;$"),
         re.compile(r"^ *if \(it\d+ > words\[1\] / \d+u\) \{ return; \}$")]


# A loop through barriers raises its watchdog without a branch (session 30).
WATCH_IF = re.compile(r"^ *raise_if\(steps > words\[1\], 3u, \d+u\);$")


def nowd(t):
    if "if (steps > words[1])" not in t and "raise_if(steps" not in t:
        return None
    return "\n".join(l for l in t.split("\n")
                     if not any(w.match(l) for w in WATCH + [WATCH_IF]))


AFTER_BAR = ("  if (!sh_full) {\n    let u = atomicLoad(&wg_uninit[sh_rp & 1u]);\n"
             "    if (u != 0u) { sh_report(u); }\n    sh_rp = sh_rp ^ 1u;\n"
             "    sh_full = atomicLoad(&wg_nfull) >= SH_WORDS;\n  }\n")


def noinit(t):
    if "fn sh_wr(" not in t:
        return None
    t = re.sub(r"^ *sh_wr\(t\d+, \d+u\);\n", "", t, flags=re.M)
    t = re.sub(r"^ *sh_rd\(t\d+, \d+u, \d+u\);\n", "", t, flags=re.M)
    t = t.replace(AFTER_BAR, "")
    t = t.replace("if (wg_round < 0x10000u) {\n      for (var s = 0u; s < 2u;",
                  "if (false) {\n      for (var s = 0u; s < 2u;")
    return t


EPI = re.compile(r"(  run_thread\(lid, cta, ncta, lidx\);\n)((?:.*\n)*?)\}\n")


def noepi(t):
    m = EPI.search(t)
    if not m or "wg_fmin" not in m.group(2):
        return None
    return t[:m.end(1)] + "}\n" + t[m.end():]


GA_HEAD_RE = re.compile(r"fn gaddr\(a: vec2<u32>, .*\) -> u32 \{\n")


def nogaddr(t):
    m = GA_HEAD_RE.search(t)
    if not m:
        return None
    return t[:m.end()] + "  if (!opq) { return a.x - GB; }\n" + t[m.end():]


def nochk(t):
    for f in (nowd, noinit, noepi, nogaddr):
        v = f(t)
        t = v if v is not None else t
    return t


IT_TEST = re.compile(r"words\[1\] / (\d+)u")


def wdlet(t):
    if "if (steps > words[1])" not in t:
        return None
    head = "fn run_thread(lid: vec3<u32>, cta: vec3<u32>, ncta: vec3<u32>, lidx: u32) {\n"
    if head not in t:
        return None
    divs = sorted(set(IT_TEST.findall(t)), key=int)
    lets = "  let wdl = words[1];\n" + "".join(f"  let wdl{d} = wdl / {d}u;\n" for d in divs)
    t = IT_TEST.sub(lambda m: f"wdl{m.group(1)}", t)
    t = t.replace("if (steps > words[1])", "if (steps > wdl)")
    return t.replace(head, head + lets, 1)


def noit(t):
    if "it" not in t or not re.search(r"^ *it\d+ = it\d+ \+ 1u;$", t, re.M):
        return None
    return "\n".join(l for l in t.split("\n") if not any(w.match(l) for w in WATCH[2:]))


def notest(t):
    if "if (steps > words[1])" not in t:
        return None
    return "\n".join(l for l in t.split("\n") if not WATCH[1].match(l))


def hdronly(t):
    if "if (steps > words[1])" not in t:
        return None
    ls = t.split("\n")
    keep = [l for i, l in enumerate(ls)
            if not (WATCH[0].match(l) and not (i + 1 < len(ls) and WATCH[1].match(ls[i + 1])))]
    return "\n".join(keep)


WD_TEST = re.compile(r"^( *)if \(steps > words\[1\]\) \{ raise\(3u, (\d+)u, vec2<u32>\(0u, 0u\)\); *(.*)\}$")
RUN_CALL = "  run_thread(lid, cta, ncta, lidx);\n"


# The variants' own note of the watchdog (v_wd, v_wdk: the tree has its own
# g_wd since 13bee50), taken as the thread's fault after run_thread returns.
NOTE_VARS = "var<private> v_wd: u32;\nvar<private> v_wdk: u32;\n"


def take_note(t, soft):
    take = ("  if (v_wd != 0u) { g_fcls = 3u; g_fline = v_wd; g_fa = vec2<u32>(0u, 0u);"
            + (" g_ft = lidx; g_fkey = v_wdk;" if soft else "") + " }\n")
    return t.replace(RUN_CALL, RUN_CALL + take, 1)


def wdnote(t, sel=False):
    if "if (steps > words[1]) { raise(3u" not in t or RUN_CALL not in t:
        return None
    soft = "var<private> g_nbar: u32;" in t
    key = "2u * g_nbar" if soft else "0u"
    out = []
    for l in t.split("\n"):
        m = WD_TEST.match(l)
        if m:
            ind, line, exit_ = m.group(1), m.group(2), m.group(3).strip()
            if sel and not exit_:
                out.append(f"{ind}v_wd = select(v_wd, {line}u, (steps > words[1]) & (v_wd == 0u));")
            else:
                out.append(f"{ind}if (steps > words[1]) {{ wd_note({line}u); {exit_} }}")
            continue
        out.append(l)
    t = take_note("\n".join(out), soft)
    decl = NOTE_VARS + (f"fn wd_note(line: u32) {{ if (v_wd == 0u && g_fcls == 0u) "
                        f"{{ v_wd = line; v_wdk = {key}; }} }}\n")
    return t.replace("fn raise(", decl + "fn raise(", 1)


def wdexit(t):
    if "if (steps > words[1])" not in t:
        return None
    ls = t.split("\n")
    moved = {}
    keep = []
    for i, l in enumerate(ls):
        if WD_TEST.match(l):
            # the enclosing loop's closing line
            k = i
            while k >= 0 and ls[k].strip() != "loop {":
                k -= 1
            if k >= 0:
                moved.setdefault(block_end(ls, k), []).append(WD_TEST.sub(r"\1if (steps > words[1]) { raise(3u, \2u, vec2<u32>(0u, 0u)); }", l))
                continue
        keep.append((i, l))
    out = []
    for i, l in keep:
        out.append(l)
        out.extend(moved.get(i, []))
    return "\n".join(out)


RAISE_IF = re.compile(r"fn raise_if\(c: bool, cls: u32, line: u32, a: vec2<u32>\) \{\n(?:.*\n)*?\}\n")


def sel3(t):
    m = RAISE_IF.search(t)
    if not m:
        return None
    ft = re.search(r"g_ft = select\(g_ft, (.*), w\);", m.group(0)).group(1)
    body = ("fn raise_if(c: bool, cls: u32, line: u32, a: vec2<u32>) {\n  let w = c & (g_fcls == 0u);\n"
            "  g_fline = select(g_fline, line, w); g_fkey = select(g_fkey, 2u * g_nbar, w);\n"
            "  g_fcls = select(g_fcls, cls, w);\n}\n")
    t = t[:m.start()] + body + t[m.end():]
    return t.replace("  g_lid = lid;\n", f"  g_lid = lid;\n  g_ft = {ft};\n", 1)


def sel1(t):
    m = RAISE_IF.search(t)
    if not m or RUN_CALL not in t:
        return None
    body = (NOTE_VARS + "fn raise_if(c: bool, cls: u32, line: u32, a: vec2<u32>) {\n"
            "  let w = c & (g_fcls == 0u) & (v_wd == 0u);\n"
            "  v_wd = select(v_wd, line, w); v_wdk = select(v_wdk, 2u * g_nbar, w);\n}\n")
    return take_note(t[:m.start()] + body + t[m.end():], True)


def norec(t, key=False):
    if "fn raise_if(" not in t:
        return None
    kk = " g_fkey = 2u * g_nbar;" if key else ""
    t = re.sub(r"(fn raise\(cls: u32, line: u32, a: vec2<u32>\) \{\n  if \(g_fcls == 0u\) \{\n)(?:.*\n){2}",
               lambda m: m.group(1) + f"    g_fcls = cls;{kk}\n", t, count=1)
    ks = " g_fkey = select(g_fkey, 2u * g_nbar, w);" if key else ""
    t = re.sub(r"(fn raise_if\(c: bool, cls: u32, line: u32\) \{\n  let w = .*\n)(?:.*\n){2}",
               lambda m: m.group(1) + f"  g_fcls = select(g_fcls, cls, w);{ks}\n", t, count=1)
    kl = " g_fkey = 2u * g_nbar - 1u;" if key else ""
    t = re.sub(r"(fn raise_lidx\(cls: u32, line: u32, t: u32\) \{\n  if \(g_fcls == 0u\) \{\n)(?:.*\n)",
               lambda m: m.group(1) + f"    g_fcls = cls;{kl}\n", t, count=1)
    return t


EPI_BAR = ("  if (g_fcls != 0u) { atomicMax(&wg_fmin, ~g_fkey); }\n  workgroupBarrier();\n"
           "  if (g_fcls != 0u && atomicLoad(&wg_fmin) == ~g_fkey) {")


def epibar(t):
    if EPI_BAR not in t:
        return None
    return t.replace(EPI_BAR, "  if (g_fcls != 0u) {")


EMU_CALL = "  if (fma_suspect(a, b, c, r)) { return fma_f32(a, b, c); }\n"


EPI_FULL = EPI_BAR + " raise_t(g_fcls, g_fline, g_fa, lid3(g_ft)); }\n"


def firstrun(t):
    t = norec(t)
    if t is None or EPI_FULL not in t:
        return None
    return t.replace("  g_nbar = g_nbar + 1u;\n" + EPI_FULL,
                     "  if (g_fcls != 0u) { atomicMin(&flt[12], g_blin); }\n")


SADDR_LD = re.compile(r"let (t\d+) = saddr\(w64\((r\d+)\), 4u, 4u, \d+u, SHARED_BYTES, RSMEM_BEGIN, RSMEM_END\);\n"
                      r"( *)if \(\1 != 0xffffffffu\) \{ (r\d+) = \(ld_s\(\1, 4u, false\)\)\.x; \}")


def nosaddr(t):
    m = re.search(r"\(r\d+ >> 2u\) & (\d+)u\)", t)
    if not m or not SADDR_LD.search(t):
        return None
    return SADDR_LD.sub(lambda x: f"{x.group(4)} = (vec2<u32>(rd_s_in((({x.group(2)} >> 2u) & {m.group(1)}u)), 0u)).x;", t)


def nogate(t):
    if "if (g_fcls == 0u) { wr_" not in t and "if (g_fcls == 0u) { st_" not in t:
        return None
    return re.sub(r"if \(g_fcls == 0u\) \{ ((?:wr|st)_[gs](?:_in)?\(.*\);) \}", r"\1", t)


GA_FAST = "  if (a.y == 0u && d < r.y && r.y - d >= size && (a.x % align) == 0u) { return o; }"
# gaddr's fast path since 5c4e5bb (the cache's length less the span).
GA_SPAN = "  if ((a.y | (a.x & (align - 1u))) == 0u && a.x - r.x < r.y) { return o; }"


def nohi(t):
    if GA_FAST in t:
        return t.replace(GA_FAST, "  if (d < r.y && r.y - d >= size && (a.x % align) == 0u) { return o; }")
    if GA_SPAN in t:
        return t.replace(GA_SPAN, "  if ((a.x & (align - 1u)) == 0u && a.x - r.x < r.y) { return o; }")
    return None


def gfast(t):
    if GA_FAST not in t:
        return None
    return t.replace(GA_FAST, "  if ((a.y | (d & (align - 1u))) == 0u && d < r.y - size + 1u && r.y >= size) { return o; }")


def cheapemu(t):
    if EMU_CALL not in t:
        return None
    return t.replace(EMU_CALL, "  if (fma_suspect(a, b, c, r)) { return r ^ 1u; }\n")


def devslow(t):
    if "fma_native_f32(r" not in t:
        return None
    return re.sub(r"fma_native_f32\((r\d+)", r"dev_fma(\1", t)


FMA_LINE = re.compile(r"^ *(r\d+) = fma_native_f32\((.*)\);$")


def split_args(a):
    out, depth, cur = [], 0, ""
    for ch in a:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "(<"
        depth -= ch in ")>"
        cur += ch
    out.append(cur.strip())
    return out


def slowloop(t):
    def rewrite(m, body):
        n = m.group(3)
        fmas = [k for k, l in enumerate(body) if FMA_LINE.match(l)]
        if len(fmas) < 2:
            return None
        res = [m.group(0), f"        var fk{n} = 0u; var fa{n} = 0u; var fb{n} = 0u; var fc{n} = 0u; var fx{n} = 0u;",
               "        loop {", f"        switch fk{n} {{"]
        prev = 0
        dst = None
        for c, k in enumerate(fmas):
            res.append(f"        case {c}u: {{")
            if dst:
                res.append(f"        {dst} = fx{n};")
            res.extend(body[prev:k])
            mm = FMA_LINE.match(body[k])
            a, b, cc = split_args(mm.group(2))
            res.append(f"        fa{n} = {a}; fb{n} = {b}; fc{n} = {cc};")
            res.append("        }")
            dst = mm.group(1)
            prev = k + 1
        res.append("        default: {")
        res.append(f"        {dst} = fx{n};")
        res.extend(body[prev:])
        res += ["        }", "        }", f"        if (fk{n} == {len(fmas)}u) {{ break; }}",
                f"        fx{n} = fma_native_f32(fa{n}, fb{n}, fc{n});", f"        fk{n} = fk{n} + 1u;",
                "        }", m.group(1) + "}"]
        return res
    return second_runs(t, rewrite)


def reloop(t):
    if "fma_native_f32(r" not in t:
        return None

    def rewrite(m, body):
        if not any(FMA_LINE.match(l) for l in body) or any("switch" in l for l in body):
            return None
        n, ind = m.group(3), m.group(1)
        nf = sum(1 for l in body if FMA_LINE.match(l))
        out = [m.group(0), f"{ind}var dn{n} = 0u; var ov{n}: array<u32, {nf}>;",
               f"{ind}var pd{n} = 0u; var pa{n} = 0u; var pb{n} = 0u; var pc{n} = 0u;",
               f"{ind}loop {{", f"{ind}pd{n} = 0xffffffffu;"]
        k = 0
        for l in body:
            fm = FMA_LINE.match(l)
            if not fm:
                out.append(l)
                continue
            a, b, c = split_args(fm.group(2))
            r = fm.group(1)
            out.append(f"{ind}{{ let qa = {a}; let qb = {b}; let qc = {c}; var qd = dev_fma(qa, qb, qc);")
            out.append(f"{ind}if (fma_suspect(qa, qb, qc, qd)) {{ if ({k}u < dn{n}) {{ qd = ov{n}[{k}]; }} "
                       f"else if (pd{n} == 0xffffffffu) {{ pd{n} = {k}u; pa{n} = qa; pb{n} = qb; pc{n} = qc; }} }}")
            out.append(f"{ind}{r} = qd; }}")
            k += 1
        out.append(f"{ind}if (pd{n} == 0xffffffffu) {{ break; }}")
        out.append(f"{ind}ov{n}[min(pd{n}, {nf - 1}u)] = fma_f32(pa{n}, pb{n}, pc{n}); dn{n} = pd{n} + 1u;")
        out.append(f"{ind}}}")
        out.append(ind + "}")
        return out
    return second_runs(t, rewrite)


def vloop(t):
    lines = t.split("\n")
    for i, l in enumerate(lines):
        if l.strip() != "loop {":
            continue
        j = block_end(lines, i)
        body = lines[i + 1:j]
        if any("Barrier" in x for x in body) or any("switch" in x for x in body):
            continue
        fast, slow, found, k = [], [], False, 0
        while k < len(body):
            m = re.match(r"^( *)if \((sus\d+)\) \{$", body[k])
            if not m:
                fast.append(body[k])
                slow.append(re.sub(r"^( *)var (sus\d+) = .*;$", r"\1var \2 = true;", body[k]))
                k += 1
                continue
            e = i + 1 + k
            end = block_end(lines, e) - (i + 1)
            inner = body[k + 1:end]
            if not any("fma_native_f32" in x or "fma_suspect(" in x for x in inner):
                fast.extend(body[k:end + 1])
                slow.extend(body[k:end + 1])
                k = end + 1
                continue
            found = True
            restores = [x for x in inner if re.match(r"^ *r\d+ = sv\d+_\d+;$", x)]
            fast.append(body[k])
            fast.extend(restores)
            fast.append("        vslow = true; break;")
            fast.append(lines[i + 1 + end])
            slow.extend(body[k:end + 1])
            k = end + 1
        if not found:
            continue
        ind = re.match(r"^( *)", l).group(1)
        new = ([f"{ind}var vslow = false;", l] + fast + [lines[j]] +
               [f"{ind}if (vslow) {{", l] + slow + [lines[j], f"{ind}}}"])
        return "\n".join(lines[:i] + new + lines[j + 1:])
    return None


TINY_FN = re.compile(r"fn tiny\(x: u32\) -> bool \{ return abs\(f\(x\)\) < ([0-9.e+-]+f); \}")
TEST_LINE = re.compile(r"^( *)(sus\d+) = \2 \| (.*);$")


def mintree(t):
    m = TINY_FN.search(t)
    if not m:
        return None
    thr = m.group(1)
    out = []
    for l in t.split("\n"):
        d = re.match(r"^( *)var (sus(\d+)) = (.*);$", l)
        if d:
            out.append(l)
            out.append(f"{d.group(1)}var mn{d.group(3)} = 3.4e38f;")
            continue
        tl = TEST_LINE.match(l)
        if tl and "tiny(" in tl.group(3):
            n = tl.group(2)[3:]
            terms = [x.strip() for x in tl.group(3).split("|")]
            regs = [re.fullmatch(r"tiny\((r\d+)\)", x) for x in terms]
            if all(regs):
                e = f"abs(f({regs[0].group(1)}))"
                for r in regs[1:]:
                    e = f"min({e}, abs(f({r.group(1)})))"
                out.append(f"{tl.group(1)}mn{n} = min(mn{n}, {e});")
                continue
        i = re.match(r"^( *)if \((sus(\d+))\) \{$", l)
        if i:
            out.append(f"{i.group(1)}{i.group(2)} = {i.group(2)} | (mn{i.group(3)} < {thr});")
        out.append(l)
    return "\n".join(out)


HOIST_A = re.compile(r"^ *let (t\d+) = gaddr\((r\d+), 4u, 4u, \d+u, false, &(gc\d+), 4u\);$")


def hoist(t):
    """matmul_tiled's loop versioned (the `hoist` form above), or None where
    the kernel is not the one this was written for."""
    lines = t.split("\n")
    try:
        v = next(i for i, l in enumerate(lines) if re.match(r"^ *wdok\d+ = workgroupUniformLoad", l))
    except StopIteration:
        return None
    h = re.search(r"wdok(\d+)", lines[v]).group(1)
    lp = v + 1
    if lines[lp].strip() != "loop {":
        return None
    end = block_end(lines, lp)
    body = lines[lp:end + 1]
    text = "\n".join(body)
    # The two sites: A through a pointer stepped by an immediate, B through
    # add64(base, sign-extended index << 2) with the index stepped by a
    # register shifted left by 4.
    sites = [(i, HOIST_A.match(l)) for i, l in enumerate(body) if HOIST_A.match(l)]
    if len(sites) != 2:
        return None
    (ia, ma), (ib, mb) = sites
    pa, ca = ma.group(2), ma.group(3)
    pb, cb = mb.group(2), mb.group(3)
    step_a = re.search(rf"{pa} = add64\({pa}, vec2<u32>\((\d+)u, 0u\)\);", text)
    defb = re.search(rf"{pb} = add64\((r\d+), (r\d+)\);", text)
    if not step_a or not defb:
        return None
    base_b, wide = defb.group(1), defb.group(2)
    idx = re.search(rf"{wide} = vec2<u32>\((r\d+) << 2u, bitcast<u32>\(bitcast<i32>\((r\d+)\) >> 30u\)\);", text)
    if not idx:
        return None
    ib_reg = idx.group(1)
    stp = re.search(rf"{ib_reg} = \(\({ib_reg} \+ (r\d+)\) & msk\(32u\)\);", text)
    if not stp:
        return None
    st_reg = stp.group(1)
    st_def = re.search(rf"{st_reg} = shl32\((r\d+), 4u, 32u\);", text)
    if not st_def:
        return None
    n_reg = st_def.group(1)
    # The per-thread test: the fits block's condition gains the sites'.
    fit = next(i for i in range(v - 8, v) if "atomicStore(&wg_wdslow, 1u)" in lines[i])
    kl = "(max(d, 1u) - 1u)"
    cond = (f"g_fcls == 0u && {pa}.y == 0u && ({pa}.x & 3u) == 0u && {kl} < 0x3ffffffu"
            f" && {pa}.x - {ca}.x < {ca}.y && {pa}.x + {step_a.group(1)}u * {kl} >= {pa}.x"
            f" && {pa}.x + {step_a.group(1)}u * {kl} - {ca}.x < {ca}.y"
            f" && {base_b}.y == 0u && ({base_b}.x & 3u) == 0u"
            f" && {ib_reg} <= 0x3fffffffu && bitcast<i32>(shl32({n_reg}, 4u, 32u)) >= 0i"
            f" && {kl} <= (0x3fffffffu - {ib_reg}) / max(shl32({n_reg}, 4u, 32u), 1u)"
            f" && {base_b}.x + 4u * ({ib_reg} + {kl} * shl32({n_reg}, 4u, 32u)) >= {base_b}.x"
            f" && {base_b}.x + 4u * {ib_reg} - {cb}.x < {cb}.y"
            f" && {base_b}.x + 4u * ({ib_reg} + {kl} * shl32({n_reg}, 4u, 32u)) - {cb}.x < {cb}.y")
    lines[fit] = lines[fit].replace("if (!(steps <= words[1] && ", f"if (!({cond} && steps <= words[1] && ")
    # The fast copy: no watchdog test, the sites' offsets as given, no gates.
    fast = []
    i = 0
    while i < len(body):
        l = body[i]
        if l.strip() == f"if (wdok{h} == 0u) {{":
            i = block_end(body, i) + 1
            continue
        m = HOIST_A.match(l)
        if m:
            fast.append(re.sub(r"gaddr\((r\d+),.*\);", r"(\1).x - GB;", l))
            i += 1
            continue
        l = re.sub(r"if \((t\d+) != 0xffffffffu\) \{ (.*) \}$", r"\2", l)
        l = re.sub(r"if \(g_fcls == 0u\) \{ (.*) \}$", r"\1", l)
        fast.append(l)
        i += 1
    indent = re.match(r"^( *)", body[0]).group(1)
    out = lines[:lp] + [f"{indent}if (wdok{h} != 0u) {{"] + fast + [f"{indent}}} else {{"] + body + [f"{indent}}}"] + lines[end + 1:]
    return "\n".join(out)


forms = {"same": lambda t: t, "mask": mask, "bare": bare,
         "mask_bare": lambda t: mask(bare(t)) if mask(t) and bare(t) else None,
         "gsplit": gsplit,
         "noops": lambda t: split_tests(t, False, True),
         "nores": lambda t: split_tests(t, True, False),
         "noslow": noslow,
         "fold": fold,
         "nowd": nowd, "noinit": noinit, "noepi": noepi,
         "nogaddr": nogaddr, "nochk": nochk,
         "wdlet": wdlet, "noit": noit, "notest": notest, "epibar": epibar,
         "hdronly": hdronly, "sel3": sel3, "sel1": sel1,
         "norec": norec, "keyonly": lambda t: norec(t, True),
         "wdnote": wdnote, "wdsel": lambda t: wdnote(t, True), "wdexit": wdexit,
         "wdvre": lambda t: wdnote(vloop(reloop(t))) if reloop(t) and vloop(reloop(t)) else None,
         "hdrepi": lambda t: epibar(hdronly(t)) if hdronly(t) and epibar(t) else None,
         "firstrun": firstrun,
         "nogate": nogate, "nohi": nohi, "gfast": gfast,
         "wdga": lambda t: nogaddr(nowd(t)) if nowd(t) and nogaddr(t) else None,
         "nosaddr": nosaddr,
         "frnosaddr": lambda t: firstrun(nosaddr(t)) if nosaddr(t) else None,
         "frnowd": lambda t: firstrun(nowd(t)) if nowd(t) else None,
         "frnog": lambda t: firstrun(nogaddr(t)) if nogaddr(t) else None,
         "cheapemu": cheapemu, "devslow": devslow, "slowloop": slowloop,
         "mintree": mintree,
         "hoist": hoist if entry == "matmul_tiled" else (lambda t: None),
         "reloop": reloop,
         "vloop": vloop,
         "vreloop": lambda t: vloop(reloop(t)) if reloop(t) else None,
         "cover": cover if entry == "lorenz_rk4" else (lambda t: None)}
for name, fn in forms.items():
    v = fn(src)
    if v is None:
        continue
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, entry + ".wgsl"), "w").write(v)
    print(name)
