//! A small deterministic generator (SplitMix64): every input of a run is a
//! function of `(seed, iteration)` alone, so any input can be regenerated.

/// SplitMix64: fast, statistically good enough for mutation choices.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of input `iteration` of the run with `seed`.
    pub fn for_input(seed: u64, iteration: u64) -> Rng {
        let mut r = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
        let s = r.next_u64();
        Rng(s ^ iteration.wrapping_mul(0xbf58_476d_1ce4_e5b9))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// FNV-1a, 64 bits: the short hash that names a saved input.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::for_input(7, 3).next_u64()).collect();
        assert!(a.iter().all(|&x| x == a[0]));
        assert_ne!(
            Rng::for_input(7, 3).next_u64(),
            Rng::for_input(7, 4).next_u64()
        );
        assert_ne!(
            Rng::for_input(7, 3).next_u64(),
            Rng::for_input(8, 3).next_u64()
        );
        let mut r = Rng::for_input(1, 1);
        assert!((0..1000).all(|_| r.below(5) < 5));
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    }
}
