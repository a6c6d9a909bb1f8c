//! The kernel IR: a typed expression arena (SSA: every node is one value, its
//! operands come earlier) plus the field's states, parameters, shared sub-fields,
//! flux outputs and phases. Builders hash-cons nodes (common subexpressions are
//! shared) and fold constants in the node's own type.

use crate::error::Pos;
pub use crate::ops::{BinOp, UnOp};
use crate::types::{ScalarType, Value};
use std::collections::HashMap;

/// Index of a node in a [`Kernel`]'s arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// As a `usize` index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Values every trajectory knows about itself and its launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `i`: global trajectory index (`u32`).
    Global,
    /// `tid`: index inside the block (`u32`).
    Thread,
    /// `bid`: block index (`u32`).
    Block,
    /// `bdim`: trajectories per block (`u32`).
    BlockDim,
    /// `gdim`: number of blocks (`u32`).
    GridDim,
    /// `n`: number of trajectories (`u32`).
    Count,
    /// `t`: time (the field's float type).
    Time,
    /// `k` of `phase … for k in 0..K`: the repetition (`u32`).
    Repetition,
}

/// One node of the arena.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Node {
    /// A constant.
    Const(Value),
    /// The current value of state variable `k`.
    State(u32),
    /// The initial value `h0` of state variable `k` (`init(x)` in the language).
    Init(u32),
    /// The scalar parameter `k` (index into [`Kernel::params`]).
    Param(u32),
    /// Element `index` of buffer parameter `buf` (index into [`Kernel::params`]).
    Load {
        /// The buffer parameter.
        buf: u32,
        /// The element (an integer node).
        index: NodeId,
        /// Index into [`Kernel::sites`]: where the read is written.
        site: u32,
    },
    /// Element `index` of shared sub-field `shared` (index into [`Kernel::shared`]).
    SharedLoad {
        /// The shared sub-field.
        shared: u32,
        /// The element.
        index: NodeId,
        /// Index into [`Kernel::sites`].
        site: u32,
    },
    /// A launch or time value.
    Builtin(Builtin),
    /// A one-operand operation.
    Unary(UnOp, NodeId),
    /// A two-operand operation.
    Binary(BinOp, NodeId, NodeId),
    /// `select(cond, if_true, if_false)`.
    Select(NodeId, NodeId, NodeId),
    /// `fma(a, b, c)` = a·b + c rounded once.
    Fma(NodeId, NodeId, NodeId),
    /// Conversion to a type.
    Cast(ScalarType, NodeId),
}

impl Node {
    /// The node's operands.
    pub fn operands(&self) -> Vec<NodeId> {
        match *self {
            Node::Const(_) | Node::State(_) | Node::Init(_) | Node::Param(_) | Node::Builtin(_) => {
                vec![]
            }
            Node::Load { index, .. } | Node::SharedLoad { index, .. } => vec![index],
            Node::Unary(_, a) | Node::Cast(_, a) => vec![a],
            Node::Binary(_, a, b) => vec![a, b],
            Node::Select(a, b, c) | Node::Fma(a, b, c) => vec![a, b, c],
        }
    }
}

/// A parameter: a scalar (`rho: f32`) or a read-only buffer (`rho: f32[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// True for a buffer.
    pub buffer: bool,
}

impl Param {
    /// `f32` or `f32[]`, as declared.
    pub fn describe(&self) -> String {
        if self.buffer {
            format!("{}[]", self.ty)
        } else {
            self.ty.to_string()
        }
    }
}

/// A state variable: one component of each trajectory's state vector.
#[derive(Clone, Debug, PartialEq)]
pub struct StateVar {
    /// Its name.
    pub name: String,
    /// Its type (a float type; all states of a kernel share one).
    pub ty: ScalarType,
    /// Its initial value (may read parameters, buffers and indices, not states).
    pub init: NodeId,
}

/// A coupled sub-field (`__shared__`): one array per block, integrated together
/// with the block's trajectories, which read it and drive it.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedVar {
    /// Its name.
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// Its length: a uniform node (`u32`).
    pub len: NodeId,
    /// Every element's initial value: a uniform node.
    pub init: NodeId,
    /// Where it is declared (for limit errors; `0:0` when built by hand).
    pub pos: Pos,
}

/// A flux output (`atomicAdd` target): a global accumulator, zero at launch.
#[derive(Clone, Debug, PartialEq)]
pub struct FluxVar {
    /// Its name.
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// Its length: a uniform node (`u32`).
    pub len: NodeId,
    /// Where it is declared (for limit errors; `0:0` when built by hand).
    pub pos: Pos,
}

