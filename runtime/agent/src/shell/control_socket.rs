//! The control socket (a Unix socket): `run_job`'s speaks the job protocol of
//! [`crate::control::Request`]; a persistent runtime's, in its state directory, speaks
//! [`crate::control::RtRequest`] and checks the runtime's secret. Every client's user is
//! checked first. Requests go to the event loop as [`ShellEvent`]s.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::SinkExt;
use pnet_protocol::Secret;
use pnet_protocol::frame;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

use super::ShellEvent;
use crate::AgentError;
use crate::control::{Request, Response, RtEnvelope, RtResponse};

/// How a runtime's control socket checks its clients (besides their user, checked on every
/// control socket).
pub(super) struct Auth {
    pub(super) secret: Secret,
}

/// The control socket's listener; removes the socket file when dropped.
pub(super) struct ControlServer {
    task: JoinHandle<()>,
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Listens on the control socket `path`; its clients must run as the user `owner` (this
/// process's user, except in tests).
pub(super) fn bind_control(
    path: &Path,
    ev: UnboundedSender<ShellEvent>,
    auth: Option<Arc<Auth>>,
    owner: u32,
) -> Result<ControlServer, AgentError> {
    let dir: PathBuf = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let meta = std::fs::metadata(&dir).map_err(|e| {
        AgentError::Setup(format!(
            "control socket {}: cannot use its directory {}: {e}",
            path.display(),
            dir.display()
        ))
    })?;
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(AgentError::Setup(format!(
            "control socket {}: its directory {} is writable by other users (mode {:o}); \
             put the socket in a private directory (for example mkdir -m 700)",
            path.display(),
            dir.display(),
            mode & 0o7777
        )));
    }
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.file_type().is_socket() {
            return Err(AgentError::Setup(format!(
                "control socket {}: the file exists and is not a socket",
                path.display()
            )));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(AgentError::Setup(format!(
                "control socket {}: another job is listening there",
                path.display()
            )));
        }
        let _ = std::fs::remove_file(path);
    }
    let listener = UnixListener::bind(path).map_err(|e| {
        AgentError::Setup(format!(
            "control socket {}: cannot bind: {e}",
            path.display()
        ))
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
        AgentError::Setup(format!(
            "control socket {}: cannot set its mode: {e}",
            path.display()
        ))
    })?;
    let next = Arc::new(AtomicU64::new(0));
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((s, _)) => {
                    let client = next.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(control_client(s, client, ev.clone(), auth.clone(), owner));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    });
    Ok(ControlServer { task })
}

/// One control client. Its user must be `owner` (checked before anything is read from it;
/// refused with the reason logged and sent); a runtime's clients must also carry its secret.
async fn control_client(
    s: UnixStream,
    client: u64,
    ev: UnboundedSender<ShellEvent>,
    auth: Option<Arc<Auth>>,
    owner: u32,
) {
    if let Err(refused) = pnet_protocol::check_peer(&s, owner) {
        let reason = refused.to_string();
        let _ = ev.send(ShellEvent::ClientRefused {
            reason: reason.clone(),
        });
        let (mut rd, wr) = s.into_split();
        let mut w = frame::writer(wr);
        let send = async {
            match &auth {
                Some(_) => frame::send(&mut w, &RtResponse::Refused(reason)).await,
                None => frame::send(&mut w, &Response::Error(reason)).await,
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), send).await;
        // Close once the client has (or after a second), so that the close does not cut
        // its request short and it reads the refusal; what it sent is discarded unread.
        let mut unread =
            tokio::io::AsyncReadExt::take(&mut rd, pnet_protocol::PREAUTH_MAX_FRAME as u64);
        let mut sink = tokio::io::sink();
        let drain = tokio::io::copy(&mut unread, &mut sink);
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
        return;
    }
    let (mut rd, wr) = s.into_split();
    let (tx, mut rx) = unbounded_channel::<Bytes>();
    if ev.send(ShellEvent::ClientOpened { client, tx }).is_err() {
        return;
    }
    // The first byte tells the framing: `{` starts a JSON hello, anything else a postcard
    // frame's length (read again by the frame reader below).
    let mut first = [0u8; 1];
    if tokio::io::AsyncReadExt::read_exact(&mut rd, &mut first)
        .await
        .is_err()
    {
        let _ = ev.send(ShellEvent::ClientClosed { client });
        return;
    }
    let rd = tokio::io::AsyncReadExt::chain(std::io::Cursor::new(first), rd);
    if frame::is_json_start(first[0]) {
        json_client(rd, wr, client, &ev, auth.as_deref(), &mut rx).await;
        let _ = ev.send(ShellEvent::ClientClosed { client });
        return;
    }
    let mut r = frame::reader(rd);
    let mut w = frame::writer(wr);
    loop {
        let event = match &auth {
            None => match frame::recv::<_, Request>(&mut r).await {
                Ok(request) => ShellEvent::Control { client, request },
                Err(frame::FrameError::Decode(e)) => {
                    let _ =
                        frame::send(&mut w, &Response::Error(format!("malformed request: {e}")))
                            .await;
                    break;
                }
                Err(_) => break,
            },
            Some(a) => match frame::recv::<_, RtEnvelope>(&mut r).await {
                Ok(env) => {
                    if !env.secret.matches(&a.secret) {
                        let _ = frame::send(
                            &mut w,
                            &RtResponse::Refused(
                                "wrong secret: the request does not carry this runtime's secret \
                                 (clients read it from the state directory's `secret` file)"
                                    .into(),
                            ),
                        )
                        .await;
                        break;
                    }
                    ShellEvent::Runtime {
                        client,
                        request: env.request,
                    }
                }
                Err(frame::FrameError::Decode(e)) => {
                    let _ = frame::send(
                        &mut w,
                        &RtResponse::Error(format!(
                            "malformed request ({e}): is the client of the same release?"
                        )),
                    )
                    .await;
                    break;
                }
                Err(_) => break,
            },
        };
        if ev.send(event).is_err() {
            break;
        }
        match rx.recv().await {
            Some(resp) => {
                if w.send(resp).await.is_err() {
                    break;
                }
            }
            None => break,
        }
    }
    let _ = ev.send(ShellEvent::ClientClosed { client });
}

