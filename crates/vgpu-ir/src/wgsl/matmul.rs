//! WGSL generators for the matmul kernels. The shape is baked into the source as
//! constants (each shape is its own kernel in the cache, so the compiler sees the
//! exact trip counts and strides).
//!
//! Two kernels:
//!
//! * [`tiled`]: 16×16 workgroups, one output per invocation, 16×16 tiles of A and B
//!   staged in workgroup memory. Any shape. Used for small matrices (the latency case)
//!   and for shapes whose K or N is not a multiple of 4.
//! * [`blocked`]: register-blocked. A workgroup computes a `bm×bn` tile of C with
//!   `(bm/tm)×(bn/tn)` invocations, each holding a `tm×tn` block of accumulators in
//!   registers (`vec4` columns); A and B advance in `bk`-deep slabs staged in
//!   workgroup memory (A transposed, so both are read as `vec4`), loaded from global
//!   memory as `vec4` into registers one slab ahead (prefetch) while the current slab
//!   is multiplied. Needs K and N multiples of 4; any M; tiles at the edges are
//!   guarded.
//!
//! Every global access is guarded by an explicit bounds test (these kernels are
//! compiled without wgpu's runtime checks), and padding is zero on both sides of a
//! product (a padded A column meets a padded B row), so NaN and infinity propagate
//! exactly as IEEE says and padding never produces `0·∞`.

use super::tile::Tile;
use std::fmt::Write;

/// Workgroup edge of the [`tiled`] kernel.
pub const TILED_EDGE: u32 = 16;

/// The simple tiled kernel for C(m×n) = A(m×k)·B(k×n), row-major.
pub fn tiled(m: usize, k: usize, n: usize) -> String {
    tiled_with(m, k, n, None)
}

/// The bias binding and the epilogue function of a fused store (see [`Epilogue`]).
fn epilogue_decl(epilogue: Option<&Epilogue>) -> String {
    match epilogue {
        Some(e) => format!(
            "@group(0) @binding(3) var<storage, read> bias: array<f32>;\n{}",
            e.wgsl
        ),
        None => String::new(),
    }
}

/// A fused epilogue: `wgsl` defines `fn epilogue(acc: f32, row: u32, col: u32) -> f32`
/// (generated from the IR, [`crate::fused::epilogue_wgsl`]), which may read
/// `bias` (binding 3, one value per column) and the constant `N`; the kernel
/// stores `epilogue(acc, row, col)` instead of the accumulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Epilogue {
    /// The WGSL of the `epilogue` function (and what it calls).
    pub wgsl: String,
}

