//! The one resource policy's vocabulary, shared by every crate that takes sizes
//! from input: the memory the machine has, overflow-checked byte counts held
//! against a budget, and the typed refusal that names the quantity, what it
//! needs, the limit and the option that raises it. Each crate keeps only the
//! limits it alone knows (the front end its array sizes, the PTX runner its
//! grids, the facade a whole command's host memory) and refuses through these.

/// A size taken from input refused before anything was allocated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{quantity} needs {need}, over the limit of {limit} (raise it with {flag})")]
pub struct Refusal {
    /// What was asked for (names the option, declaration or file it came from).
    pub quantity: String,
    /// How much it needs.
    pub need: String,
    /// The limit in force.
    pub limit: String,
    /// The option that raises the limit.
    pub flag: &'static str,
}

/// The memory the system reports available to new allocations
/// (`MemAvailable` of `/proc/meminfo`), in bytes; `None` where there is none.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// `bytes` as a short human figure (`1.5 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Host memory one run may allocate, and the option that raises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// Bytes allowed.
    pub max_bytes: u64,
    /// The option that raises [`MemoryBudget::max_bytes`] (e.g. `--max-memory`).
    pub flag: &'static str,
}

impl MemoryBudget {
    /// The memory the system reports available ([`available_memory`]), or
    /// unlimited where it does not say.
    pub fn available(flag: &'static str) -> Self {
        MemoryBudget {
            max_bytes: available_memory().unwrap_or(u64::MAX),
            flag,
        }
    }

    /// `count × size` bytes for `what`, refused when the product overflows.
    pub fn bytes(&self, what: &str, count: u64, size: u64) -> Result<u64, Refusal> {
        count.checked_mul(size).ok_or_else(|| Refusal {
            quantity: what.to_string(),
            need: format!("{count} × {size} bytes (more than 2^64)"),
            limit: human_bytes(self.max_bytes),
            flag: self.flag,
        })
    }

    /// The sum of `parts` bytes for `what`, refused when it overflows.
    pub fn sum(&self, what: &str, parts: &[u64]) -> Result<u64, Refusal> {
        parts
            .iter()
            .try_fold(0u64, |a, &b| a.checked_add(b))
            .ok_or_else(|| Refusal {
                quantity: what.to_string(),
                need: "more than 2^64 bytes".into(),
                limit: human_bytes(self.max_bytes),
                flag: self.flag,
            })
    }

    /// Refuses `bytes` for `what` beyond the budget.
    pub fn check(&self, what: &str, bytes: u64) -> Result<(), Refusal> {
        if bytes > self.max_bytes {
            return Err(Refusal {
                quantity: what.to_string(),
                need: human_bytes(bytes),
                limit: format!("{} of memory", human_bytes(self.max_bytes)),
                flag: self.flag,
            });
        }
        Ok(())
    }
}

/// Refuses `count` of something (threads, steps, …) beyond `max`, naming `unit`.
pub fn check_count(
    what: &str,
    count: u64,
    max: u64,
    unit: &str,
    flag: &'static str,
) -> Result<(), Refusal> {
    if count > max {
        return Err(Refusal {
            quantity: what.to_string(),
            need: format!("{count} {unit}"),
            limit: format!("{max} {unit}"),
            flag,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_refuse_overflow_and_excess_naming_the_flag() {
        let b = MemoryBudget {
            max_bytes: 1 << 20,
            flag: "--max-memory",
        };
        assert_eq!(b.bytes("x", 3, 4).unwrap(), 12);
        let e = b.bytes("x", u64::MAX, 2).unwrap_err();
        assert!(e.need.contains("more than 2^64"), "{e}");
        assert!(b.sum("y", &[u64::MAX, 1]).is_err());
        assert_eq!(b.sum("y", &[1, 2, 3]).unwrap(), 6);
        let e = b.check("states", 2 << 20).unwrap_err().to_string();
        assert_eq!(
            e,
            "states needs 2.0 MiB, over the limit of 1.0 MiB of memory (raise it with --max-memory)"
        );
        let e = check_count("t", 11, 10, "steps", "--max-steps").unwrap_err();
        assert_eq!(e.need, "11 steps");
        assert!(check_count("t", 10, 10, "steps", "--max-steps").is_ok());
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
