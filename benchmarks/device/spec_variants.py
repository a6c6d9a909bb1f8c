#!/usr/bin/env python3
"""Hand-made variants of a generated PTX kernel's WGSL (VGPU_DUMP_WGSL), to time
what the speculative fma regions (crates/vgpu-ir/src/wgsl/cfg/speculate.rs) and
the shared-memory indexing cost on a GPU (spec_variants.sh loads each with
VGPU_LOAD_WGSL). Only `cur` and the test forms flt/int/sat/mix are exact on a
device whose fma flushes subnormals (and flt/mix only where `min` returns the
non-NaN operand); the others measure a cost, their results may differ.

usage: spec_variants.py IN.wgsl OUTDIR ENTRY  -> OUTDIR/<variant>/<ENTRY>.wgsl
  bare        the device's fma alone: no tests, no second run (inexact)
  noslow      the tests kept, the second run replaced by a trivial write (inexact)
  flt         min(|x|) accumulated per region, one comparison at its end
  flt_noslow  flt without the second run (inexact)
  int         min(bits & 0x7fffffff) accumulated, one comparison at its end
  sat         product of saturate(|x| * 2^126) (FMA-pipe operations only)
  mix         every 5th test as sat, the others as flt
  noshchk     checked kernels: shared loads without bounds/alignment/init checks
  <v>_pc      unchecked kernels: shared loads as smem[min(base >> 2, CAP) + k]
              on a padded array (one clamp per base), for v in cur, bare, flt
              (the emitter indexes so itself since 5478215, padded_smem.rs:
              these variants then change nothing)
"""
import re, sys, os
src = open(sys.argv[1]).read().split("\n")
out, entry = sys.argv[2], sys.argv[3]

def slow_span(lines, i):
    """index of the closing line of the block opened at line i"""
    depth = 0
    for j in range(i, len(lines)):
        depth += lines[j].count("{") - lines[j].count("}")
        if depth == 0:
            return j
    raise SystemExit("unbalanced")

# How each form folds one tested value `a` into the accumulator `e`.
FLT = "min({e}, abs(f({a})))"
SAT = "({e} * saturate(abs(f({a})) * 8.50705917e37f))"
INT = "min({e}, ({a}) & 0x7fffffffu)"
# Each one-accumulator form: its type, start, fold and the test at the end.
ACC = {
    "flt": ("f32", "1.0f", FLT, "< 1.17549435e-38f"),
    "flt_noslow": ("f32", "1.0f", FLT, "< 1.17549435e-38f"),
    "sat": ("f32", "1.0f", SAT, "< 1.0f"),
    "int": ("u32", "0xffffffffu", INT, "< 0x00800000u"),
}


def fold(acc, args, form):
    e = acc
    for a in args:
        e = form.format(e=e, a=a)
    return e


mixn = [0]
def transform(kind):
    L = list(src)
    res = []
    i = 0
    while i < len(L):
        ln = L[i]
        m = re.match(r"(\s*)var (sus\d+) = false;", ln)
        if m:
            ind, s = m.groups()
            if kind in ("bare",):
                i += 1; continue
            if kind == "mix":
                res.append(f"{ind}var {s}: f32 = 1.0f;")
                res.append(f"{ind}var {s}_s: f32 = 1.0f;")
            elif kind in ACC:
                ty, init = ACC[kind][:2]
                res.append(f"{ind}var {s}: {ty} = {init};")
            else:
                res.append(ln)
            i += 1; continue
        m = re.match(r"(\s*)(sus\d+) = \2 \| (.*);$", ln)
        if m:
            ind, s, rest = m.groups()
            args = re.findall(r"tiny\(([^()]*)\)", rest)
            if kind == "bare":
                i += 1; continue
            if kind in ACC:
                res.append(f"{ind}{s} = {fold(s, args, ACC[kind][2])};")
            elif kind == "mix":
                every5 = []
                for a in args:
                    mixn[0] += 1
                    every5.append(mixn[0] % 5 == 0)
                res.append(f"{ind}{s} = {fold(s, [a for a, x in zip(args, every5) if not x], FLT)};")
                sat = [a for a, x in zip(args, every5) if x]
                if sat:
                    res.append(f"{ind}{s}_s = {fold(s + '_s', sat, SAT)};")
            else:
                res.append(ln)
            i += 1; continue
        m = re.match(r"(\s*)if \((sus\d+)\) \{", ln)
        if m:
            ind, s = m.groups()
            j = slow_span(L, i)
            if kind in ACC:
                cond = f"{s} {ACC[kind][3]}"
            elif kind == "mix":
                cond = f"({s} {ACC['flt'][3]}) | ({s}_s {ACC['sat'][3]})"
            else:
                cond = s
            if kind == "bare":
                i = j + 1; continue
            if kind.endswith("noslow"):
                # keep the tests observable: a trivial write of the first restored register
                body = [l for l in L[i+1:j] if re.match(r"\s*r\d+ = sv", l)]
                first = body[0].strip().split(" = ")[0] if body else None
                res.append(f"{ind}if ({cond}) {{")
                if first:
                    res.append(f"{ind}  {first} = 0x7fc00000u;")
                res.append(f"{ind}}}")
                i = j + 1; continue
            res.append(f"{ind}if ({cond}) {{")
            i += 1; continue
        res.append(ln)
        i += 1
    return "\n".join(res)

