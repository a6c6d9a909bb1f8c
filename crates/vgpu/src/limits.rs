//! The host-side resource policy of the `vgpu` command and the Python package:
//! every size taken from input (trajectories, steps, threads, `.npy` headers,
//! output arrays) is computed with overflow-checked arithmetic and compared with
//! an explicit limit **before** anything is allocated. A refusal names the
//! quantity, what it needs, the limit, and the option that raises it.

use crate::Error;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use vgpu_ir::{Integration, Kernel, ScalarType};

/// Limits on what one command may ask of this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of host memory one run may allocate (`--max-memory`); default: the
    /// memory the system reports available (`MemAvailable`), or unlimited
    /// where the system does not say.
    pub max_memory: u64,
    /// Integration steps per trajectory (`--max-steps`); default 10⁹.
    pub max_steps: u64,
    /// CPU worker threads; default and ceiling: the machine's hardware threads.
    pub max_threads: usize,
}

/// Copies of each state component an ensemble may hold at once on the host:
/// the state, the RK stages (up to 4), the start of the step, the result and
/// its converted copy for the output.
const STATE_COPIES: u64 = 8;

/// The default of [`Limits::max_steps`].
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000_000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_memory: available_memory().unwrap_or(u64::MAX),
            max_steps: DEFAULT_MAX_STEPS,
            max_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

pub use vgpu_field::resources::{available_memory, human_bytes};
use vgpu_field::resources::{check_count, MemoryBudget, Refusal};

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Self {
        Error::Limit {
            quantity: r.quantity,
            need: r.need,
            limit: r.limit,
            flag: r.flag,
        }
    }
}

/// Parses a size: a whole number of bytes, optionally with a binary suffix
/// `K`, `M`, `G` or `T` (`KiB`… and lower case accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?}: expected a size such as 4G, 512M or 1000000"))?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => return Err(format!("{s:?}: unknown unit {other:?} (K, M, G or T)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?}: more than 2^64 bytes"))
}

impl Limits {
    fn budget(&self) -> MemoryBudget {
        MemoryBudget {
            max_bytes: self.max_memory,
            flag: "--max-memory",
        }
    }

    /// `count × size` bytes, overflow-checked, for `what`.
    pub fn bytes(&self, what: &str, count: u64, size: u64) -> Result<u64, Error> {
        Ok(self.budget().bytes(what, count, size)?)
    }

    /// Refuses `bytes` of host memory for `what` beyond [`Limits::max_memory`].
    pub fn memory(&self, what: &str, bytes: u64) -> Result<(), Error> {
        Ok(self.budget().check(what, bytes)?)
    }

    /// Refuses more than [`Limits::max_steps`] steps per trajectory.
    pub fn steps(&self, what: &str, steps: u64) -> Result<(), Error> {
        Ok(check_count(
            what,
            steps,
            self.max_steps,
            "steps per trajectory",
            "--max-steps",
        )?)
    }

    /// The worker threads to use for `asked` (0: one per hardware thread), and
    /// a note when the request was capped at the machine's hardware threads.
    pub fn threads(&self, asked: usize) -> (usize, Option<String>) {
        match asked {
            0 => (self.max_threads, None),
            n if n > self.max_threads => (
                self.max_threads,
                Some(format!(
                    "--threads {n} capped at {}, the hardware threads of this machine",
                    self.max_threads
                )),
            ),
            n => (n, None),
        }
    }

    /// Refuses, before any allocation, an ensemble of more than 2³² − 1
    /// trajectories, more steps per trajectory than [`Limits::max_steps`]
    /// (fields without phases; phased fields take their spans from the kernel),
    /// or more host memory than [`Limits::max_memory`] for its states, RK
    /// scratch, outputs and per-trajectory parameters.
    pub fn ensemble(&self, k: &Kernel, integ: &Integration) -> Result<(), Error> {
        let n = integ.n;
        if n > u32::MAX as usize {
            return Err(Error::Usage(format!(
                "n = {n}: at most 2^32 - 1 trajectories"
            )));
        }
        if !k.is_phased() {
            let steps = integ.steps(&k.name)?;
            self.steps(
                &format!("t = {}..{} with dt = {}", integ.t0, integ.t1, integ.dt),
                steps as u64,
            )?;
        }
        let elem: u64 = if k.float_type() == ScalarType::F64 {
            8
        } else {
            4
        };
        let per_traj = (k.states.len() as u64 * STATE_COPIES + k.params.len() as u64) * elem;
        let what = format!("{n} trajectories of {} states", k.states.len());
        let bytes = self.bytes(&what, n as u64, per_traj)?;
        self.memory(&what, bytes)
    }

