//! The WGSL room: every shader generated from the IR is emitted under this
//! module — unphased ensembles (here), phased fields ([`phased`]: workgroup =
//! block, workgroup memory, barriers, flux atomics, fault decoding) and unit-step
//! jump kernels ([`jumps`], the fused kernels) — sharing one prelude
//! ([`emit_prelude`]), one expression emitter ([`emit_expressions`]) and one
//! layout of launch words ([`meta_words`]).
//!
//! Unphased ensembles: one compute shader per (kernel, integrator, workgroup
//! size). Each invocation integrates one trajectory through all of its steps in
//! a single dispatch, with the integrator's stages unrolled inside the step loop
//! (step-size products hoisted out of it, each row factored by its first
//! coefficient, as a hand-written CUDA kernel does), agreeing with the CPU
//! stepper to rounding.
//!
//! Bindings (group 0): `0` the endpoint states (`n × dim` f32, written),
//! `1` launch words ([`meta_words`]), `2` the fault record (4 atomic u32), then
//! one read-only binding per buffer parameter, in declaration order.
//!
//! Restrictions: WGSL has no portable `f64`, so a kernel using `f64` anywhere
//! is refused ([`IrError::Unsupported`]) and runs on the CPU; fields with
//! phases (shared sub-fields, barriers, flux) are emitted by
//! [`phased::emit_wgsl_phased`] instead.

use crate::args::Args;
use crate::error::IrError;
use crate::kernel::{BinOp, Builtin, Kernel, Node, NodeId, UnOp, Update, Variance};
use crate::types::{ScalarType, Value};
use std::fmt::Write;
use vgpu_field::Tableau;

/// Steps per pass of the fixed-step loop's unrolled part.
const UNROLL: usize = 4;
/// The largest unrolled step loop (bytes of WGSL) emitted; longer bodies run
/// one step per pass only.
const MAX_UNROLLED_BYTES: usize = 64 * 1024;

pub mod adaptive;
mod adaptive_events;
mod adaptive_rosenbrock;
pub mod cfg;
pub mod jumps;
pub mod matmul;
pub mod matmul_tile;
pub mod phased;

/// Index of the first buffer binding.
pub const FIRST_BUFFER_BINDING: u32 = 3;
/// Launch words before the per-buffer lengths: `n`, `steps`, `t0` bits, `dt` bits.
pub const META_HEADER: usize = 4;

/// [`IrError::Unsupported`] of `k` on the WGSL backend named `backend`.
pub(crate) fn unsupported_on(k: &Kernel, backend: &str, reason: impl Into<String>) -> IrError {
    IrError::Unsupported {
        kernel: k.name.clone(),
        backend: backend.into(),
        reason: reason.into(),
    }
}

fn unsupported(k: &Kernel, reason: impl Into<String>) -> IrError {
    unsupported_on(k, "gpu (WGSL)", reason)
}

/// The preconditions every unphased WGSL emitter shares (the fixed-step
/// [`check_wgsl`], the adaptive [`adaptive::check_adaptive_wgsl`]): no phases
/// (`phased_hint` says where a phased field goes instead), at least one state,
/// no `:=` jumps. Errors are [`IrError::Unsupported`] on `backend`.
pub(crate) fn check_unphased(k: &Kernel, backend: &str, phased_hint: &str) -> Result<(), IrError> {
    if k.is_phased() {
        return Err(unsupported_on(
            k,
            backend,
            format!("a field with phases (shared sub-fields, barriers, flux) {phased_hint}"),
        ));
    }
    if k.states.is_empty() {
        return Err(unsupported_on(
            k,
            backend,
            "a field with no state has nothing to integrate on the GPU",
        ));
    }
    if k.phases[0]
        .updates
        .iter()
        .any(|u| matches!(u, Update::Jump(_)))
    {
        return Err(unsupported_on(k, backend, "`:=` jumps need a phase"));
    }
    Ok(())
}

/// Whether the kernel can run as WGSL, and why not.
///
/// # Errors
/// [`IrError::Unsupported`] for `f64` anywhere, phases, `:=` jumps or events.
pub fn check_wgsl(k: &Kernel) -> Result<(), IrError> {
    check_unphased(
        k,
        "gpu (WGSL)",
        "is emitted by wgsl::phased::emit_wgsl_phased (emit_wgsl_phased), not emit_wgsl",
    )?;
    if k.types.contains(&ScalarType::F64) || k.params.iter().any(|p| p.ty == ScalarType::F64) {
        return Err(unsupported(
            k,
            "WGSL has no portable f64: run f64 fields on the CPU (--backend cpu)",
        ));
    }
    if let Some(ev) = k.events.first() {
        // As the CPU's fixed-step runner: events need the adaptive driver.
        return Err(unsupported(
            k,
            format!(
                "event `{}`: events are located by the adaptive methods (--method tsit5 …), not by fixed steps",
                ev.name
            ),
        ));
    }
    Ok(())
}

