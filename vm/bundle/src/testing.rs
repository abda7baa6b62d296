//! Helpers for the tests of damaged files (bundles, result files), shared by the tests of
//! every reader (pnet-bundle, pnet-engine, pnet-tokens); behind the feature `testing`, which
//! they enable as a dev-dependency feature. The damaged nets themselves are in
//! `vm/bundle/tests/damage/` (they are compiled by pnet-sema, which depends on this crate).

use crate::result::{OutputPort, RESULT, RunOutputs};

/// The length of a file's header: magic (8 bytes), version (4), checksum (4), length (8).
pub const HEADER: usize = 8 + 4 + 4 + 8;

/// A small deterministic generator (xorshift), so that a failure reproduces.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Changes one byte of `bytes` (not empty), chosen by `rng`: a bit flipped, one added, one
/// taken away, or a random byte.
pub fn damage_byte(bytes: &mut [u8], rng: &mut Rng) {
    let at = rng.below(bytes.len());
    bytes[at] = match rng.below(4) {
        0 => bytes[at] ^ (1 << rng.below(8)),
        1 => bytes[at].wrapping_add(1),
        2 => bytes[at].wrapping_sub(1),
        _ => rng.next_u64() as u8,
    };
}

/// CRC-32 (IEEE), as the container uses; written out so that the tests do not take the
/// format's word for it.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The payload of an encoded file (after the header).
pub fn payload(file: &[u8]) -> &[u8] {
    &file[HEADER..]
}

/// A container around an arbitrary payload, with the right length and checksum.
pub fn frame(magic: &[u8; 8], version: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&crc32(payload).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// `file` (an encoded bundle or result file) with `payload` instead of its own, under the
/// same magic and version, with the right length and checksum.
pub fn reframe(file: &[u8], payload: &[u8]) -> Vec<u8> {
    let magic: &[u8; 8] = file[..8].try_into().expect("a header");
    let version = u32::from_le_bytes(file[8..12].try_into().expect("a header"));
    frame(magic, version, payload)
}

/// `file` with one payload byte changed ([`damage_byte`]) and the checksum fixed, so that
/// only the decoding and the validation can refuse it.
pub fn damaged(file: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut p = payload(file).to_vec();
    damage_byte(&mut p, rng);
    reframe(file, &p)
}

/// A result file whose one token is `List (List (... Control))`, `depth` lists deep, built
/// byte by byte (a value that deep would overflow the stack when dropped).
pub fn deep_result(depth: usize) -> Vec<u8> {
    let shallow = RunOutputs {
        net: "n".into(),
        ports: vec![OutputPort {
            name: "p".into(),
            ty: pnet_stdlib::Type::Any,
            tokens: vec![pnet_stdlib::Value::Control],
        }],
    };
    let mut p = payload(&shallow.encode().expect("a result file")).to_vec();
    // The token `Control` (variant 0) is the last byte; `List` is variant 14, then a length.
    assert_eq!(p.pop(), Some(0), "the token Control ends the payload");
    for _ in 0..depth {
        p.extend_from_slice(&[14, 1]);
    }
    p.push(0);
    frame(RESULT.magic, RESULT.version, &p)
}
