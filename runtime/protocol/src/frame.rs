//! Length-delimited postcard frames, over tokio streams (the agent and workers) and over
//! blocking `std::io` streams (simple clients and tests); and the JSON framing of the control
//! sockets (one JSON text a line, see [`JSON_FIRST_BYTE`] and `docs/PROTOCOL.md`).

use std::io::{Read, Write};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde::{Serialize, de::DeserializeOwned};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{
    FramedRead, FramedWrite, LengthDelimitedCodec, LinesCodec, LinesCodecError,
};

/// The largest frame accepted (64 MiB).
pub const MAX_FRAME: usize = 64 << 20;

#[derive(Debug)]
pub enum FrameError {
    Io(std::io::Error),
    /// The frame did not decode as the expected message.
    Decode(postcard::Error),
    /// The peer closed the connection.
    Closed,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "{e}"),
            FrameError::Decode(e) => write!(f, "malformed message: {e}"),
            FrameError::Closed => f.write_str("connection closed"),
        }
    }
}

impl std::error::Error for FrameError {}

impl From<std::io::Error> for FrameError {
    fn from(e: std::io::Error) -> Self {
        FrameError::Io(e)
    }
}

/// The codec used on every connection.
pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

/// A framed reader over an async stream.
pub fn reader<R: AsyncRead>(r: R) -> FramedRead<R, LengthDelimitedCodec> {
    FramedRead::with_capacity(r, codec(), 64 << 10)
}

/// A framed reader for a peer that has not authenticated yet: it refuses frames larger than
/// [`crate::peer::PREAUTH_MAX_FRAME`] at their header (before any buffer is reserved for
/// them). Once the peer has authenticated, [`authenticated`] lifts the limit to
/// [`MAX_FRAME`].
pub fn preauth_reader<R: AsyncRead>(r: R) -> FramedRead<R, LengthDelimitedCodec> {
    let codec = LengthDelimitedCodec::builder()
        .max_frame_length(crate::peer::PREAUTH_MAX_FRAME)
        .new_codec();
    FramedRead::with_capacity(r, codec, 4 << 10)
}

/// Lifts the frame limit of a [`preauth_reader`] to [`MAX_FRAME`]: the peer has
/// authenticated.
pub fn authenticated<R>(r: &mut FramedRead<R, LengthDelimitedCodec>) {
    r.decoder_mut().set_max_frame_length(MAX_FRAME);
}

/// A framed writer over an async stream. Use `feed` for each message of a batch and one
/// `flush` at the end, so a batch costs one write.
pub fn writer<W: AsyncWrite>(w: W) -> FramedWrite<W, LengthDelimitedCodec> {
    FramedWrite::new(w, codec())
}

/// Encodes a message into a frame body.
pub fn encode<T: Serialize>(msg: &T) -> Bytes {
    Bytes::from(postcard::to_allocvec(msg).expect("protocol messages always serialize"))
}

/// Sends one message and flushes.
pub async fn send<W: AsyncWrite + Unpin, T: Serialize>(
    w: &mut FramedWrite<W, LengthDelimitedCodec>,
    msg: &T,
) -> Result<(), FrameError> {
    w.send(encode(msg)).await.map_err(FrameError::Io)
}

/// Receives one message.
pub async fn recv<R: AsyncRead + Unpin, T: DeserializeOwned>(
    r: &mut FramedRead<R, LengthDelimitedCodec>,
) -> Result<T, FrameError> {
    match r.next().await {
        None => Err(FrameError::Closed),
        Some(Err(e)) => Err(FrameError::Io(e)),
        Some(Ok(frame)) => postcard::from_bytes(&frame).map_err(FrameError::Decode),
    }
}

/// Writes one message as a frame to a blocking stream.
pub fn write_msg<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), FrameError> {
    let body = postcard::to_allocvec(msg).expect("protocol messages always serialize");
    w.write_all(&(body.len() as u32).to_be_bytes())?;
    w.write_all(&body)?;
    w.flush()?;
    Ok(())
}

/// Reads one message from a blocking stream.
pub fn read_msg<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<T, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(FrameError::Io(e)),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {len} bytes is larger than the limit"),
        )));
    }
    // Grow with the bytes that arrive, not with the length announced: 4 bytes must not
    // make the reader allocate 64 MiB.
    let mut body = Vec::with_capacity(len.min(64 << 10));
    let got = r.by_ref().take(len as u64).read_to_end(&mut body)?;
    if got < len {
        return Err(FrameError::Io(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("frame cut short: {got} of {len} bytes"),
        )));
    }
    postcard::from_bytes(&body).map_err(FrameError::Decode)
}

