//! The binary files: `MAGIC` (8 bytes), format version (u32 LE), CRC-32 of the payload (u32
//! LE), payload length (u64 LE), then the postcard-encoded payload. Bundles ([`encode`],
//! [`decode`]) carry a [`Bundle`]; result files ([`crate::result`]) the output tokens of a
//! run. Both are refused on a wrong magic, version or checksum, and on bytes after the
//! payload (appended to the file, or inside the payload after the encoded value); a payload
//! nests at most [`crate::nesting::MAX_NESTING`] levels deep. A decoded bundle is also
//! validated ([`mod@crate::validate`]): every reader gets a well-formed one.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Bundle;

pub const MAGIC: &[u8; 8] = b"PNETBNDL";
/// Bumped on every incompatible change of the IR or the bytecode.
pub const FORMAT_VERSION: u32 = 2;

/// One kind of file: its magic, version and name for messages.
#[derive(Clone, Copy, Debug)]
pub struct Container {
    pub magic: &'static [u8; 8],
    pub version: u32,
    /// `bundle`, `result file`.
    pub what: &'static str,
    /// What to do about a wrong version (`recompile the net with this pnetc`).
    pub fix: &'static str,
}

pub const BUNDLE: Container = Container {
    magic: MAGIC,
    version: FORMAT_VERSION,
    what: "bundle",
    fix: "recompile the net with this pnetc",
};

#[derive(Debug)]
pub enum BundleError {
    NotABundle {
        what: &'static str,
    },
    WrongVersion {
        what: &'static str,
        found: u32,
        expected: u32,
        fix: &'static str,
    },
    Truncated {
        what: &'static str,
    },
    ChecksumMismatch {
        what: &'static str,
    },
    Decode {
        what: &'static str,
        message: String,
    },
    /// `count` bytes after the payload (or after the value inside the payload).
    TrailingBytes {
        what: &'static str,
        count: u64,
    },
    /// The value decodes but is not well-formed (see [`mod@crate::validate`]).
    Invalid {
        what: &'static str,
        message: String,
    },
    Encode {
        what: &'static str,
        message: String,
    },
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::NotABundle { what } => {
                let article = if what.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "an"
                } else {
                    "a"
                };
                write!(f, "not {article} pnet {what} (bad magic number)")
            }
            BundleError::WrongVersion {
                what,
                found,
                expected,
                fix,
            } => write!(
                f,
                "{what} format version {found} is not supported (this build reads version {expected}); {fix}"
            ),
            BundleError::Truncated { what } => write!(f, "{what} is truncated"),
            BundleError::ChecksumMismatch { what } => {
                write!(f, "{what} checksum mismatch: the file is corrupt")
            }
            BundleError::Decode { what, message } => {
                write!(f, "{what} cannot be decoded: {message}")
            }
            BundleError::TrailingBytes { what, count } => write!(
                f,
                "{what} has {count} trailing byte{} after its payload: the file is corrupt",
                if *count == 1 { "" } else { "s" }
            ),
            BundleError::Invalid { what, message } => write!(f, "bad {what}: {message}"),
            BundleError::Encode { what, message } => {
                write!(f, "{what} cannot be encoded: {message}")
            }
        }
    }
}

impl std::error::Error for BundleError {}

const HEADER: usize = 8 + 4 + 4 + 8;

impl Container {
    /// Frames `value` as a file of this kind.
    pub fn encode<T: Serialize>(&self, value: &T) -> Result<Vec<u8>, BundleError> {
        let payload = postcard::to_stdvec(value).map_err(|e| BundleError::Encode {
            what: self.what,
            message: e.to_string(),
        })?;
        let mut out = Vec::with_capacity(HEADER + payload.len());
        out.extend_from_slice(self.magic);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&payload);
        Ok(out)
    }

    /// Decodes a file of this kind, refusing a wrong magic, version or checksum, trailing
    /// bytes and nesting deeper than [`crate::nesting::MAX_NESTING`].
    pub fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, BundleError> {
        let what = self.what;
        if bytes.len() < 8 || &bytes[..8] != self.magic {
            return Err(BundleError::NotABundle { what });
        }
        if bytes.len() < HEADER {
            return Err(BundleError::Truncated { what });
        }
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let version = word(8);
        if version != self.version {
            return Err(BundleError::WrongVersion {
                what,
                found: version,
                expected: self.version,
                fix: self.fix,
            });
        }
        let crc = word(12);
        let len = u64::from(word(16)) | (u64::from(word(20)) << 32);
        let payload = &bytes[HEADER..];
        if (payload.len() as u64) < len {
            return Err(BundleError::Truncated { what });
        }
        if payload.len() as u64 > len {
            return Err(BundleError::TrailingBytes {
                what,
                count: payload.len() as u64 - len,
            });
        }
        if crc32fast::hash(payload) != crc {
            return Err(BundleError::ChecksumMismatch { what });
        }
        let (value, rest) = crate::nesting::take_from_bytes(payload)
            .map_err(|message| BundleError::Decode { what, message })?;
        if rest > 0 {
            return Err(BundleError::TrailingBytes {
                what,
                count: rest as u64,
            });
        }
        Ok(value)
    }
}

/// Encodes a bundle.
pub fn encode(bundle: &Bundle) -> Result<Vec<u8>, BundleError> {
    BUNDLE.encode(bundle)
}

/// Decodes a bundle, refusing a wrong magic, version or checksum, trailing bytes and a
/// bundle that is not well-formed ([`crate::validate::validate`]): the one entry point of
/// every reader (`gspc-run`, `gspc submit`, `pnetv`, `pnet2dot`, `pnetput`), so a decoded
/// bundle never makes a reader index out of bounds.
pub fn decode(bytes: &[u8]) -> Result<Bundle, BundleError> {
    let bundle: Bundle = BUNDLE.decode(bytes)?;
    crate::validate::validate(&bundle).map_err(|message| BundleError::Invalid {
        what: BUNDLE.what,
        message,
    })?;
    Ok(bundle)
}