    /// Checks a `.npy` file before it is read: a regular file (not a device or
    /// a pipe, which could be read forever) whose header declares a shape and
    /// element size that the file really holds and that fit in memory. Returns
    /// the declared shape. The file is then read at most to that size.
    pub fn npy(&self, path: &Path) -> Result<Vec<u64>, Error> {
        let io = |m: String| Error::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(m),
        };
        let meta = std::fs::metadata(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        if !meta.is_file() {
            return Err(io("not a regular file".into()));
        }
        let mut f = std::fs::File::open(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        let mut pre = [0u8; 12];
        let got = read_up_to(&mut f, &mut pre).map_err(|e| io(e.to_string()))?;
        if got < 10 || &pre[..6] != b"\x93NUMPY" {
            return Err(io("not a .npy file (no NUMPY magic)".into()));
        }
        let (start, hlen) = match pre[6] {
            1 => (10u64, u16::from_le_bytes([pre[8], pre[9]]) as u64),
            2 | 3 if got == 12 => (
                12u64,
                u32::from_le_bytes([pre[8], pre[9], pre[10], pre[11]]) as u64,
            ),
            v => return Err(io(format!("unsupported .npy version {v}"))),
        };
        const MAX_HEADER: u64 = 1 << 16;
        if hlen > MAX_HEADER || start + hlen > meta.len() {
            return Err(io(format!(
                "the .npy header claims {hlen} bytes; the file holds {}",
                meta.len()
            )));
        }
        let mut header = vec![0u8; hlen as usize];
        f.seek(SeekFrom::Start(start))
            .and_then(|_| f.read_exact(&mut header))
            .map_err(|e| io(e.to_string()))?;
        let text = String::from_utf8_lossy(&header);
        let item = descr_size(&text)
            .ok_or_else(|| io(format!("no element type in the header {text:?}")))?;
        let shape =
            header_shape(&text).ok_or_else(|| io(format!("no shape in the header {text:?}")))?;
        let count = shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| io(format!("shape {shape:?} has more than 2^64 elements")))?;
        // ndarray's own rule: the product of the non-zero axes must fit in an
        // isize, even when another axis is 0 (its reader panics otherwise).
        let nonzero = shape
            .iter()
            .filter(|&&d| d != 0)
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .filter(|&p| p <= isize::MAX as u64);
        if nonzero.is_none() {
            return Err(io(format!(
                "shape {shape:?}: its axes multiply past 2^63 elements"
            )));
        }
        let bytes = self.bytes(&format!("{} ({shape:?})", path.display()), count, item)?;
        let data = meta.len() - start - hlen;
        if data < bytes {
            return Err(io(format!(
                "the header declares shape {shape:?} ({}), but the file holds {} of data",
                human_bytes(bytes),
                human_bytes(data)
            )));
        }
        self.memory(&format!("{} ({shape:?})", path.display()), bytes)?;
        Ok(shape)
    }
}

fn read_up_to(f: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The element size of a `.npy` header's `descr` (`'<f4'` → 4).
fn descr_size(h: &str) -> Option<u64> {
    let rest = &h[h.find("'descr'")? + 7..];
    let open = rest.find('\'')? + 1;
    let close = open + rest[open..].find('\'')?;
    let d = &rest[open..close];
    let digits: String = d.chars().skip_while(|c| !c.is_ascii_digit()).collect();
    digits.parse().ok().filter(|&s: &u64| s > 0)
}

/// The shape tuple of a `.npy` header (`'shape': (3, 4)` → `[3, 4]`).
fn header_shape(h: &str) -> Option<Vec<u64>> {
    let rest = &h[h.find("'shape'")? + 7..];
    let open = rest.find('(')? + 1;
    let close = open + rest[open..].find(')')?;
    rest[open..close]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert!(parse_size("1Q").unwrap_err().contains("unknown unit"));
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999T").unwrap_err().contains("2^64"));
    }

    #[test]
    fn headers_give_shape_and_element_size() {
        let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }";
        assert_eq!(descr_size(h), Some(8));
        assert_eq!(header_shape(h), Some(vec![3, 4]));
        assert_eq!(
            header_shape("{'shape': (7,), 'descr': '|u1'}"),
            Some(vec![7])
        );
        assert_eq!(header_shape("{'shape': (), }"), Some(vec![]));
    }

    #[test]
    fn a_header_whose_axes_overflow_is_refused_even_with_a_zero_axis() {
        // Found by vgpu-fuzz (npy target): ndarray-npy panicked on this header.
        let h = "{'descr': '<u8', 'fortran_order': False, 'shape': (2, 0, 18446744073709551615)}";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let mut header = h.as_bytes().to_vec();
        header.resize(127, b' ');
        header.push(b'\n');
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(&header);
        let path = std::env::temp_dir().join(format!("vgpu-limits-{}.npy", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let e = Limits::default().npy(&path).unwrap_err().to_string();
        let _ = std::fs::remove_file(&path);
        assert!(e.contains("multiply past 2^63"), "{e}");
    }

    #[test]
    fn limits_name_the_quantity_and_the_flag() {
        let l = Limits {
            max_memory: 1 << 20,
            max_steps: 10,
            max_threads: 2,
        };
        let e = l.memory("states", 2 << 20).unwrap_err().to_string();
        assert!(e.contains("states") && e.contains("--max-memory"), "{e}");
        let e = l.steps("t1 - t0 / dt", 11).unwrap_err().to_string();
        assert!(e.contains("11 steps") && e.contains("--max-steps"), "{e}");
        assert!(l.bytes("x", u64::MAX, 2).is_err());
        assert_eq!(l.threads(0), (2, None));
        assert_eq!(l.threads(1), (1, None));
        let (n, note) = l.threads(100_000);
        assert_eq!(n, 2);
        assert!(note.unwrap().contains("capped at 2"));
    }
}