pub(crate) fn wty(t: ScalarType) -> &'static str {
    match t {
        ScalarType::F32 => "f32",
        ScalarType::I32 => "i32",
        ScalarType::U32 => "u32",
        ScalarType::Bool => "bool",
        ScalarType::F64 => "f64",
    }
}

/// A WGSL literal for a constant, exact: non-integral floats are written as bit patterns.
pub fn literal(v: Value) -> String {
    match v {
        Value::F32(x) => {
            if x == x.trunc() && x.abs() < 16_777_216.0 && !(x == 0.0 && x.is_sign_negative()) {
                format!("{:.1}f", x)
            } else {
                format!("bitcast<f32>({:#010x}u)", x.to_bits())
            }
        }
        Value::I32(x) => {
            if x == i32::MIN {
                "bitcast<i32>(0x80000000u)".into()
            } else if x < 0 {
                format!("({x}i)")
            } else {
                format!("{x}i")
            }
        }
        Value::U32(x) => format!("{x}u"),
        Value::Bool(b) => b.to_string(),
        // Shortest round-trip decimal, typed: `lf` is naga's f64 suffix.
        Value::F64(x) => format!("{x:?}lf"),
    }
}

struct Names<'a> {
    k: &'a Kernel,
    /// Nodes computed before the step loop (uniform and per-lane), passed in `L`.
    pre: &'a [bool],
    in_field: bool,
}

impl Names<'_> {
    fn r(&self, n: NodeId) -> String {
        let i = n.index();
        match self.k.nodes[i] {
            Node::Const(v) => literal(v),
            Node::State(s) if self.in_field => format!("h.v{s}"),
            Node::Init(s) => {
                if self.in_field {
                    format!("l.i{s}")
                } else {
                    format!("i{s}")
                }
            }
            Node::Builtin(Builtin::Time) if self.in_field => "t".into(),
            _ => {
                if self.in_field && self.pre[i] {
                    format!("l.n{i}")
                } else {
                    format!("n{i}")
                }
            }
        }
    }
}

fn expr(k: &Kernel, id: NodeId, nm: &Names<'_>, meta_scalar: &dyn Fn(u32) -> usize) -> String {
    expr_with(k, id, &|n| nm.r(n), meta_scalar)
}

