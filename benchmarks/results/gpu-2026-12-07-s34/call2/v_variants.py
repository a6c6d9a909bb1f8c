#!/usr/bin/env python3
"""Session 34 (untracked): variants of the versioned checked matmul_tiled WGSL.
usage: v_variants.py IN.wgsl OUTDIR ENTRY"""
import os, re, sys
src, out, entry = sys.argv[1:4]
t = open(src).read()
L = t.split("\n")
i = next(k for k, l in enumerate(L) if re.match(r"^ *if \(wdok\d+ != 0u\) \{$", l))
ind = re.match(r"^( *)", L[i]).group(1)
e = next(k for k in range(i + 1, len(L)) if L[k] == ind + "} else {")
c = next(k for k in range(e + 1, len(L)) if L[k] == ind + "}")
def clean_map(f):
    return L[:i + 1] + [f(l) for l in L[i + 1:e]] + L[e:]
def drop(pat):
    return lambda l: "" if re.match(pat, l.strip()) else l
forms = {}
forms["same"] = L
forms["noslow"] = L[:i] + L[i + 1:e] + L[c + 1:]
forms["nosteps"] = clean_map(drop(r"^steps = steps \+ \d+u;$"))
forms["nonbar"] = clean_map(drop(r"^g_nbar = g_nbar \+ 1u;$"))
m = next(k for k, l in enumerate(L) if l.startswith("fn main("))
end = next(k for k in range(m, len(L)) if L[k] == "}")
def noepi(lines):
    mm = next(k for k, l in enumerate(lines) if l.startswith("fn main("))
    ee = next(k for k in range(mm, len(lines)) if lines[k] == "}")
    r = next(k for k in range(mm, ee) if "run_thread(" in lines[k])
    return lines[:r + 1] + lines[ee:]
forms["noepi"] = noepi(L)
allv = [drop(r"^steps = steps \+ \d+u;$")(x) for x in forms["noslow"]]
allv = [drop(r"^g_nbar = g_nbar \+ 1u;$")(x) if False else x for x in allv]
forms["all"] = noepi(allv)
for name, lines in forms.items():
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, entry + ".wgsl"), "w").write("\n".join(lines))
    print(name)
