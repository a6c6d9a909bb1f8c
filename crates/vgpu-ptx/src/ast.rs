//! The syntax tree of a PTX module, as parsed (names still strings).

/// A parsed PTX module.
#[derive(Debug, Clone, Default)]
pub struct Module {
    /// `.version` (major, minor), when present.
    pub version: Option<(u32, u32)>,
    /// `.target` names (e.g. `sm_90`).
    pub target: Vec<String>,
    /// `.address_size` (32 or 64), default 64.
    pub address_size: u32,
    /// Module-level variables (`.global`, `.const`, `.shared`).
    pub vars: Vec<VarDecl>,
    /// Entries and functions, in order.
    pub functions: Vec<Function>,
}

/// A state space of PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// `.global`.
    Global,
    /// `.shared` (per block).
    Shared,
    /// `.local` (per thread).
    Local,
    /// `.param` (kernel parameters, or call arguments).
    Param,
    /// `.const`.
    Const,
    /// No space: a generic address.
    Generic,
}

/// A variable declaration (`.global .align 4 .b8 name[24] = {…};`).
#[derive(Debug, Clone)]
pub struct VarDecl {
    /// Its state space.
    pub space: Space,
    /// `.align N`, when given.
    pub align: Option<u32>,
    /// The element type, e.g. `b8`, `f32` (without the dot).
    pub ty: String,
    /// `.v2`/`.v4` vector width, 1 for scalars.
    pub vec: u32,
    /// The name.
    pub name: String,
    /// Array dimensions; `None` for an unsized (`[]`) dimension.
    pub dims: Vec<Option<u64>>,
    /// The initialiser, flattened.
    pub init: Option<Vec<Init>>,
    /// Declared `.extern`.
    pub is_extern: bool,
    /// 1-based line.
    pub line: u32,
}

/// One initialiser element.
#[derive(Debug, Clone, PartialEq)]
pub enum Init {
    /// An integer.
    Int(i128),
    /// A float, as f64 (or the exact bits given in hex).
    Float(FloatLit),
    /// An address of a symbol (`generic(sym)` or `sym`), unsupported at run time.
    Symbol(String),
}

/// A floating-point literal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloatLit {
    /// `0fXXXXXXXX`: f32 bits.
    F32Bits(u32),
    /// `0dXXXXXXXXXXXXXXXX`: f64 bits.
    F64Bits(u64),
    /// A decimal literal.
    Decimal(f64),
}

/// A parameter of an entry or function.
#[derive(Debug, Clone)]
pub struct Param {
    /// The type (`u64`, `b8`, …).
    pub ty: String,
    /// The name.
    pub name: String,
    /// `.align N`.
    pub align: Option<u32>,
    /// Array length (`.b8 p[16]`), 1 for scalars.
    pub count: u64,
    /// Declared space: `.param` or `.reg`.
    pub space: Space,
    /// 1-based line.
    pub line: u32,
}

/// An `.entry` or `.func`.
#[derive(Debug, Clone)]
pub struct Function {
    /// The name.
    pub name: String,
    /// `.entry` (a kernel) or `.func`.
    pub is_entry: bool,
    /// Return parameters (functions only).
    pub rets: Vec<Param>,
    /// Parameters.
    pub params: Vec<Param>,
    /// The body; `None` for a prototype.
    pub body: Option<Vec<Stmt>>,
    /// 1-based line.
    pub line: u32,
}

/// A statement of a function body.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// `.reg .type names;` (ranges expanded).
    Reg {
        /// The type.
        ty: String,
        /// The register names.
        names: Vec<String>,
        /// 1-based line.
        line: u32,
    },
    /// A variable (`.local`, `.shared`, `.param`, …).
    Var(VarDecl),
    /// A label.
    Label(String, u32),
    /// An instruction.
    Inst(Instruction),
    /// `{`: a nested scope opens.
    Open,
    /// `}`: a nested scope closes.
    Close,
}

/// An instruction as written.
#[derive(Debug, Clone)]
pub struct Instruction {
    /// The guard predicate (`@%p`, `@!%p`): name, negated.
    pub guard: Option<(String, bool)>,
    /// The opcode with its modifiers split at the dots (`["ld", "global", "f32"]`).
    pub opcode: Vec<String>,
    /// The operands.
    pub operands: Vec<Operand>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// `.pragma "used_bytes_mask N"` just before the instruction (nvcc writes it
    /// before a vector load of which the program uses only some bytes): bit `i`
    /// set when byte `i` of the access is used.
    pub used_bytes_mask: Option<u32>,
}

impl Instruction {
    /// The opcode joined with dots, as written.
    pub fn opcode_text(&self) -> String {
        self.opcode.join(".")
    }
}

/// An operand as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A name: register, special register, variable, label or function.
    Name(String),
    /// `name+imm` outside brackets.
    NameOffset(String, i64),
    /// An integer literal.
    Int(i128),
    /// A float literal.
    Float(FloatLit),
    /// `[base+offset]`: base a name or absent (an absolute address).
    Address(Option<String>, i64),
    /// `{a, b, …}`.
    Vector(Vec<Operand>),
    /// `(a, b, …)` in `call`.
    List(Vec<Operand>),
    /// `!operand`.
    Not(Box<Operand>),
    /// `a|b`: two destinations.
    Pair(Box<Operand>, Box<Operand>),
    /// `_`: the sink.
    Sink,
}