/// The WGSL expression computing node `id`, its operands named by `r`, scalar
/// parameter `p` read from launch word `meta_scalar(p)`. Shared reads and the
/// repetition `k` are the phased emitter's to write.
pub(crate) fn expr_with(
    k: &Kernel,
    id: NodeId,
    r: &dyn Fn(NodeId) -> String,
    meta_scalar: &dyn Fn(u32) -> usize,
) -> String {
    match k.nodes[id.index()] {
        Node::Const(v) => literal(v),
        Node::Param(p) => {
            let w = format!("launch[{}]", meta_scalar(p));
            match k.params[p as usize].ty {
                ScalarType::F32 => format!("bitcast<f32>({w})"),
                ScalarType::I32 => format!("bitcast<i32>({w})"),
                ScalarType::U32 => w,
                _ => format!("({w} != 0u)"),
            }
        }
        Node::Builtin(b) => match b {
            Builtin::Global => "gid".into(),
            Builtin::Thread => "lid".into(),
            Builtin::Block => "wg".into(),
            Builtin::BlockDim => "WG".into(),
            Builtin::GridDim => "(nwg.x * nwg.y)".into(),
            Builtin::Count => "launch[0]".into(),
            Builtin::Time => "t".into(),
            Builtin::Repetition => "0u".into(),
        },
        Node::State(s) => format!("h.v{s}"),
        Node::Init(s) => format!("i{s}"),
        Node::Load { buf, index, site } => format!("ld{buf}(u32({}), {site}u, gid)", r(index)),
        Node::SharedLoad { .. } => "0.0f".into(),
        Node::Unary(op, a) => {
            let a = r(a);
            let t = k.ty(id);
            match op {
                UnOp::Neg => format!("(-{a})"),
                UnOp::Not if t == ScalarType::Bool => format!("(!{a})"),
                UnOp::Not => format!("(~{a})"),
                UnOp::Sin => format!("sin({a})"),
                UnOp::Cos => format!("cos({a})"),
                UnOp::Exp => format!("exp({a})"),
                UnOp::Log => format!("log({a})"),
                UnOp::Sqrt => format!("sqrt({a})"),
                UnOp::Tanh => format!("tanh({a})"),
                UnOp::Abs => format!("abs({a})"),
                UnOp::Floor => format!("floor({a})"),
            }
        }
        Node::Binary(op, a, b) => {
            let (x, y) = (r(a), r(b));
            let int = k.ty(a).is_int();
            // WGSL spells every operator as the `.field` language does, except
            // integer division (total in the IR), the calls and masked shifts.
            match op {
                BinOp::Div | BinOp::Rem if int => {
                    let f = if op == BinOp::Div { "idiv" } else { "irem" };
                    return format!("{f}_{}({x}, {y})", wty(k.ty(a)));
                }
                BinOp::Min | BinOp::Max | BinOp::Pow => {
                    return format!("{}({x}, {y})", op.symbol())
                }
                BinOp::Shl | BinOp::Shr => return format!("({x} {} ({y} & 31u))", op.symbol()),
                _ => {}
            }
            let sym = op.symbol();
            format!("({x} {sym} {y})")
        }
        Node::Select(c, a, b) => format!("select({}, {}, {})", r(b), r(a), r(c)),
        Node::Fma(a, b, c) => {
            if k.ty(a).is_float() {
                format!("fma({}, {}, {})", r(a), r(b), r(c))
            } else {
                format!("({} * {} + {})", r(a), r(b), r(c))
            }
        }
        Node::Cast(t, a) => format!("{}({})", wty(t), r(a)),
    }
}

/// The launch words of binding 1: `n`, `steps`, `t0`, `dt` (as f32 bits), then
/// each buffer parameter's length, then each scalar parameter's bits.
pub fn meta_words(
    k: &Kernel,
    args: &Args,
    n: u32,
    steps: u32,
    t0: f64,
    dt: f64,
) -> Result<Vec<u32>, IrError> {
    args.check_complete()?;
    let mut w = vec![n, steps, (t0 as f32).to_bits(), (dt as f32).to_bits()];
    for (i, p) in k.params.iter().enumerate() {
        if p.buffer {
            w.push(
                args.buffer_at(i)
                    .map(|b| b.len())
                    .unwrap_or(0)
                    .min(u32::MAX as usize) as u32,
            );
        }
    }
    for (i, p) in k.params.iter().enumerate() {
        if !p.buffer {
            let v = args.scalar_at(i).expect("checked complete");
            w.push(match v {
                Value::F32(x) => x.to_bits(),
                Value::I32(x) => x as u32,
                Value::U32(x) => x,
                Value::Bool(b) => b as u32,
                Value::F64(_) => return Err(unsupported(k, format!("scalar `{}` is f64", p.name))),
            });
        }
    }
    Ok(w)
}

/// Index of the first of the three slice words [`emit_wgsl`]'s shaders read
/// after [`meta_words`]: the launch's first global trajectory, its
/// trajectories, and the whole launch's workgroups ([`slice_words`]).
pub fn slice_word_base(k: &Kernel) -> usize {
    META_HEADER + k.params.len()
}

/// The slice words of a fixed-step launch ([`emit_wgsl`]) of trajectories
/// `first .. first + count` of `total`, in workgroups of `wg`: appended to
/// [`meta_words`] (whose `n` is `total`), so that every invocation sees the
/// global index, block, lane, `n` and `gdim` it has in the whole launch and
/// writes its row at `global - first` of the output.
///
/// # Errors
/// [`IrError::Launch`] when the slice leaves `0..total`, is empty, or
/// `total` exceeds 2^32 - 1.
pub fn slice_words(
    kernel: &str,
    first: usize,
    count: usize,
    total: usize,
    wg: u32,
) -> Result<[u32; 3], IrError> {
    let fits = first
        .checked_add(count)
        .is_some_and(|end| end <= total && total <= u32::MAX as usize);
    if count == 0 || !fits {
        return Err(IrError::Launch {
            kernel: kernel.into(),
            message: format!(
                "slice of {count} trajectories from {first} of a launch of {total} (1..2^32 trajectories, inside the launch)"
            ),
        });
    }
    let groups = total.div_ceil(wg.max(1) as usize);
    Ok([first as u32, count as u32, groups as u32])
}

