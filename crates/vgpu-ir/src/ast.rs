//! The syntax tree of `.field` text, as the parser builds it (before types).

use crate::error::Pos;
use crate::types::ScalarType;
pub use vgpu_field::adaptive::Crossing;

/// An expression as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it starts.
    pub pos: Pos,
}

/// The kinds of expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A literal with a fraction or exponent (`1.0`, `2e-3`), as written.
    Float(String),
    /// An integer literal.
    Int(u64),
    /// `true` / `false`.
    Bool(bool),
    /// A name: state, parameter, `let`, index (`i`, `tid`, …) or `t`.
    Name(String),
    /// `name[index]`: a buffer, shared sub-field or `init` element read.
    Index(String, Box<Expr>),
    /// `f(args)`: a math function, `select`, or a cast (`f32(x)`).
    Call(String, Vec<Expr>),
    /// A unary operator.
    Unary(UnaryOp, Box<Expr>),
    /// A binary operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `!x` (logical not of a bool, bitwise not of an integer).
    Not,
}

/// Binary operators: the IR's own (the language writes `min`, `max` and `pow`
/// as calls, the rest as infix operators).
pub use crate::kernel::BinOp;

/// A parameter of a field: a scalar or a read-only buffer (`name: f32[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    /// Its name.
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// `true` for a buffer (`[]`).
    pub buffer: bool,
    /// Where.
    pub pos: Pos,
}

/// One state variable of `state x = 1.0, y: f64 = 0.0;`.
#[derive(Clone, Debug, PartialEq)]
pub struct StateDecl {
    /// Its name.
    pub name: String,
    /// Declared type (`f32` when absent).
    pub ty: Option<ScalarType>,
    /// Initial value (may read parameters, buffers and indices).
    pub init: Expr,
    /// Where.
    pub pos: Pos,
}

/// `shared s: f32[LEN] = INIT;` — a coupled sub-field, one per block.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedDecl {
    /// Its name.
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// Length (a constant expression of scalar parameters and `bdim`).
    pub len: Expr,
    /// Initial value of every element.
    pub init: Expr,
    /// Where.
    pub pos: Pos,
}

/// `flux total: f32[LEN];` — a global accumulator the trajectories emit into.
#[derive(Clone, Debug, PartialEq)]
pub struct FluxDecl {
    /// Its name.
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// Length (a constant expression of scalar parameters, `n`, `bdim`, `gdim`).
    pub len: Expr,
    /// Where.
    pub pos: Pos,
}

/// A statement of a field or phase body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let name [: ty] = value;`
    Let {
        /// Bound name.
        name: String,
        /// Declared type, if any.
        ty: Option<ScalarType>,
        /// Value.
        value: Expr,
        /// Where.
        pos: Pos,
    },
    /// `d(x)/dt = value;`
    Rate {
        /// The state.
        state: String,
        /// Its derivative.
        value: Expr,
        /// Where.
        pos: Pos,
    },
    /// `x := value;` — the exact flow of a unit-time piecewise-constant segment.
    Jump {
        /// The state.
        state: String,
        /// Its value after each unit step.
        value: Expr,
        /// Where.
        pos: Pos,
    },
    /// `d(s[index])/dt += value;` — this trajectory's contribution to the rate of a
    /// shared sub-field element.
    Drive {
        /// The shared sub-field.
        shared: String,
        /// The element.
        index: Expr,
        /// The contribution.
        value: Expr,
        /// `if COND`: only trajectories where it holds contribute.
        guard: Option<Expr>,
        /// Where.
        pos: Pos,
    },
    /// `emit total[index] += value;` — a flux into a global accumulator.
    Emit {
        /// The flux output.
        flux: String,
        /// The element.
        index: Expr,
        /// The emission rate.
        value: Expr,
        /// `if COND`: only trajectories where it holds emit.
        guard: Option<Expr>,
        /// Where.
        pos: Pos,
    },
}

/// `phase name [for k in 0..COUNT] [over SPAN] { stmts }` — a basin-collapse phase.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseDecl {
    /// Its name.
    pub name: String,
    /// `for k in 0..COUNT`: the phase repeats COUNT times, `k` = repetition.
    pub repeat: Option<(String, Expr)>,
    /// Its time span (1 when absent).
    pub over: Option<Expr>,
    /// Body.
    pub body: Vec<Stmt>,
    /// Where.
    pub pos: Pos,
}

/// One item of a field's body.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `state …;`
    State(Vec<StateDecl>),
    /// `shared …;`
    Shared(SharedDecl),
    /// `flux …;`
    Flux(FluxDecl),
    /// A statement.
    Stmt(Stmt),
    /// A phase.
    Phase(PhaseDecl),
    /// An event.
    Event(EventDecl),
}

/// `event name: g direction { x := …; … }` or `event name: g direction
/// terminate;` — where `g` crosses zero in `direction`, the trajectory jumps
/// (or ends).
#[derive(Clone, Debug, PartialEq)]
pub struct EventDecl {
    /// Its name.
    pub name: String,
    /// The scalar `g(t, state, params)` whose zero crossing triggers it.
    pub condition: Expr,
    /// Which crossings trigger it (`both` when not written).
    pub direction: Crossing,
    /// What it does, in order.
    pub actions: Vec<EventAction>,
    /// Where.
    pub pos: Pos,
}

/// One action of an event.
#[derive(Clone, Debug, PartialEq)]
pub enum EventAction {
    /// `x := value;` — the state's value after the event (every jump of an
    /// event reads the state before the event).
    Jump {
        /// The state.
        state: String,
        /// Its new value.
        value: Expr,
        /// Where.
        pos: Pos,
    },
    /// `terminate;` — the trajectory ends at the event.
    Terminate(Pos),
}

/// A whole `field name(params) { items }`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldDecl {
    /// Its name.
    pub name: String,
    /// Parameters in order.
    pub params: Vec<ParamDecl>,
    /// Body items in order.
    pub items: Vec<Item>,
    /// Where.
    pub pos: Pos,
}
