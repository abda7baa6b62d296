//! The per-run secret: 32 random bytes, handed to workers as 64 hex digits, compared in
//! constant time.

use serde::{Deserialize, Serialize};

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret([u8; 32]);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A fresh secret from the operating system's random source.
    pub fn random() -> std::io::Result<Secret> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Secret(b))
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses 64 hex digits (surrounding white space ignored).
    pub fn from_hex(s: &str) -> Option<Secret> {
        let s = s.trim();
        if s.len() != 64 || !s.is_ascii() {
            return None;
        }
        let mut b = [0u8; 32];
        for (i, byte) in b.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Secret(b))
    }

    /// Constant-time comparison.
    pub fn matches(&self, other: &Secret) -> bool {
        self.0
            .iter()
            .zip(other.0.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let s = Secret::random().unwrap();
        let t = Secret::from_hex(&s.to_hex()).unwrap();
        assert!(s.matches(&t));
        assert!(!s.matches(&Secret::random().unwrap()));
        assert!(Secret::from_hex("zz").is_none());
        assert!(Secret::from_hex(&"g0".repeat(32)).is_none());
    }
}
