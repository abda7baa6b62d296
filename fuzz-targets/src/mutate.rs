//! A small deterministic mutator for the stable fuzz test: bit flips, byte insertions and
//! deletions, interesting bytes, chunk duplication and splices with another seed, driven by
//! a fixed-seed xorshift generator (so a failure reproduces from the test alone).

/// A xorshift64* generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// Bytes that often matter to the parsers (delimiters, quotes, signs, digits, suffixes).
const INTERESTING: &[u8] = b"<>/\"'=(){}[],;:.-+*!&|#$\\ \n\t0179xXeLUAfy\x00\xff\x80";

/// Values that often matter to binary readers (lengths, tags, varint edges).
const INTERESTING_BYTES: &[u8] = &[0, 1, 2, 0x7f, 0x80, 0xff, 0xfe, 0x40, 0x10];

/// Applies one to four random mutations to `data`; `other` is a seed to splice from.
pub fn mutate(rng: &mut Rng, data: &[u8], other: &[u8], max_len: usize) -> Vec<u8> {
    let mut out = data.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        match rng.below(9) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = INTERESTING_BYTES[rng.below(INTERESTING_BYTES.len())];
            }
            2 => {
                let i = rng.below(out.len() + 1);
                out.insert(i, INTERESTING[rng.below(INTERESTING.len())]);
            }
            3 => {
                let i = rng.below(out.len() + 1);
                out.insert(i, rng.next_u64() as u8);
            }
            4 if !out.is_empty() => {
                let start = rng.below(out.len());
                let len = 1 + rng.below((out.len() - start).min(16));
                out.drain(start..start + len);
            }
            5 if !out.is_empty() => {
                // Duplicate a chunk (nesting, repetition).
                let start = rng.below(out.len());
                let len = 1 + rng.below((out.len() - start).min(64));
                let chunk = out[start..start + len].to_vec();
                let at = rng.below(out.len() + 1);
                out.splice(at..at, chunk);
            }
            6 if !other.is_empty() => {
                // Splice: a prefix of ours, a suffix of the other seed.
                let cut = rng.below(out.len() + 1);
                let from = rng.below(other.len());
                out.truncate(cut);
                out.extend_from_slice(&other[from..]);
            }
            7 if !other.is_empty() => {
                // Insert a chunk of the other seed.
                let start = rng.below(other.len());
                let len = 1 + rng.below((other.len() - start).min(64));
                let at = rng.below(out.len() + 1);
                out.splice(at..at, other[start..start + len].iter().copied());
            }
            _ if !out.is_empty() => {
                // Truncate.
                let cut = rng.below(out.len());
                out.truncate(cut);
            }
            _ => out.push(rng.next_u64() as u8),
        }
    }
    out.truncate(max_len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_deterministic_and_change_the_input() {
        let seed = b"<defun name=\"x\"></defun>";
        let run = || {
            let mut rng = Rng::new(42);
            (0..100)
                .map(|_| mutate(&mut rng, seed, b"other", 1 << 16))
                .collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run());
        assert!(a.iter().filter(|m| m.as_slice() != seed).count() > 90);
        assert!(a.iter().all(|m| m.len() <= seed.len() + 4 * 64 + 5));
    }
}
