//! xorshift64*: reproducible pseudo-random numbers for the crate's tests, without a
//! dependency.

pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n`, from the high half of [`Rng::next`].
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        (self.next() >> 32) % n
    }
}
