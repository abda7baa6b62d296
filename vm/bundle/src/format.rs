//! The binary bundle: `MAGIC`, format version (u32 LE), CRC-32 of the payload (u32 LE),
//! payload length (u64 LE), then the postcard-encoded [`Bundle`].

use std::fmt;

use crate::Bundle;

pub const MAGIC: &[u8; 8] = b"PNETBNDL";
/// Bumped on every incompatible change of the IR or the bytecode.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug)]
pub enum BundleError {
    NotABundle,
    WrongVersion { found: u32, expected: u32 },
    Truncated,
    ChecksumMismatch,
    Decode(String),
    Encode(String),
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::NotABundle => write!(f, "not a pnet bundle (bad magic number)"),
            BundleError::WrongVersion { found, expected } => write!(
                f,
                "bundle format version {found} is not supported (this build reads version {expected}); recompile the net with this pnetc"
            ),
            BundleError::Truncated => write!(f, "bundle is truncated"),
            BundleError::ChecksumMismatch => {
                write!(f, "bundle checksum mismatch: the file is corrupt")
            }
            BundleError::Decode(e) => write!(f, "bundle cannot be decoded: {e}"),
            BundleError::Encode(e) => write!(f, "bundle cannot be encoded: {e}"),
        }
    }
}

impl std::error::Error for BundleError {}

const HEADER: usize = 8 + 4 + 4 + 8;

/// Encodes a bundle.
pub fn encode(bundle: &Bundle) -> Result<Vec<u8>, BundleError> {
    let payload = postcard::to_stdvec(bundle).map_err(|e| BundleError::Encode(e.to_string()))?;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Decodes a bundle, refusing a wrong magic, version or checksum.
pub fn decode(bytes: &[u8]) -> Result<Bundle, BundleError> {
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err(BundleError::NotABundle);
    }
    if bytes.len() < HEADER {
        return Err(BundleError::Truncated);
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version != FORMAT_VERSION {
        return Err(BundleError::WrongVersion {
            found: version,
            expected: FORMAT_VERSION,
        });
    }
    let crc = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    let len = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
    let payload = &bytes[HEADER..];
    if (payload.len() as u64) < len {
        return Err(BundleError::Truncated);
    }
    let payload = &payload[..len as usize];
    if crc32fast::hash(payload) != crc {
        return Err(BundleError::ChecksumMismatch);
    }
    postcard::from_bytes(payload).map_err(|e| BundleError::Decode(e.to_string()))
}