/// Where each parameter lives: the binding slot (after
/// [`FIRST_BUFFER_BINDING`]) of a buffer, the launch word of a scalar.
pub struct ParamSlots {
    /// Per parameter: its buffer slot (buffers only).
    pub buf: Vec<usize>,
    /// Per parameter: its launch word (scalars only).
    pub scalar: Vec<usize>,
}

impl ParamSlots {
    /// The slots of `k`'s parameters, as [`meta_words`] lays out the launch words.
    pub fn of(k: &Kernel) -> ParamSlots {
        let n_buffers = k.params.iter().filter(|p| p.buffer).count();
        let mut buf = vec![0usize; k.params.len()];
        let mut scalar = vec![0usize; k.params.len()];
        let (mut nb, mut ns) = (0, 0);
        for (i, p) in k.params.iter().enumerate() {
            if p.buffer {
                buf[i] = nb;
                nb += 1;
            } else {
                scalar[i] = META_HEADER + n_buffers + ns;
                ns += 1;
            }
        }
        ParamSlots { buf, scalar }
    }
}

/// What every generated shader declares: bindings 0–2 (`out`, `launch`,
/// `fault`), one read-only binding per buffer parameter, the fault `report`,
/// integer division and remainder as the CPU defines them, and the
/// bounds-checked buffer loads `ld{param}(index, site, gid)`.
pub fn emit_prelude(s: &mut String, k: &Kernel, slots: &ParamSlots) {
    emit_prelude_typed(s, k, slots, "f32");
}

/// [`emit_prelude`] with `out` an array of `out_ty` (`f64` for the adaptive
/// ensembles of `f64` fields).
pub(crate) fn emit_prelude_typed(s: &mut String, k: &Kernel, slots: &ParamSlots, out_ty: &str) {
    let _ = writeln!(
        s,
        "@group(0) @binding(0) var<storage, read_write> out: array<{out_ty}>;"
    );
    let _ = writeln!(
        s,
        "@group(0) @binding(1) var<storage, read> launch: array<u32>;"
    );
    let _ = writeln!(
        s,
        "@group(0) @binding(2) var<storage, read_write> fault: array<atomic<u32>, 4>;"
    );
    for (i, p) in k.params.iter().enumerate() {
        if p.buffer {
            let _ = writeln!(
                s,
                "@group(0) @binding({}) var<storage, read> b{i}: array<{}>;",
                FIRST_BUFFER_BINDING as usize + slots.buf[i],
                wty(p.ty)
            );
        }
    }
    s.push_str(
        "\nfn report(site: u32, index: u32, gid: u32) {\n    let old = atomicMin(&fault[0], gid);\n    if (gid < old) {\n        atomicStore(&fault[1], site);\n        atomicStore(&fault[2], index);\n    }\n}\n",
    );
    s.push_str("fn idiv_i32(a: i32, b: i32) -> i32 { if (b == 0i) { return a; } if (a == bitcast<i32>(0x80000000u) && b == -1i) { return a; } return a / b; }\n");
    s.push_str("fn irem_i32(a: i32, b: i32) -> i32 { if (b == 0i) { return 0i; } if (a == bitcast<i32>(0x80000000u) && b == -1i) { return 0i; } return a % b; }\n");
    s.push_str("fn idiv_u32(a: u32, b: u32) -> u32 { if (b == 0u) { return a; } return a / b; }\n");
    s.push_str(
        "fn irem_u32(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a % b; }\n",
    );
    for (i, p) in k.params.iter().enumerate() {
        if p.buffer {
            let t = wty(p.ty);
            let zero = literal(Value::U32(0).cast(p.ty));
            let _ = writeln!(
                s,
                "fn ld{i}(i: u32, site: u32, gid: u32) -> {t} {{\n    if (i >= launch[{}]) {{ report(site, i, gid); return {zero}; }}\n    return b{i}[i];\n}}",
                META_HEADER + slots.buf[i]
            );
        }
    }
}