// ---------------------------------------------------------------------------------------------
// The JSON framing of the control sockets: newline-delimited JSON (one JSON text a line, UTF-8,
// no line breaks inside a text). A client chooses it with its first byte: a postcard frame
// starts with its 4-byte big-endian length, whose first byte is at most 3 for every frame up
// to [`MAX_FRAME`] (64 MiB = 2^26 bytes), so a connection whose first byte is `{` (0x7B, the
// start of the JSON hello) speaks JSON.

/// The first byte of a connection that speaks the JSON framing (the `{` of its hello).
pub const JSON_FIRST_BYTE: u8 = b'{';

/// Whether a connection whose first byte is `first` speaks the JSON framing (a postcard
/// frame's length header starts with 0..=3: frames are at most [`MAX_FRAME`] bytes).
pub fn is_json_start(first: u8) -> bool {
    first == JSON_FIRST_BYTE
}

/// A reader of JSON lines over an async stream, refusing lines longer than `max` bytes (use
/// [`crate::peer::PREAUTH_MAX_FRAME`] for the hello, [`MAX_FRAME`] after it).
pub fn json_lines<R: AsyncRead>(r: R, max: usize) -> FramedRead<R, LinesCodec> {
    FramedRead::with_capacity(r, LinesCodec::new_with_max_length(max), 4 << 10)
}

/// Lifts the line limit of a [`json_lines`] reader to [`MAX_FRAME`] (after the hello).
pub fn json_lines_authenticated<R>(r: &mut FramedRead<R, LinesCodec>) {
    *r.decoder_mut() = LinesCodec::new_with_max_length(MAX_FRAME);
}

/// Receives one line (without its line break; a `\r` before it is dropped too).
pub async fn recv_line<R: AsyncRead + Unpin>(
    r: &mut FramedRead<R, LinesCodec>,
) -> Result<String, FrameError> {
    match r.next().await {
        None => Err(FrameError::Closed),
        Some(Ok(line)) => Ok(line),
        Some(Err(LinesCodecError::Io(e))) => Err(FrameError::Io(e)),
        Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
            Err(FrameError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "line longer than the limit",
            )))
        }
    }
}

/// Writes one line (`text` must hold no line break) to an async stream.
pub async fn send_line<W: AsyncWrite + Unpin>(w: &mut W, text: &str) -> Result<(), FrameError> {
    use tokio::io::AsyncWriteExt;
    debug_assert!(!text.contains('\n'));
    let mut buf = Vec::with_capacity(text.len() + 1);
    buf.extend_from_slice(text.as_bytes());
    buf.push(b'\n');
    w.write_all(&buf).await?;
    w.flush().await?;
    Ok(())
}

/// Writes one line to a blocking stream.
pub fn write_line<W: Write>(w: &mut W, text: &str) -> Result<(), FrameError> {
    let mut buf = Vec::with_capacity(text.len() + 1);
    buf.extend_from_slice(text.as_bytes());
    buf.push(b'\n');
    w.write_all(&buf)?;
    w.flush()?;
    Ok(())
}

