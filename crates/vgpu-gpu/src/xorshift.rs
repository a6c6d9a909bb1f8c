//! The generator of the device probes' inputs (fma, f32 atomics, f32
//! subnormals): xorshift64 (13, 7, 17), each draw bits 16 to 47 of the state.

/// A draw function over the xorshift64 sequence from `seed` (nonzero).
pub(crate) fn xorshift32(seed: u64) -> impl FnMut() -> u32 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 16) as u32
    }
}
