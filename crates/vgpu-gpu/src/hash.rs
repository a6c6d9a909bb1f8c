//! Deterministic hashing of byte strings: the kernel keys and the adapter's
//! identity are built from it.

use std::hash::{Hash, Hasher};

/// A 64-bit hash of byte strings, each prefixed by its length (so that the parts'
/// boundaries count). Deterministic across runs (SipHash with fixed keys).
pub(crate) fn hash_parts(parts: &[&[u8]]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in parts {
        p.len().hash(&mut h);
        h.write(p);
    }
    h.finish()
}