/// Reads one line from a buffered blocking stream (at most [`MAX_FRAME`] bytes).
pub fn read_line<R: std::io::BufRead>(r: &mut R) -> Result<String, FrameError> {
    use std::io::BufRead;
    let mut buf = Vec::new();
    let n = r
        .by_ref()
        .take(MAX_FRAME as u64 + 1)
        .read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Err(FrameError::Closed);
    }
    if buf.last() != Some(&b'\n') {
        return Err(FrameError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            if n > MAX_FRAME {
                "line longer than the limit"
            } else {
                "line cut short"
            },
        )));
    }
    buf.pop();
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    String::from_utf8(buf).map_err(|e| {
        FrameError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("line is not UTF-8: {e}"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AgentMsg, TaskRun};

    /// A frame that announces 60 MiB and ends after 3 bytes is an error; the reader grows its
    /// buffer with what arrives (the fuzz target `protocol_frame` showed 4 bytes allocating
    /// the announced length).
    #[test]
    fn a_frame_cut_short_is_an_error() {
        let mut bytes = (60u32 << 20).to_be_bytes().to_vec();
        bytes.extend_from_slice(b"abc");
        let r: Result<AgentMsg, FrameError> = read_msg(&mut &bytes[..]);
        match r {
            Err(FrameError::Io(e)) => assert!(e.to_string().contains("cut short: 3 of"), "{e}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn blocking_round_trip() {
        let msg = AgentMsg::Run(vec![TaskRun {
            task: 3,
            module: 1,
            inputs: vec![pnet_stdlib::Value::Long(-5)],
            memory: None,
        }]);
        let mut buf = Vec::new();
        write_msg(&mut buf, &msg).unwrap();
        let back: AgentMsg = read_msg(&mut buf.as_slice()).unwrap();
        assert_eq!(back, msg);
        let mut empty: &[u8] = &[];
        assert!(matches!(
            read_msg::<_, AgentMsg>(&mut empty),
            Err(FrameError::Closed)
        ));
    }

    #[tokio::test]
    async fn a_big_frame_before_authentication_is_refused_at_its_header() {
        let (mut a, b) = tokio::io::duplex(1 << 16);
        let mut r = preauth_reader(b);
        // Only the header of a frame just under MAX_FRAME: refused without waiting for it.
        let len = (MAX_FRAME - 1) as u32;
        tokio::io::AsyncWriteExt::write_all(&mut a, &len.to_be_bytes())
            .await
            .unwrap();
        match r.next().await {
            Some(Err(e)) => assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}"),
            other => panic!("expected an error, got {other:?}"),
        }
        // The same frame after authentication is accepted.
        let (a, b) = tokio::io::duplex(1 << 20);
        let mut w = writer(a);
        let mut r = preauth_reader(b);
        send(&mut w, &AgentMsg::Heartbeat).await.unwrap();
        assert_eq!(
            recv::<_, AgentMsg>(&mut r).await.unwrap(),
            AgentMsg::Heartbeat
        );
        authenticated(&mut r);
        let big = AgentMsg::Refused {
            reason: "x".repeat(crate::peer::PREAUTH_MAX_FRAME * 2),
        };
        let sent = tokio::spawn(async move { send(&mut w, &big).await.map(|()| big) });
        let got = recv::<_, AgentMsg>(&mut r).await.unwrap();
        assert_eq!(got, sent.await.unwrap().unwrap());
    }

    #[tokio::test]
    async fn async_round_trip_is_compatible_with_blocking() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut w = writer(a);
        let mut r = reader(b);
        send(&mut w, &AgentMsg::Heartbeat).await.unwrap();
        send(&mut w, &AgentMsg::Cancel { task: 9 }).await.unwrap();
        assert_eq!(
            recv::<_, AgentMsg>(&mut r).await.unwrap(),
            AgentMsg::Heartbeat
        );
        assert_eq!(
            recv::<_, AgentMsg>(&mut r).await.unwrap(),
            AgentMsg::Cancel { task: 9 }
        );
        let mut buf = Vec::new();
        write_msg(&mut buf, &AgentMsg::Shutdown).unwrap();
        let mut r2 = reader(buf.as_slice());
        assert_eq!(
            recv::<_, AgentMsg>(&mut r2).await.unwrap(),
            AgentMsg::Shutdown
        );
    }

    /// No postcard frame's header starts with the JSON framing's first byte.
    #[test]
    fn json_is_told_apart_by_its_first_byte() {
        assert!(is_json_start(b'{'));
        assert!(!is_json_start((MAX_FRAME as u32).to_be_bytes()[0]));
        let mut buf = Vec::new();
        write_msg(&mut buf, &AgentMsg::Heartbeat).unwrap();
        assert!(!is_json_start(buf[0]));
    }

    #[test]
    fn json_lines_round_trip() {
        let mut buf = Vec::new();
        write_line(&mut buf, r#"{"kind":"status"}"#).unwrap();
        buf.extend_from_slice(b"{\"a\":1}\r\n{\"cut");
        let mut r = std::io::BufReader::new(buf.as_slice());
        assert_eq!(read_line(&mut r).unwrap(), r#"{"kind":"status"}"#);
        assert_eq!(read_line(&mut r).unwrap(), r#"{"a":1}"#);
        match read_line(&mut r) {
            Err(FrameError::Io(e)) => assert!(e.to_string().contains("cut short"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(read_line(&mut r), Err(FrameError::Closed)));
    }

    #[tokio::test]
    async fn async_json_lines_have_a_limit_until_lifted() {
        let (mut a, b) = tokio::io::duplex(1 << 16);
        let mut r = json_lines(b, 16);
        send_line(&mut a, "short").await.unwrap();
        assert_eq!(recv_line(&mut r).await.unwrap(), "short");
        json_lines_authenticated(&mut r);
        let long = "x".repeat(1000);
        send_line(&mut a, &long).await.unwrap();
        assert_eq!(recv_line(&mut r).await.unwrap(), long);
        let (mut a, b) = tokio::io::duplex(1 << 16);
        let mut r = json_lines(b, 16);
        send_line(&mut a, &long).await.unwrap();
        match recv_line(&mut r).await {
            Err(FrameError::Io(e)) => assert!(e.to_string().contains("limit"), "{e}"),
            other => panic!("{other:?}"),
        }
        drop(a);
    }
}
