//! A small seeded PRNG (SplitMix64): the engine's only source of choice, so that a seed
//! repeats a run exactly.

/// The seed used when none is given.
pub const DEFAULT_SEED: u64 = 0x5EED_0F9E_751A_CE00;

#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`; gives 0 for `n == 0`), by multiply-high.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_and_stays_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<usize> = (0..8).map(|_| a.below(10)).collect();
        let ys: Vec<usize> = (0..8).map(|_| b.below(10)).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|&x| x < 10));
        expect_test::expect!["[3, 0, 9, 5, 4, 2, 4, 3]"].assert_eq(&format!("{xs:?}"));
    }
}
