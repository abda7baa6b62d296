//! Messages between DDS task processes (through `gspc-property` and the task wrapper) and the
//! DDS runner's property server (`pnet-dds-run`).
//!
//! Every connection opens with a [`PropertyRequest::Hello`] (its `protocol` field first, so
//! that a peer of another version can be refused clearly, see [`property_hello_protocol`]);
//! the server answers [`PropertyReply::Welcome`] or [`PropertyReply::Refused`] (and closes).
//! Then the client sends requests and gets one reply each:
//!
//! * the task wrapper (`gspc-property exec`, role [`Role::Wrapper`]) asks for its
//!   [`TaskSetup`] (environment, command, assets), says when the task started and how it
//!   ended ([`PropertyRequest::Exited`], acknowledged with [`PropertyReply::Ok`] before the
//!   wrapper exits, so the runner always knows the status before it sees the process end);
//! * a property client (`gspc-property set|get|wait`, role [`Role::Client`]) sets, reads and
//!   waits for properties.
//!
//! The frames are those of [`crate::frame`] (a 4-byte big-endian length, then postcard).

use serde::{Deserialize, Serialize};

use crate::Secret;

/// The version of this protocol; a peer with another version is refused.
pub const PROPERTY_PROTOCOL_VERSION: u32 = 1;

/// The longest property value, in characters (DDS's limit).
pub const MAX_VALUE_CHARS: usize = 256;

/// The runner's address (`host:port`), set for the wrapper and every task.
pub const ADDR_ENV: &str = "GSPC_PROPERTY_ADDR";
/// The task's number in the session (an index into the runner's task list).
pub const TASK_ENV: &str = "GSPC_PROPERTY_TASK";
/// A file (mode 0600) holding the session's secret as 64 hex digits, set for every task.
pub const SECRET_FILE_ENV: &str = "GSPC_PROPERTY_SECRET_FILE";

/// Who is connecting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// The wrapper of a task's `attempt`-th run (0 for the first, 1 after one restart...).
    Wrapper { attempt: u32 },
    /// A property client run by (or inside) a task.
    Client,
}

/// The first message of every connection. `protocol` comes first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PropertyHello {
    pub protocol: u32,
    pub secret: Secret,
    /// The task's number ([`TASK_ENV`]).
    pub task: u32,
    pub role: Role,
}

/// How a task ended, as its wrapper saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskExit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// The wrapper could not start it (the message says why).
    NotStarted(String),
}

impl TaskExit {
    /// Exit status 0.
    pub fn success(&self) -> bool {
        matches!(self, TaskExit::Code(0))
    }
}

impl std::fmt::Display for TaskExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskExit::Code(c) => write!(f, "exited with status {c}"),
            TaskExit::Signal(s) => write!(f, "was ended by signal {s}"),
            TaskExit::NotStarted(m) => write!(f, "could not be started: {m}"),
        }
    }
}

/// An inline asset to write before the task starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssetFile {
    /// The file name (a DDS name: `[a-zA-Z0-9#@~_-]+`).
    pub name: String,
    /// True for `visibility="global"`: written once into the host's session folder and linked
    /// into the task's folder; false: written into the task's folder.
    pub global: bool,
    pub content: String,
}

/// What the wrapper needs to start its task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSetup {
    /// `DDS_SESSION_ID`.
    pub session: String,
    /// The task's path, e.g. `main/group1/collection1_3/task2_0` (also its folder below the
    /// session folder).
    pub path: String,
    /// The command (`%taskIndex%` and `%collectionIndex%` already substituted), run by
    /// `/bin/sh -c`.
    pub exe: String,
    /// The `<env>` script (substituted likewise), sourced by the same shell before `exe`.
    pub env_script: Option<String>,
    /// Environment variables for the task (`DDS_*` and the runner's own).
    pub env: Vec<(String, String)>,
    /// The session folder on the task's host; `None`: `gspc-dds-<session>` in the host's
    /// temporary folder.
    pub session_dir: Option<String>,
    pub assets: Vec<AssetFile>,
}

/// Wrapper or client to runner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PropertyRequest {
    Hello(PropertyHello),
    /// Wrapper: send my [`TaskSetup`].
    Setup,
    /// Wrapper: the task runs as process `pid`.
    Started {
        pid: u32,
    },
    /// Wrapper: the task ended; `stderr_tail` holds the last lines it wrote to its stderr.
    Exited {
        exit: TaskExit,
        stderr_tail: String,
    },
    /// Client: write a property.
    Set {
        key: String,
        value: String,
    },
    /// Client: read a property (`None` when no value has reached the task yet).
    Get {
        key: String,
    },
    /// Client: wait until a value of the property has reached the task, at most `timeout_ms`
    /// milliseconds (`None`: no limit).
    Wait {
        key: String,
        timeout_ms: Option<u64>,
    },
}

/// Runner to wrapper or client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PropertyReply {
    Welcome,
    Refused {
        reason: String,
    },
    Setup(Box<TaskSetup>),
    /// The request was carried out.
    Ok,
    /// The answer to `Get` and `Wait`.
    Value(Option<String>),
    /// `Wait` ran out of time.
    TimedOut,
    /// The request was refused; `code` is stable (`property-undeclared`,
    /// `property-no-write-access`, `property-no-read-access`, `property-too-long`,
    /// `property-session-ended`, `property-bad-request`).
    Error {
        code: String,
        message: String,
    },
}

/// Decodes just the protocol version at the front of a [`PropertyRequest::Hello`] frame.
pub fn property_hello_protocol(frame: &[u8]) -> Option<u32> {
    crate::leading_version(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read_msg, write_msg};

    #[test]
    fn hello_version_is_readable_alone_and_round_trips() {
        let hello = PropertyRequest::Hello(PropertyHello {
            protocol: 42,
            secret: Secret::from_hex(&"cd".repeat(32)).unwrap(),
            task: 7,
            role: Role::Wrapper { attempt: 2 },
        });
        let bytes = postcard::to_allocvec(&hello).unwrap();
        assert_eq!(property_hello_protocol(&bytes), Some(42));
        let back: PropertyRequest = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, hello);
        let other = postcard::to_allocvec(&PropertyRequest::Setup).unwrap();
        assert_eq!(property_hello_protocol(&other), None);
    }

    #[test]
    fn replies_round_trip_through_frames() {
        let setup = PropertyReply::Setup(Box::new(TaskSetup {
            session: "s".into(),
            path: "main/t_0".into(),
            exe: "echo 0".into(),
            env_script: None,
            env: vec![("DDS_TASK_INDEX".into(), "0".into())],
            session_dir: Some("/tmp/x".into()),
            assets: vec![AssetFile {
                name: "a".into(),
                global: true,
                content: "x=1\n".into(),
            }],
        }));
        let mut buf = Vec::new();
        write_msg(&mut buf, &setup).unwrap();
        write_msg(&mut buf, &PropertyReply::Value(Some("v".into()))).unwrap();
        let mut r = buf.as_slice();
        assert_eq!(read_msg::<_, PropertyReply>(&mut r).unwrap(), setup);
        assert_eq!(
            read_msg::<_, PropertyReply>(&mut r).unwrap(),
            PropertyReply::Value(Some("v".into()))
        );
        assert_eq!(TaskExit::Code(3).to_string(), "exited with status 3");
        assert!(TaskExit::Code(0).success());
        assert!(!TaskExit::Signal(9).success());
    }
}