/// [`tiled`] with an optional fused epilogue on the store.
pub fn tiled_with(m: usize, k: usize, n: usize, epilogue: Option<&Epilogue>) -> String {
    let t = TILED_EDGE;
    let store = if epilogue.is_some() {
        "epilogue(acc, row, col)"
    } else {
        "acc"
    };
    let decl = epilogue_decl(epilogue);
    format!(
        r#"// vgpu matmul, tiled {t}x{t}: C({m}x{n}) = A({m}x{k}) B({k}x{n})
const M: u32 = {m}u;
const N: u32 = {n}u;
const K: u32 = {k}u;
const T: u32 = {t}u;
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
{decl}
var<workgroup> ta: array<f32, {tt}>;
var<workgroup> tb: array<f32, {tt}>;

@compute @workgroup_size({t}, {t}, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {{
    let row = wid.y * T + lid.y;
    let col = wid.x * T + lid.x;
    let li = lid.y * T + lid.x;
    var acc = 0.0;
    for (var t = 0u; t < K; t = t + T) {{
        let ak = t + lid.x;
        if (row < M && ak < K) {{ ta[li] = a[row * K + ak]; }} else {{ ta[li] = 0.0; }}
        let bk = t + lid.y;
        if (bk < K && col < N) {{ tb[li] = b[bk * N + col]; }} else {{ tb[li] = 0.0; }}
        workgroupBarrier();
        for (var i = 0u; i < T; i = i + 1u) {{
            acc = fma(ta[lid.y * T + i], tb[i * T + lid.x], acc);
        }}
        workgroupBarrier();
    }}
    if (row < M && col < N) {{ c[row * N + col] = {store}; }}
}}
"#,
        tt = t * t
    )
}

/// The register-blocked kernel (see the module docs). Requires `k % 4 == 0`,
/// `n % 4 == 0` and a valid `tile` ([`Tile::validate`]).
pub fn blocked(m: usize, k: usize, n: usize, tile: &Tile) -> String {
    blocked_with(m, k, n, tile, None)
}

/// [`blocked`] with an optional fused epilogue on the store (applied to each
/// lane of the stored `vec4`).
pub fn blocked_with(
    m: usize,
    k: usize,
    n: usize,
    tile: &Tile,
    epilogue: Option<&Epilogue>,
) -> String {
    let Tile { bm, bn, bk, tm, tn } = *tile;
    let wx = bn / tn; // invocations along N
    let wy = bm / tm; // invocations along M
    let threads = wx * wy;
    let a_loads = bm * bk / 4 / threads; // vec4 loads of A per invocation per slab
    let b_loads = bk * bn / 4 / threads;
    let rq = tm / 4; // vec4s of rows per invocation (A read from workgroup memory)
    let cq = tn / 4; // vec4s of columns per invocation
    let guard_m = m % bm as usize != 0;
    let guard_n = n % bn as usize != 0;
    let guard_k = k % bk as usize != 0;
    let mut s = String::with_capacity(16 * 1024);
    let w = &mut s;
    // `write!` into a String cannot fail.
    let _ = writeln!(
        w,
        "// vgpu matmul, register-blocked {bm}x{bn}x{bk}, {tm}x{tn} per invocation: C({m}x{n}) = A({m}x{k}) B({k}x{n})"
    );
    let _ = writeln!(
        w,
        "const M: u32 = {m}u;\nconst N: u32 = {n}u;\nconst K: u32 = {k}u;\nconst K4: u32 = {}u;\nconst N4: u32 = {}u;",
        k / 4,
        n / 4
    );
    let _ = writeln!(
        w,
        "const BM: u32 = {bm}u;\nconst BN: u32 = {bn}u;\nconst BK: u32 = {bk}u;\nconst NT: u32 = {}u;",
        k.div_ceil(bk as usize)
    );
    let _ = writeln!(
        w,
        "@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;\n\
         @group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;\n\
         @group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;"
    );
    let _ = writeln!(w, "{}", epilogue_decl(epilogue));
    // As[kk][mq]: A transposed, rows of the tile contiguous, as vec4 (BM/4 per kk).
    let _ = writeln!(w, "var<workgroup> sa: array<vec4<f32>, {}>;", bk * bm / 4);
    // Bs[kk][nq]: B as it is, vec4 (BN/4 per kk).
    let _ = writeln!(w, "var<workgroup> sb: array<vec4<f32>, {}>;", bk * bn / 4);

    // Loader of A's slab: invocation `tid` loads vec4s idx = tid + l*threads,
    // row = idx / (BK/4), kq = idx % (BK/4).
    let _ = writeln!(w, "\nfn load_a(m0: u32, k0: u32, idx: u32) -> vec4<f32> {{");
    let _ = writeln!(w, "    let row = m0 + idx / {}u;", bk / 4);
    let _ = writeln!(w, "    let kc = k0 + (idx % {}u) * 4u;", bk / 4);
    let mut conds = Vec::new();
    if guard_m {
        conds.push("row < M");
    }
    if guard_k {
        conds.push("kc < K");
    }
    if conds.is_empty() {
        let _ = writeln!(w, "    return a[row * K4 + kc / 4u];");
    } else {
        let _ = writeln!(
            w,
            "    if ({}) {{ return a[row * K4 + kc / 4u]; }}\n    return vec4<f32>(0.0);",
            conds.join(" && ")
        );
    }
    let _ = writeln!(w, "}}");
    let _ = writeln!(w, "\nfn load_b(n0: u32, k0: u32, idx: u32) -> vec4<f32> {{");
    let _ = writeln!(w, "    let kr = k0 + idx / {}u;", bn / 4);
    let _ = writeln!(w, "    let nc = n0 + (idx % {}u) * 4u;", bn / 4);
    let mut conds = Vec::new();
    if guard_k {
        conds.push("kr < K");
    }
    if guard_n {
        conds.push("nc < N");
    }
    if conds.is_empty() {
        let _ = writeln!(w, "    return b[kr * N4 + nc / 4u];");
    } else {
        let _ = writeln!(
            w,
            "    if ({}) {{ return b[kr * N4 + nc / 4u]; }}\n    return vec4<f32>(0.0);",
            conds.join(" && ")
        );
    }
    let _ = writeln!(w, "}}");

    let _ = writeln!(
        w,
        "\n@compute @workgroup_size({wx}, {wy}, 1)\nfn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) {{"
    );
    let _ = writeln!(w, "    let tx = lid.x;\n    let ty = lid.y;");
    let _ = writeln!(w, "    let m0 = wid.y * BM;\n    let n0 = wid.x * BN;");
    for i in 0..tm {
        for j in 0..cq {
            let _ = writeln!(w, "    var c{i}_{j} = vec4<f32>(0.0);");
        }
    }
    for l in 0..a_loads {
        let _ = writeln!(w, "    var pa{l} = load_a(m0, 0u, tid + {}u);", l * threads);
    }
    for l in 0..b_loads {
        let _ = writeln!(w, "    var pb{l} = load_b(n0, 0u, tid + {}u);", l * threads);
    }
    let _ = writeln!(w, "    for (var t = 0u; t < NT; t = t + 1u) {{");
    // Store the prefetched slab into workgroup memory (A transposed).
    for l in 0..a_loads {
        let _ = writeln!(w, "        {{");
        let _ = writeln!(w, "            let idx = tid + {}u;", l * threads);
        let _ = writeln!(w, "            let row = idx / {}u;", bk / 4);
        let _ = writeln!(w, "            let kq = idx % {}u;", bk / 4);
        let _ = writeln!(w, "            let base = kq * {}u + row / 4u;", bm);
        let _ = writeln!(w, "            let comp = row % 4u;");
        for ccomp in 0..4 {
            let lane = ["x", "y", "z", "w"][ccomp];
            let _ = writeln!(
                w,
                "            sa[base + {}u][comp] = pa{l}.{lane};",
                ccomp as u32 * bm / 4
            );
        }
        let _ = writeln!(w, "        }}");
    }
    for l in 0..b_loads {
        let _ = writeln!(w, "        sb[tid + {}u] = pb{l};", l * threads);
    }
    let _ = writeln!(w, "        workgroupBarrier();");
    // Prefetch the next slab into registers while this one is multiplied.
    let _ = writeln!(w, "        if (t + 1u < NT) {{");
    let _ = writeln!(w, "            let k1 = (t + 1u) * BK;");
    for l in 0..a_loads {
        let _ = writeln!(
            w,
            "            pa{l} = load_a(m0, k1, tid + {}u);",
            l * threads
        );
    }
    for l in 0..b_loads {
        let _ = writeln!(
            w,
            "            pb{l} = load_b(n0, k1, tid + {}u);",
            l * threads
        );
    }
    let _ = writeln!(w, "        }}");
    for kk in 0..bk {
        for q in 0..rq {
            let _ = writeln!(
                w,
                "        let a{kk}_{q} = sa[{}u + ty * {rq}u];",
                kk * bm / 4 + q
            );
        }
        for j in 0..cq {
            let _ = writeln!(
                w,
                "        let b{kk}_{j} = sb[{}u + tx];",
                kk * bn / 4 + j * wx
            );
        }
        for i in 0..tm {
            let (q, lane) = (i / 4, ["x", "y", "z", "w"][(i % 4) as usize]);
            for j in 0..cq {
                let _ = writeln!(
                    w,
                    "        c{i}_{j} = fma(vec4<f32>(a{kk}_{q}.{lane}), b{kk}_{j}, c{i}_{j});"
                );
            }
        }
    }
    let _ = writeln!(w, "        workgroupBarrier();");
    let _ = writeln!(w, "    }}");
    // Store: row = m0 + ty*tm + i, column vec4 = n0/4 + j*wx + tx.
    for i in 0..tm {
        let _ = writeln!(w, "    {{");
        let _ = writeln!(w, "        let row = m0 + ty * {tm}u + {i}u;");
        for j in 0..cq {
            let _ = writeln!(w, "        let cq{j} = n0 / 4u + {}u + tx;", j * wx);
            let mut conds = Vec::new();
            if guard_m {
                conds.push("row < M".to_string());
            }
            if guard_n {
                conds.push(format!("cq{j} < N4"));
            }
            let value = if epilogue.is_some() {
                let lane = |l: usize| {
                    let x = ["x", "y", "z", "w"][l];
                    format!("epilogue(c{i}_{j}.{x}, row, cq{j} * 4u + {l}u)")
                };
                format!(
                    "vec4<f32>({}, {}, {}, {})",
                    lane(0),
                    lane(1),
                    lane(2),
                    lane(3)
                )
            } else {
                format!("c{i}_{j}")
            };
            let store = format!("c[row * N4 + cq{j}] = {value};");
            if conds.is_empty() {
                let _ = writeln!(w, "        {store}");
            } else {
                let _ = writeln!(w, "        if ({}) {{ {store} }}", conds.join(" && "));
            }
        }
        let _ = writeln!(w, "    }}");
    }
    let _ = writeln!(w, "}}");
    s
}