/// The field as WGSL functions, shared by the fixed-step ([`emit_wgsl`]) and
/// adaptive ([`adaptive`]) ensemble shaders: `struct S` (one state), `struct L`
/// (the field's values computed once per trajectory: uniform and per-lane
/// nodes, the `init(x)` it reads) and `fn field(t, h: S, l: L, gid) -> S`,
/// states and time in the float type `ty` (`f32` or `f64`).
pub(crate) struct FieldFn {
    /// `struct S`, `struct L` and `fn field`.
    pub(crate) text: String,
    /// The state type (`f32` or `f64`).
    ty: String,
    /// Per node: computed before the step loop.
    pub(crate) pre: Vec<bool>,
    /// The nodes computed before the loop (initial values, uniform and lane
    /// nodes of the field), in dependency order.
    pub(crate) pre_nodes: Vec<NodeId>,
    /// The states' initial-value nodes.
    pub(crate) init_roots: Vec<NodeId>,
    /// Per state: whether the field reads `init(x)`.
    init_used: Vec<bool>,
    /// The field's nodes held in `L`.
    pub(crate) field_pre: Vec<NodeId>,
}

impl FieldFn {
    pub(crate) fn new(k: &Kernel, ty: &str) -> FieldFn {
        Self::with_extra(k, ty, &[])
    }