for kind in ("bare", "noslow", "flt", "flt_noslow", "int", "sat", "mix"):
    d = os.path.join(out, kind)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, entry + ".wgsl"), "w").write(transform(kind))
    print(kind, d)

# noshchk: shared loads without their bounds/alignment/initialisation checks
# (what hoisting those checks out of a region would leave).
txt = "\n".join(src)
pat = re.compile(r"let (t\d+) = saddr\((.*), 4u, 4u, (\d+)u, SHARED_BYTES, RSMEM_BEGIN, RSMEM_END\);\n(\s*)if \(\1 != 0xffffffffu\) \{\n\s*sh_rd\(\1, 4u, \3u\);\n\s*\}\n\s*if \(\1 != 0xffffffffu\) \{ (r\d+) = \(ld_s\(\1, 4u, false\)\)\.x; \}")
new, n = pat.subn(lambda m: f"let {m.group(1)} = ({m.group(2)}).x;\n{m.group(4)}{m.group(5)} = rd_s({m.group(1)} >> 2u);", txt)
d = os.path.join(out, "noshchk"); os.makedirs(d, exist_ok=True)
open(os.path.join(d, entry + ".wgsl"), "w").write(new)
print("noshchk", n, "loads")

# padclamp (unchecked kernels): shared loads as smem[min(base>>2, CAP) + k] on a
# padded array, so one clamp per base serves every constant offset.
def padclamp(txt):
    m = re.search(r"var<workgroup> smem: array<u32, (\d+)>;", txt)
    if not m:
        return None
    words = int(m.group(1))
    pat = re.compile(r"let (t\d+) = \((?:add64\(w64\((r\d+)\), vec2<u32>\((\d+)u, 0u\)\)|w64\((r\d+)\))\)\.x;\n(\s*)(r\d+) = \(ld_s\(\1, 4u, false\)\)\.x;")
    maxk = [0]
    def rep(mm):
        base = mm.group(2) or mm.group(4)
        k = int(mm.group(3) or 0)
        if k % 4:
            return mm.group(0)
        maxk[0] = max(maxk[0], k // 4)
        return f"{mm.group(6)} = smem[min({base} >> 2u, {words - 1}u) + {k // 4}u];"
    new, n = pat.subn(rep, txt)
    if n == 0:
        return None
    return new.replace(f"var<workgroup> smem: array<u32, {words}>;", f"var<workgroup> smem: array<u32, {words + maxk[0]}>;")

for kind in ("cur", "bare", "flt"):
    t = "\n".join(src) if kind == "cur" else transform(kind)
    new = padclamp(t)
    if new:
        d = os.path.join(out, kind + "_pc"); os.makedirs(d, exist_ok=True)
        open(os.path.join(d, entry + ".wgsl"), "w").write(new)
        print(kind + "_pc")
