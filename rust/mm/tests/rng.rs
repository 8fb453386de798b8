// SPDX-License-Identifier: GPL-2.0

//! A small deterministic PRNG for the host tests (no external crates).

/// xorshift64*: deterministic from its seed, good enough for test inputs.
pub struct XorShift(u64);

impl XorShift {
    /// A generator seeded with `seed` (0 is replaced by a fixed constant).
    pub fn new(seed: u64) -> Self {
        XorShift(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}