    /// [`FieldFn::new`] whose `L` also holds the values computed once per
    /// trajectory that `extra` (nodes of the same arena: event conditions and
    /// jumps, a Jacobian) read, for [`FieldFn::function`] over them.
    pub(crate) fn with_extra(k: &Kernel, ty: &str, extra: &[NodeId]) -> FieldFn {
        let dim = k.states.len();
        let phase = &k.phases[0];
        let var = k.variance();
        let roots = k.phase_roots(phase);
        let field_nodes = k.reachable(&roots);
        let mut all_roots = roots.clone();
        all_roots.extend_from_slice(extra);
        let all_nodes = k.reachable(&all_roots);
        let init_roots: Vec<NodeId> = k.states.iter().map(|s| s.init).collect();
        let mut pre_roots = init_roots.clone();
        for &n in &all_nodes {
            if var[n.index()] != Variance::Varying && !matches!(k.nodes[n.index()], Node::Const(_))
            {
                pre_roots.push(n);
            }
        }
        let pre_nodes = k.reachable(&pre_roots);
        let mut pre = vec![false; k.nodes.len()];
        for n in &pre_nodes {
            pre[n.index()] = true;
        }
        let slots = ParamSlots::of(k);
        let ms = |p: u32| slots.scalar[p as usize];
        let mut s = String::new();
        // State and lane-value structs.
        let _ = writeln!(
            s,
            "struct S {{ {} }}",
            (0..dim)
                .map(|i| format!("v{i}: {ty}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut lfields: Vec<String> = vec![];
        let mut init_used = vec![false; dim];
        for &n in &all_nodes {
            if let Node::Init(j) = k.nodes[n.index()] {
                init_used[j as usize] = true;
            }
        }
        for (j, used) in init_used.iter().enumerate() {
            if *used {
                lfields.push(format!("i{j}: {ty}"));
            }
        }
        let field_pre: Vec<NodeId> = all_nodes
            .iter()
            .copied()
            .filter(|n| {
                pre[n.index()] && !matches!(k.nodes[n.index()], Node::Const(_) | Node::Init(_))
            })
            .collect();
        for n in &field_pre {
            lfields.push(format!("n{}: {}", n.index(), wty(k.ty(*n))));
        }
        if lfields.is_empty() {
            lfields.push("unused: u32".into());
        }
        let _ = writeln!(s, "struct L {{ {} }}", lfields.join(", "));
        // The field.
        let _ = writeln!(s, "fn field(t: {ty}, h: S, l: L, gid: u32) -> S {{");
        let nm = Names {
            k,
            pre: &pre,
            in_field: true,
        };
        for &n in &field_nodes {
            if pre[n.index()]
                || matches!(
                    k.nodes[n.index()],
                    Node::Const(_) | Node::State(_) | Node::Init(_) | Node::Builtin(Builtin::Time)
                )
            {
                continue;
            }
            let _ = writeln!(s, "    let n{} = {};", n.index(), expr(k, n, &nm, &ms));
        }
        let zero = if ty == "f64" { "0.0lf" } else { "0.0f" };
        let rates: Vec<String> = phase
            .updates
            .iter()
            .map(|u| match u {
                Update::Rate(r) => nm.r(*r),
                _ => zero.into(),
            })
            .collect();
        let _ = writeln!(s, "    return S({});\n}}", rates.join(", "));
        FieldFn {
            text: s,
            ty: ty.into(),
            pre,
            pre_nodes,
            init_roots,
            init_used,
            field_pre,
        }
    }

    /// `fn name(t, h: S, l: L, gid) -> …` computing `roots` (nodes of the
    /// arena whose per-trajectory values `L` holds: see
    /// [`FieldFn::with_extra`]) from the state `h` at time `t`: returns
    /// `S(roots…)` when `as_state` (then `roots` has one entry per state,
    /// `None` keeping that state's value), else `array<ty, roots.len()>`.
    /// Roots are converted to the state type.
    pub(crate) fn function(
        &self,
        k: &Kernel,
        name: &str,
        roots: &[Option<NodeId>],
        as_state: bool,
    ) -> String {
        let some: Vec<NodeId> = roots.iter().flatten().copied().collect();
        let ty = &self.ty;
        let slots = ParamSlots::of(k);
        let ms = |p: u32| slots.scalar[p as usize];
        let nm = Names {
            k,
            pre: &self.pre,
            in_field: true,
        };
        let ret = if as_state {
            "S".to_string()
        } else {
            format!("array<{ty}, {}>", roots.len())
        };
        let mut s = format!("fn {name}(t: {ty}, h: S, l: L, gid: u32) -> {ret} {{\n");
        for n in k.reachable(&some) {
            if self.pre[n.index()]
                || matches!(
                    k.nodes[n.index()],
                    Node::Const(_) | Node::State(_) | Node::Init(_) | Node::Builtin(Builtin::Time)
                )
            {
                continue;
            }
            let _ = writeln!(s, "    let n{} = {};", n.index(), expr(k, n, &nm, &ms));
        }
        let vals: Vec<String> = roots
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let Some(r) = r else {
                    return format!("h.v{i}");
                };
                let v = nm.r(r);
                if wty(k.ty(r)) == ty.as_str() {
                    v
                } else {
                    format!("{ty}({v})")
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "    return {}({});\n}}",
            if as_state { "S" } else { &ret },
            vals.join(", ")
        );
        s
    }

    /// `let` lines computing the initial values `i0, i1, …` (builtins named
    /// `gid`, `lid`, `wg`, `nwg`, as in the entry points).
    pub(crate) fn init_lines(&self, k: &Kernel, ms: &dyn Fn(u32) -> usize) -> String {
        let nm0 = Names {
            k,
            pre: &self.pre,
            in_field: false,
        };
        let mut s = String::new();
        for n in k.reachable(&self.init_roots) {
            if matches!(k.nodes[n.index()], Node::Const(_)) {
                continue;
            }
            let _ = writeln!(s, "    let n{} = {};", n.index(), expr(k, n, &nm0, ms));
        }
        for (j, st) in k.states.iter().enumerate() {
            let _ = writeln!(s, "    let i{j} = {};", nm0.r(st.init));
        }
        s
    }

    /// `let` lines computing `nodes` (before the loop, `i0, i1, …` in scope)
    /// and `let l = L(…)`.
    pub(crate) fn lane_lines(
        &self,
        k: &Kernel,
        ms: &dyn Fn(u32) -> usize,
        nodes: &[NodeId],
    ) -> String {
        let nm0 = Names {
            k,
            pre: &self.pre,
            in_field: false,
        };
        let mut s = String::new();
        for &n in nodes {
            if matches!(k.nodes[n.index()], Node::Const(_) | Node::Init(_)) {
                continue;
            }
            let _ = writeln!(s, "    let n{} = {};", n.index(), expr(k, n, &nm0, ms));
        }
        let mut lvals: Vec<String> = vec![];
        for (j, used) in self.init_used.iter().enumerate() {
            if *used {
                lvals.push(format!("i{j}"));
            }
        }
        for n in &self.field_pre {
            lvals.push(format!("n{}", n.index()));
        }
        if lvals.is_empty() {
            lvals.push("0u".into());
        }
        let _ = writeln!(s, "    let l = L({});", lvals.join(", "));
        s
    }
}

/// Emits the compute shader integrating `k` with `tableau` in workgroups of `wg`
/// invocations (entry point `main`).
///
/// # Errors
/// [`IrError::Unsupported`] (see [`check_wgsl`]).
pub fn emit_wgsl(k: &Kernel, tableau: &Tableau, wg: u32) -> Result<String, IrError> {
    check_wgsl(k)?;
    let dim = k.states.len();
    let ff = FieldFn::new(k, "f32");
    let (pre_nodes, init_roots) = (&ff.pre_nodes, &ff.init_roots);
    let slots = ParamSlots::of(k);
    let ms = |p: u32| slots.scalar[p as usize];

    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by vgpu-ir from field `{}` ({}), integrator {}.",
        k.name,
        k.source,
        tableau.name()
    );
    let _ = writeln!(s, "const WG: u32 = {wg}u;");
    emit_prelude(&mut s, k, &slots);
    s.push_str(&ff.text);
    // The entry point.
    let _ = writeln!(
        s,
        "@compute @workgroup_size({wg})\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwgs: vec3<u32>, @builtin(local_invocation_index) lix: u32) {{"
    );
    // The launch's slice (trajectories `first .. first + count` of `n`): the
    // invocation's global index, its block and lane, and the launch's blocks
    // are those of the whole launch (the CPU's `vgpu_ir::Slice` rule).
    let sw = slice_word_base(k);
    let _ = writeln!(
        s,
        "    let local = (wid.y * nwgs.x + wid.x) * WG + lix;\n    if (local >= launch[{}u]) {{ return; }}\n    let gid = launch[{sw}u] + local;\n    let wg = gid / WG;\n    let lid = gid % WG;\n    let nwg = vec3<u32>(launch[{}u], 1u, 1u);",
        sw + 1,
        sw + 2
    );
    s.push_str("    let steps = launch[1];\n    let t0 = bitcast<f32>(launch[2]);\n    let dt = bitcast<f32>(launch[3]);\n");
    // Initial values first (they read no state), then what reads `init(x)`.
    s.push_str(&ff.init_lines(k, &ms));
    let init_nodes = k.reachable(init_roots);
    let mut done = vec![false; k.nodes.len()];
    for &n in &init_nodes {
        done[n.index()] = true;
    }
    let rest: Vec<NodeId> = pre_nodes
        .iter()
        .copied()
        .filter(|n| !done[n.index()])
        .collect();
    s.push_str(&ff.lane_lines(k, &ms, &rest));
    let _ = writeln!(
        s,
        "    var h = S({});",
        (0..dim)
            .map(|j| format!("i{j}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Stage combinations `h + dt·Σ a_ij k_j`, written the way a CUDA author
    // writes them: the step-size products are hoisted out of the loop and the
    // row is factored by its first coefficient, so RK4's last row becomes
    // `h + (dt/6)·(k0 + 2·k1 + 2·k2 + k3)` (four fused operations, not nine).
    // The result agrees with the CPU stepper to rounding, not bit for bit (as
    // every GPU comparison states: drivers fuse differently anyway).
    let nz = |row: &[f64]| {
        row.iter()
            .copied()
            .enumerate()
            .filter(|(_, v)| *v != 0.0)
            .collect::<Vec<_>>()
    };
    let mut rows: Vec<(String, Vec<(usize, f64)>)> = (0..tableau.stages())
        .map(|i| (format!("da{i}"), nz(tableau.a(i))))
        .collect();
    rows.push(("db".into(), nz(tableau.b())));
    for (name, terms) in &rows {
        if let Some((_, lead)) = terms.first() {
            let _ = writeln!(
                s,
                "    let {name} = dt * {};",
                literal(Value::F32(*lead as f32))
            );
        }
    }
    let combine = |name: &str, terms: &[(usize, f64)], comp: usize| -> String {
        let Some((_, lead)) = terms.first() else {
            return format!("h.v{comp}");
        };
        let sum = terms
            .iter()
            .map(|(j, c)| {
                let r = c / lead;
                if r == 1.0 {
                    format!("k{j}.v{comp}")
                } else {
                    format!("{} * k{j}.v{comp}", literal(Value::F32(r as f32)))
                }
            })
            .collect::<Vec<_>>()
            .join(" + ");
        if terms.len() == 1 {
            format!("h.v{comp} + {name} * {sum}")
        } else {
            format!("h.v{comp} + {name} * ({sum})")
        }
    };
    // One step's statements, its time from the step index `at`.
    let step_body = |at: &str, indent: &str| -> String {
        let mut b = String::new();
        let _ = writeln!(b, "{indent}let t = f32({at}) * dt + t0;");
        for (i, (name, terms)) in rows.iter().take(tableau.stages()).enumerate() {
            let ti = format!("t + {} * dt", literal(Value::F32(tableau.c()[i] as f32)));
            if terms.is_empty() {
                let _ = writeln!(b, "{indent}let k{i} = field({ti}, h, l, gid);");
            } else {
                let y = (0..dim)
                    .map(|c| combine(name, terms, c))
                    .collect::<Vec<_>>()
                    .join(", ");
                let _ = writeln!(b, "{indent}let k{i} = field({ti}, S({y}), l, gid);");
            }
        }
        let (name, b_row) = rows.last().expect("the b row");
        let y = (0..dim)
            .map(|c| combine(name, b_row, c))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(b, "{indent}h = S({y});");
        b
    };
    // Steps UNROLL at a time while that many remain (as nvcc unrolls the same
    // loop by 4), then one at a time: the same operations in the same order,
    // so the results do not change. Bodies too long to repeat are not unrolled.
    let one = step_body("step", "        ");
    if one.len() * UNROLL <= MAX_UNROLLED_BYTES {
        s.push_str("    var step: u32 = 0u;\n    loop {\n");
        let _ = writeln!(s, "        if (steps - step < {UNROLL}u) {{ break; }}");
        for j in 0..UNROLL {
            let at = format!("step + {j}u");
            let _ = writeln!(
                s,
                "        {{\n{}        }}",
                step_body(&at, "            ")
            );
        }
        let _ = writeln!(s, "        step = step + {UNROLL}u;\n    }}");
        s.push_str("    for (; step < steps; step = step + 1u) {\n");
    } else {
        s.push_str("    for (var step: u32 = 0u; step < steps; step = step + 1u) {\n");
    }
    s.push_str(&one);
    s.push_str("    }\n");
    for j in 0..dim {
        let _ = writeln!(s, "    out[local * {dim}u + {j}u] = h.v{j};");
    }
    s.push_str("}\n");
    Ok(s)
}

/// Parses and validates WGSL with naga (the front end wgpu uses).
///
/// # Errors
/// naga's message, with the kernel's name.
pub fn validate_wgsl(kernel: &str, src: &str) -> Result<(), IrError> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| IrError::Wgsl {
        kernel: kernel.into(),
        message: e.emit_to_string(src),
    })?;
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&module)
    .map_err(|e| IrError::Wgsl {
        kernel: kernel.into(),
        message: format!("{e:?}"),
    })?;
    Ok(())
}

/// How [`emit_expressions`]' caller writes a leaf node (a state, an input, a
/// builtin; with the index expression for a load): its WGSL, or an error.
pub type LeafFn<'a> = dyn Fn(&Node, Option<&str>) -> Result<String, IrError> + 'a;

/// WGSL for some nodes of `k` inside a shader the caller writes (a template
/// splicing IR expressions into its own loop, e.g. a matmul epilogue): one
/// `let` line per interior node the `roots` read (operations emitted exactly as
/// [`emit_wgsl`] emits them), and one WGSL expression per root. The caller
/// names the leaves: `leaf(node, index)` returns the WGSL of a state, initial
/// value, parameter, builtin or buffer read (`index`: the WGSL of the read's
/// index, an integer) in its shader, or an error for a leaf it cannot supply.
/// The `let` lines may call `idiv_*`/`irem_*` for integer `/` and `%` (defined
/// as in [`emit_wgsl`]'s prelude); names are `nI` and `iS`.
///
/// # Errors
/// The errors `leaf` returns.
pub fn emit_expressions(
    k: &Kernel,
    roots: &[NodeId],
    leaf: &LeafFn<'_>,
) -> Result<(String, Vec<String>), IrError> {
    let pre = vec![false; k.nodes.len()];
    let nm = Names {
        k,
        pre: &pre,
        in_field: false,
    };
    let no_scalars = |_: u32| 0usize;
    let mut s = String::new();
    for n in k.reachable(roots) {
        let node = &k.nodes[n.index()];
        let line = match *node {
            Node::Const(_) => continue,
            Node::Init(j) => format!("let i{j} = {};", leaf(node, None)?),
            Node::Load { index, .. } | Node::SharedLoad { index, .. } => {
                format!("let n{} = {};", n.index(), leaf(node, Some(&nm.r(index)))?)
            }
            Node::State(_) | Node::Param(_) | Node::Builtin(_) => {
                format!("let n{} = {};", n.index(), leaf(node, None)?)
            }
            _ => format!("let n{} = {};", n.index(), expr(k, n, &nm, &no_scalars)),
        };
        let _ = writeln!(s, "    {line}");
    }
    Ok((s, roots.iter().map(|r| nm.r(*r)).collect()))
}