/// `d(s[index])/dt += value`: one trajectory's contribution to a shared element's rate.
#[derive(Clone, Debug, PartialEq)]
pub struct Drive {
    /// The shared sub-field.
    pub shared: u32,
    /// The element (`u32` node).
    pub index: NodeId,
    /// The contribution.
    pub value: NodeId,
    /// Only trajectories where this `bool` node holds contribute (`None`: all).
    pub guard: Option<NodeId>,
    /// Index into [`Kernel::sites`].
    pub site: u32,
}

/// `emit f[index] += value`: a flux emitted into a global accumulator; over a
/// step the amount is the integrator's quadrature of `value` (Euler: `dt·value`).
#[derive(Clone, Debug, PartialEq)]
pub struct Emit {
    /// The flux output.
    pub flux: u32,
    /// The element (`u32` node).
    pub index: NodeId,
    /// The emission rate.
    pub value: NodeId,
    /// Only trajectories where this `bool` node holds emit (`None`: all).
    pub guard: Option<NodeId>,
    /// Index into [`Kernel::sites`].
    pub site: u32,
}

/// What a phase does to one state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Update {
    /// Held constant (rate 0).
    Hold,
    /// `d(x)/dt = node`: integrated by the launch's method.
    Rate(NodeId),
    /// `x := node`: the exact flow of a unit-time piecewise-constant segment,
    /// applied once per (unit) step.
    Jump(NodeId),
}

/// A phase: between two basin-collapse barriers (`__syncthreads()`). Each phase
/// integrates over its own span from local time 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Its name.
    pub name: String,
    /// How many times it repeats (a uniform `u32` node), with `k` = 0, 1, ….
    pub repeat: Option<NodeId>,
    /// Its time span (a uniform node of the field's float type); `None` for the
    /// body of an unphased field, which spans the launch's `t0..t1`.
    pub span: Option<NodeId>,
    /// One update per state, in state order.
    pub updates: Vec<Update>,
    /// Shared sub-field drives.
    pub drives: Vec<Drive>,
    /// Flux emissions.
    pub emits: Vec<Emit>,
    /// Where it is declared (for limit errors; `0:0` for the body of an
    /// unphased field or when built by hand).
    pub pos: Pos,
}

/// An event of an unphased field (`event name: g falling { … }`): where
/// the condition crosses zero in `direction` during an adaptive integration,
/// the trajectory jumps (every jump reading the state at the crossing) or,
/// with `terminate`, ends there. Only adaptive methods run events.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Its name.
    pub name: String,
    /// `g(t, state, params)`: a node of the field's float type.
    pub condition: NodeId,
    /// Which crossings trigger it.
    pub direction: vgpu_field::adaptive::Crossing,
    /// `(state, new value)` pairs, states distinct.
    pub jumps: Vec<(u32, NodeId)>,
    /// Whether the trajectory ends at the event (then `jumps` is empty).
    pub terminate: bool,
    /// Where it is declared.
    pub pos: Pos,
}

