//! Who is at the other end: the peer-credential check of every Unix-domain socket we accept
//! on, and the limits that apply to a peer before it has authenticated.
//!
//! A Unix socket's file mode keeps other users out only as long as the file and its
//! directory stay private; the kernel's word on the peer (`SO_PEERCRED`) does not depend on
//! that. Every listener on a Unix socket (`gspc-run --control`, the `gspc` runtime's
//! control socket) calls [`check_peer`] on each accepted connection, before reading anything
//! from it, and closes it with the refusal's message logged when it fails.

use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

/// The largest frame a peer may send before it has authenticated (a worker's Hello: its
/// name, host and capabilities). Authenticated peers may send up to [`crate::MAX_FRAME`].
pub const PREAUTH_MAX_FRAME: usize = 64 << 10;

/// How many connections may wait for their authentication at the same time; when one more
/// arrives, the oldest waiting one is closed (so a flood of silent connections cannot keep
/// a real peer, which authenticates at once, out).
pub const PREAUTH_CONNECTIONS: usize = 64;

/// How long a connection may take to authenticate before it is closed.
pub const PREAUTH_TIMEOUT: Duration = Duration::from_secs(10);

/// This process's effective user id.
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// A user's name from `/etc/passwd` with the uid (`alice (uid 1000)`), else `uid N`.
pub fn user_name(uid: u32) -> String {
    let name = std::fs::read_to_string("/etc/passwd").ok().and_then(|t| {
        t.lines().find_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let _ = f.next()?;
            (f.next()?.parse::<u32>().ok()? == uid).then(|| name.to_string())
        })
    });
    match name {
        Some(n) => format!("{n} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

/// The effective user id of the process at the other end of a connected Unix-domain socket,
/// as the kernel recorded it when the connection was made.
pub fn peer_uid(sock: &impl AsFd) -> std::io::Result<u32> {
    let fd = sock.as_fd().as_raw_fd();
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let mut cred = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: `fd` is a valid descriptor borrowed for the call; `cred` and `len` are
        // valid for writes of the sizes given.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&raw mut cred).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if len as usize != std::mem::size_of::<libc::ucred>() {
            return Err(std::io::Error::other("SO_PEERCRED returned a short answer"));
        }
        Ok(cred.uid)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let mut uid: libc::uid_t = 0;
        let mut gid: libc::gid_t = 0;
        // SAFETY: `fd` is a valid descriptor; `uid` and `gid` are valid for writes.
        if unsafe { libc::getpeereid(fd, &mut uid, &mut gid) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(uid)
    }
}

/// Why a peer was refused.
#[derive(Debug)]
pub struct PeerRefused {
    /// The user the socket serves.
    pub allowed: u32,
    /// The peer's user, or why it could not be told.
    pub peer: Result<u32, String>,
}

impl std::fmt::Display for PeerRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "this socket serves {} only; ", user_name(self.allowed))?;
        match &self.peer {
            Ok(uid) => write!(f, "the peer is {}", user_name(*uid)),
            Err(e) => write!(f, "the peer's user cannot be told: {e}"),
        }
    }
}

impl std::error::Error for PeerRefused {}

/// Checks that the peer of an accepted Unix-domain connection runs as the user `allowed`
/// (normally [`current_uid`]); returns the peer's uid. A peer whose credentials cannot be
/// read is refused too.
pub fn check_peer(sock: &impl AsFd, allowed: u32) -> Result<u32, PeerRefused> {
    check_uid(peer_uid(sock).map_err(|e| e.to_string()), allowed)
}

/// The decision of [`check_peer`], given the peer's uid (or why it is unknown).
pub fn check_uid(peer: Result<u32, String>, allowed: u32) -> Result<u32, PeerRefused> {
    match peer {
        Ok(uid) if uid == allowed => Ok(uid),
        peer => Err(PeerRefused { allowed, peer }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_peer_of_another_user_is_refused() {
        let (a, b) = UnixStream::pair().unwrap();
        let me = current_uid();
        assert_eq!(peer_uid(&a).unwrap(), me);
        assert_eq!(check_peer(&b, me).unwrap(), me);
        // The same connection, checked for another user: refused, naming both.
        let other = me.wrapping_add(4242);
        let e = check_peer(&a, other).unwrap_err();
        assert_eq!(e.allowed, other);
        assert_eq!(e.peer, Ok(me));
        let msg = e.to_string();
        assert!(
            msg == format!(
                "this socket serves {} only; the peer is {}",
                user_name(other),
                user_name(me)
            ),
            "{msg}"
        );
    }

    #[test]
    fn unknown_credentials_are_refused() {
        let e = check_uid(Err("no credentials".into()), 7).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "this socket serves {} only; the peer's user cannot be told: no credentials",
                user_name(7)
            )
        );
        assert_eq!(check_uid(Ok(7), 7).unwrap(), 7);
        // Not a socket at all: no credentials.
        let f = std::fs::File::open("/proc/self/status").unwrap();
        assert!(peer_uid(&f).is_err());
        assert!(check_peer(&f, current_uid()).is_err());
    }
}
