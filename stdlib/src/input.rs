//! Reading input files with a size limit, so that `/dev/zero`, a fifo that never ends or a
//! runaway file cannot exhaust memory: a reader stops one byte past its limit and says so.

use std::io::{self, Read};
use std::path::Path;

/// The limit for text sources (nets, topologies, workload files, PNML): 256 MiB, far above
/// any real net (GPI-Space's largest corpus net is 200 KB).
pub const MAX_SOURCE_BYTES: u64 = 256 << 20;

/// The limit for binary inputs (bundles, token and result files): 4 GiB.
pub const MAX_BINARY_BYTES: u64 = 4 << 30;

/// Reads all of `r`, at most `limit` bytes: more is an error of kind
/// [`io::ErrorKind::FileTooLarge`] naming the limit.
pub fn read_limited(r: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    r.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(buf)
}

/// [`read_limited`] of a file.
pub fn read_file(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_limited(std::fs::File::open(path)?, limit)
}

/// [`read_limited`] of a file that must be UTF-8 text (else an error of kind
/// [`io::ErrorKind::InvalidData`]).
pub fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    text(read_file(path, limit)?)
}

/// [`read_limited`] of a reader that must give UTF-8 text.
pub fn read_text_from(r: impl Read, limit: u64) -> io::Result<String> {
    text(read_limited(r, limit)?)
}

fn text(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (byte {} is not valid)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "larger than {} MiB, the limit for this kind of input",
            limit >> 20
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_input_stops_at_the_limit() {
        let err = read_limited(io::repeat(0), 1 << 20).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("larger than 1 MiB"), "{err}");
        let err = read_text(Path::new("/dev/zero"), 4096).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
    }

    #[test]
    fn inputs_within_the_limit_are_read_whole() {
        assert_eq!(read_limited(&b"abc"[..], 3).unwrap(), b"abc");
        assert_eq!(read_text_from(&b"net"[..], 10).unwrap(), "net");
        let err = read_text_from(&b"a\xffb"[..], 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("byte 1"), "{err}");
    }
}
