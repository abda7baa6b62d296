//! DDS's id checksum: boost's `crc_optimal<64, 0x04C11DB7, 0, 0, false, false>` (a 64-bit
//! register with the 32-bit CRC polynomial, no reflection, no initial value, no final xor), as
//! DDS's `crc64` computes it. Found by reproducing the ids of DDS's own test files.
//!
//! An id is the checksum of `path + hash string`. The hash string of a declaration is the same
//! for every instance, so [`Suffix`] precomputes what appending it does to a checksum state: a
//! linear map (the state shifted through as many zero bytes as the suffix is long) plus the
//! suffix's own checksum. Finishing an id then costs eight table look-ups, whatever the length
//! of the definition.

const POLY: u64 = 0x04C1_1DB7;

const TABLE: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u64) << 56;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & (1 << 63) != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// Feeds `data` into the checksum `state` (start with 0).
pub fn feed(mut state: u64, data: &[u8]) -> u64 {
    for &b in data {
        state = (state << 8) ^ TABLE[(((state >> 56) as u8) ^ b) as usize];
    }
    state
}

/// The checksum of `data` (DDS's `crc64`).
pub fn crc64(data: &[u8]) -> u64 {
    feed(0, data)
}

/// What appending a fixed byte string does to a checksum state.
#[derive(Clone)]
pub struct Suffix {
    /// `op[k][b]`: the image of byte `b` at byte position `k` of the state under the shift
    /// through `len` zero bytes.
    op: Box<[[u64; 256]; 8]>,
    /// The checksum of the suffix alone.
    tail: u64,
}

impl std::fmt::Debug for Suffix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Suffix({:#x})", self.tail)
    }
}

impl Suffix {
    pub fn new(suffix: &[u8]) -> Suffix {
        // The images of the 64 unit vectors under "feed suffix.len() zero bytes".
        let mut images = [0u64; 64];
        for (bit, image) in images.iter_mut().enumerate() {
            let mut state = 1u64 << bit;
            for _ in 0..suffix.len() {
                state = (state << 8) ^ TABLE[(state >> 56) as usize];
            }
            *image = state;
        }
        let mut op = Box::new([[0u64; 256]; 8]);
        for (k, row) in op.iter_mut().enumerate() {
            for b in 1..256usize {
                let low = b.trailing_zeros() as usize;
                row[b] = row[b & (b - 1)] ^ images[8 * k + low];
            }
        }
        Suffix {
            op,
            tail: crc64(suffix),
        }
    }

    /// The checksum of (whatever gave `state`) followed by the suffix.
    pub fn finish(&self, state: u64) -> u64 {
        let mut out = self.tail;
        for (k, row) in self.op.iter().enumerate() {
            out ^= row[((state >> (8 * k)) & 0xff) as usize];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_dds_id() {
        // topology_test_7_maps_2.txt: `10674641972292662881 main/task1`.
        assert_eq!(
            crc64(b"main/task1_0|Task|task1|task1.exe||1|1"),
            10674641972292662881
        );
    }

    #[test]
    fn suffix_equals_feeding_the_bytes() {
        for suffix in [
            &b""[..],
            b"x",
            b"|Task|task1|task1.exe||1|1",
            &[0xffu8; 300][..],
        ] {
            let s = Suffix::new(suffix);
            for prefix in [&b""[..], b"main/", b"main/group1/collection1_17/"] {
                let state = feed(0, prefix);
                assert_eq!(
                    s.finish(state),
                    feed(state, suffix),
                    "{prefix:?} {suffix:?}"
                );
            }
        }
    }

    #[test]
    fn check_value() {
        // The register starts at 0 and nothing is reflected: one byte 0x01 gives the polynomial
        // shifted by 56 - 0 bits of the register, i.e. TABLE[1].
        assert_eq!(crc64(&[1]), TABLE[1]);
        assert_eq!(crc64(b""), 0);
        assert_ne!(crc64(b"a"), crc64(b"b"));
    }
}
