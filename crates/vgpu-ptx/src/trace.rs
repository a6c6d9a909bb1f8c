//! Formatting a traced thread's trajectory: after each instruction, the
//! registers it changed (the field view of a kernel, one thread).

use crate::launch::TraceStep;
use crate::types::Ty;

/// A register value as text, by its declared type.
pub fn format_value(ty: Ty, bits: u64) -> String {
    match ty {
        Ty::F32 => format!("{:e} (0x{:08x})", f32::from_bits(bits as u32), bits as u32),
        Ty::F64 => format!("{:e} (0x{:016x})", f64::from_bits(bits), bits),
        Ty::Pred => format!("{}", bits & 1),
        Ty::S32 | Ty::S16 | Ty::S8 => format!("{}", bits as u32 as i32),
        Ty::S64 => format!("{}", bits as i64),
        Ty::U64 | Ty::B64 => format!("0x{bits:x}"),
        _ => format!("{} (0x{:x})", bits as u32, bits as u32),
    }
}

/// One line per step: `line N: <ptx text> | %r1 = …`. `source` is the PTX text
/// (to show each line), when available.
pub fn format_trace(steps: &[TraceStep], source: Option<&str>) -> String {
    let lines: Vec<&str> = source.map(|s| s.lines().collect()).unwrap_or_default();
    let mut out = String::new();
    for (i, s) in steps.iter().enumerate() {
        let text = lines
            .get(s.line as usize - 1)
            .map(|t| t.trim())
            .unwrap_or("");
        out.push_str(&format!("{i:6}  line {:5}  {:<48}", s.line, text));
        let writes: Vec<String> = s
            .writes
            .iter()
            .map(|(n, t, v)| format!("{n} = {}", format_value(*t, *v)))
            .collect();
        if !writes.is_empty() {
            out.push_str(" | ");
            out.push_str(&writes.join(", "));
        }
        out.push('\n');
    }
    out
}