/// A kernel: a vector field written once, run on the CPU and on GPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The field's name.
    pub name: String,
    /// The source name (a file path) for messages.
    pub source: String,
    /// Parameters in declaration order.
    pub params: Vec<Param>,
    /// State variables in declaration order.
    pub states: Vec<StateVar>,
    /// Shared sub-fields.
    pub shared: Vec<SharedVar>,
    /// Flux outputs.
    pub fluxes: Vec<FluxVar>,
    /// Phases in order (an unphased field has one, with `span: None`).
    pub phases: Vec<Phase>,
    /// The arena.
    pub nodes: Vec<Node>,
    /// The type of each node.
    pub types: Vec<ScalarType>,
    /// Source positions of buffer and shared accesses, drives and emits.
    pub sites: Vec<Pos>,
    /// Events (unphased fields, adaptive methods only).
    pub events: Vec<Event>,
    dedup: HashMap<NodeKey, NodeId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum NodeKey {
    Const((u8, u64)),
    Other(NodeShape),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum NodeShape {
    State(u32),
    Init(u32),
    Param(u32),
    Load(u32, NodeId),
    SharedLoad(u32, NodeId),
    Builtin(Builtin),
    Unary(UnOp, NodeId),
    Binary(BinOp, NodeId, NodeId),
    Select(NodeId, NodeId, NodeId),
    Fma(NodeId, NodeId, NodeId),
    Cast(ScalarType, NodeId),
}

impl Kernel {
    /// An empty kernel (no states, no phases) to build with the `push`/op methods.
    pub fn new(name: impl Into<String>, source: impl Into<String>) -> Kernel {
        Kernel {
            name: name.into(),
            source: source.into(),
            params: vec![],
            states: vec![],
            shared: vec![],
            fluxes: vec![],
            phases: vec![],
            nodes: vec![],
            types: vec![],
            sites: vec![],
            events: vec![],
            dedup: HashMap::new(),
        }
    }

    /// The type of a node.
    pub fn ty(&self, n: NodeId) -> ScalarType {
        self.types[n.index()]
    }

    /// The float type of the states (`f32` when there are none).
    pub fn float_type(&self) -> ScalarType {
        self.states.first().map(|s| s.ty).unwrap_or(ScalarType::F32)
    }

    /// True when the field has explicit phases (barriers).
    pub fn is_phased(&self) -> bool {
        self.phases.iter().any(|p| p.span.is_some())
    }

    /// The constant value of a node, if it is one.
    pub fn constant(&self, n: NodeId) -> Option<Value> {
        match self.nodes[n.index()] {
            Node::Const(v) => Some(v),
            _ => None,
        }
    }

    /// Records a source position for an access; returns its site index.
    pub fn site(&mut self, pos: Pos) -> u32 {
        self.sites.push(pos);
        (self.sites.len() - 1) as u32
    }

    fn intern(&mut self, node: Node, ty: ScalarType) -> NodeId {
        let key = match node {
            Node::Const(v) => NodeKey::Const(v.key()),
            Node::State(k) => NodeKey::Other(NodeShape::State(k)),
            Node::Init(k) => NodeKey::Other(NodeShape::Init(k)),
            Node::Param(k) => NodeKey::Other(NodeShape::Param(k)),
            Node::Load { buf, index, .. } => NodeKey::Other(NodeShape::Load(buf, index)),
            Node::SharedLoad { shared, index, .. } => {
                NodeKey::Other(NodeShape::SharedLoad(shared, index))
            }
            Node::Builtin(b) => NodeKey::Other(NodeShape::Builtin(b)),
            Node::Unary(o, a) => NodeKey::Other(NodeShape::Unary(o, a)),
            Node::Binary(o, a, b) => NodeKey::Other(NodeShape::Binary(o, a, b)),
            Node::Select(a, b, c) => NodeKey::Other(NodeShape::Select(a, b, c)),
            Node::Fma(a, b, c) => NodeKey::Other(NodeShape::Fma(a, b, c)),
            Node::Cast(t, a) => NodeKey::Other(NodeShape::Cast(t, a)),
        };
        if let Some(&id) = self.dedup.get(&key) {
            return id;
        }
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(node);
        self.types.push(ty);
        self.dedup.insert(key, id);
        id
    }

    /// A constant node.
    pub fn constant_node(&mut self, v: Value) -> NodeId {
        self.intern(Node::Const(v), v.ty())
    }
    /// The current value of state `k`.
    pub fn state(&mut self, k: u32) -> NodeId {
        let ty = self.states[k as usize].ty;
        self.intern(Node::State(k), ty)
    }
    /// The initial value of state `k`.
    pub fn init(&mut self, k: u32) -> NodeId {
        let ty = self.states[k as usize].ty;
        self.intern(Node::Init(k), ty)
    }
    /// Scalar parameter `k`.
    pub fn param(&mut self, k: u32) -> NodeId {
        let ty = self.params[k as usize].ty;
        self.intern(Node::Param(k), ty)
    }
    /// A builtin (`i`, `tid`, `t`, …).
    pub fn builtin(&mut self, b: Builtin) -> NodeId {
        let ty = if b == Builtin::Time {
            self.float_type()
        } else {
            ScalarType::U32
        };
        self.intern(Node::Builtin(b), ty)
    }
    /// `buf[index]` (index must be an integer node).
    pub fn load(&mut self, buf: u32, index: NodeId, site: u32) -> NodeId {
        let ty = self.params[buf as usize].ty;
        self.intern(Node::Load { buf, index, site }, ty)
    }
    /// `shared[index]`.
    pub fn shared_load(&mut self, shared: u32, index: NodeId, site: u32) -> NodeId {
        let ty = self.shared[shared as usize].ty;
        self.intern(
            Node::SharedLoad {
                shared,
                index,
                site,
            },
            ty,
        )
    }
    /// A unary operation; folded when the operand is constant.
    pub fn unary(&mut self, op: UnOp, a: NodeId) -> NodeId {
        let ty = self.ty(a);
        if let Some(va) = self.constant(a) {
            if let Some(v) = crate::ops::unary(op, va) {
                return self.constant_node(v);
            }
        }
        self.intern(Node::Unary(op, a), ty)
    }
    /// A binary operation (operands of one type); folded when both are constant.
    pub fn binary(&mut self, op: BinOp, a: NodeId, b: NodeId) -> NodeId {
        let ty = if op.is_comparison() {
            ScalarType::Bool
        } else {
            self.ty(a)
        };
        if let (Some(va), Some(vb)) = (self.constant(a), self.constant(b)) {
            if let Some(v) = crate::ops::binary(op, va, vb) {
                return self.constant_node(v);
            }
        }
        self.intern(Node::Binary(op, a, b), ty)
    }
    /// `select(c, a, b)`.
    pub fn select(&mut self, c: NodeId, a: NodeId, b: NodeId) -> NodeId {
        if let Some(Value::Bool(cv)) = self.constant(c) {
            return if cv { a } else { b };
        }
        let ty = self.ty(a);
        self.intern(Node::Select(c, a, b), ty)
    }
    /// `fma(a, b, c)`.
    pub fn fma(&mut self, a: NodeId, b: NodeId, c: NodeId) -> NodeId {
        if let (Some(va), Some(vb), Some(vc)) =
            (self.constant(a), self.constant(b), self.constant(c))
        {
            return self.constant_node(crate::ops::fma(va, vb, vc));
        }
        let ty = self.ty(a);
        self.intern(Node::Fma(a, b, c), ty)
    }
    /// A conversion (no node when the type already matches).
    pub fn cast(&mut self, ty: ScalarType, a: NodeId) -> NodeId {
        if self.ty(a) == ty {
            return a;
        }
        if let Some(va) = self.constant(a) {
            return self.constant_node(va.cast(ty));
        }
        self.intern(Node::Cast(ty, a), ty)
    }

    /// Every node reachable from `roots`, in arena (dependency) order.
    pub fn reachable(&self, roots: &[NodeId]) -> Vec<NodeId> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<NodeId> = roots.to_vec();
        while let Some(n) = stack.pop() {
            if seen[n.index()] {
                continue;
            }
            seen[n.index()] = true;
            stack.extend(self.nodes[n.index()].operands());
        }
        (0..self.nodes.len())
            .filter(|&i| seen[i])
            .map(|i| NodeId(i as u32))
            .collect()
    }

    /// The roots a phase evaluates: rates, jumps, drives and emits.
    pub fn phase_roots(&self, phase: &Phase) -> Vec<NodeId> {
        let mut roots = Vec::new();
        for u in &phase.updates {
            match u {
                Update::Hold => {}
                Update::Rate(n) | Update::Jump(n) => roots.push(*n),
            }
        }
        for d in &phase.drives {
            roots.push(d.index);
            roots.push(d.value);
            roots.extend(d.guard);
        }
        for e in &phase.emits {
            roots.push(e.index);
            roots.push(e.value);
            roots.extend(e.guard);
        }
        roots
    }

    /// How a node varies: see [`Variance`].
    pub fn variance(&self) -> Vec<Variance> {
        let mut v = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let own = match node {
                Node::Const(_) | Node::Param(_) => Variance::Uniform,
                Node::Builtin(Builtin::Time) => Variance::Varying,
                Node::Builtin(Builtin::Repetition)
                | Node::Builtin(Builtin::BlockDim)
                | Node::Builtin(Builtin::GridDim)
                | Node::Builtin(Builtin::Count) => Variance::Uniform,
                Node::Builtin(_) | Node::Init(_) => Variance::Lane,
                Node::State(_) | Node::SharedLoad { .. } => Variance::Varying,
                Node::Load { .. } => Variance::Uniform,
                _ => Variance::Uniform,
            };
            let ops = node
                .operands()
                .iter()
                .map(|o| v[o.index()])
                .max()
                .unwrap_or(Variance::Uniform);
            // A buffer read at a uniform index is still per-lane data only if the
            // index is; it never varies in time unless its index does.
            let own = if matches!(node, Node::Load { .. }) {
                ops.max(Variance::Uniform)
            } else {
                own
            };
            v.push(own.max(ops));
        }
        v
    }
}

/// How a node's value varies, for hoisting work out of the step loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Variance {
    /// The same for every trajectory and step of a phase repetition.
    Uniform,
    /// Per trajectory, constant over the phase.
    Lane,
    /// Changes with time or state.
    Varying,
}
