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

    /// The secret a worker or leaf process is given: the first line of standard input with
    /// `from_stdin` (`--secret-stdin`), else the [`crate::SECRET_ENV`] variable.
    pub fn from_stdin_or_env(from_stdin: bool) -> Result<Secret, String> {
        use std::io::BufRead;
        let env = crate::SECRET_ENV;
        if from_stdin {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| format!("cannot read the secret from standard input: {e}"))?;
            Secret::from_hex(&line).ok_or_else(|| {
                "the first line of standard input is not a secret (64 hex digits)".into()
            })
        } else {
            let s = std::env::var(env)
                .map_err(|_| format!("no secret: pass --secret-stdin or set {env}"))?;
            Secret::from_hex(&s).ok_or_else(|| format!("{env} is not a secret (64 hex digits)"))
        }
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
