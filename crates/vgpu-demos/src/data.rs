//! Reproducible demo inputs (SplitMix64).

/// SplitMix64: a small, well-mixed 64-bit generator, enough for test inputs.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `[lo, hi)`, 24 random bits.
    pub(crate) fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }
    pub(crate) fn vec_f32(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.f32_in(lo, hi)).collect()
    }
}

/// Largest absolute difference and number of values whose bits differ.
pub(crate) fn compare_f32(got: &[f32], want: &[f32]) -> (f64, usize) {
    got.iter()
        .zip(want)
        .fold((0.0f64, 0usize), |(e, d), (&g, &w)| {
            let err = if g.to_bits() == w.to_bits() {
                0.0
            } else if g.is_finite() && w.is_finite() {
                (g as f64 - w as f64).abs()
            } else {
                f64::INFINITY
            };
            (e.max(err), d + usize::from(g.to_bits() != w.to_bits()))
        })
}