/// How long a JSON client may take to send its hello line.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// A client of the JSON framing (`docs/PROTOCOL.md`): the hello line, then one request a line,
/// each answered with one line. A request that is not understood is answered with an error
/// and the connection stays open; a wrong secret is refused and closes it.
async fn json_client<R, W>(
    rd: R,
    mut wr: W,
    client: u64,
    ev: &UnboundedSender<ShellEvent>,
    auth: Option<&Auth>,
    rx: &mut UnboundedReceiver<Bytes>,
) where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    use crate::control::json;
    let mut r = frame::json_lines(rd, pnet_protocol::PREAUTH_MAX_FRAME);
    let send = |j: serde_json::Value| j.to_string();
    // A client that does not finish its hello in time is dropped (every input has a bound).
    let Ok(Ok(hello)) = tokio::time::timeout(HELLO_TIMEOUT, frame::recv_line(&mut r)).await else {
        return;
    };
    if let Err(e) = json::check_hello(&hello) {
        let _ = frame::send_line(&mut wr, &send(json::error(e))).await;
        return;
    }
    if frame::send_line(&mut wr, &send(json::hello_answer(auth.is_some())))
        .await
        .is_err()
    {
        return;
    }
    frame::json_lines_authenticated(&mut r);
    loop {
        let line = match frame::recv_line(&mut r).await {
            Ok(l) => l,
            Err(frame::FrameError::Closed) => break,
            Err(e) => {
                let _ = frame::send_line(&mut wr, &send(json::error(e.to_string()))).await;
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Result<serde_json::Value, String> =
            serde_json::from_str(&line).map_err(|e| format!("malformed request: not JSON: {e}"));
        let event = match (parsed, auth) {
            (Err(e), _) => Err(e),
            (Ok(j), None) => {
                json::job_request(&j).map(|request| ShellEvent::Control { client, request })
            }
            (Ok(j), Some(a)) => match json::runtime_request(&j) {
                Ok((secret, request)) => {
                    if !Secret::from_hex(&secret).is_some_and(|s| s.matches(&a.secret)) {
                        let refused = json::refused(
                            "wrong secret: the request does not carry this runtime's secret \
                             (clients read it from the state directory's `secret` file)",
                        );
                        let _ = frame::send_line(&mut wr, &send(refused)).await;
                        break;
                    }
                    Ok(ShellEvent::Runtime { client, request })
                }
                Err(e) => Err(e),
            },
        };
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                if frame::send_line(&mut wr, &send(json::error(e)))
                    .await
                    .is_err()
                {
                    break;
                }
                continue;
            }
        };
        if ev.send(event).is_err() {
            break;
        }
        let Some(bytes) = rx.recv().await else {
            break;
        };
        let answer = if auth.is_some() {
            postcard::from_bytes::<RtResponse>(&bytes).map(|r| json::runtime_response(&r))
        } else {
            postcard::from_bytes::<Response>(&bytes).map(|r| json::response(&r))
        }
        .unwrap_or_else(|e| json::error(format!("internal: cannot read the answer: {e}")));
        if frame::send_line(&mut wr, &send(answer)).await.is_err() {
            break;
        }
    }
}
