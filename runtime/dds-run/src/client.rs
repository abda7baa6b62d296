//! The property client: what `gspc-property set|get|wait` and Rust tasks use.
//!
//! ```no_run
//! use pnet_dds_run::client::Properties;
//! # fn main() -> Result<(), pnet_dds_run::client::ClientError> {
//! // Inside a task started by the DDS runner:
//! let props = Properties::from_env()?;
//! props.set("endpoint", "node7:5000")?;
//! let peer = props.wait("peer", Some(std::time::Duration::from_secs(30)))?;
//! # let _ = peer;
//! # Ok(())
//! # }
//! ```
//!
//! Each call opens a connection to the runner, says hello with the session's secret and the
//! task's number, sends one request and reads the reply.

use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use pnet_protocol::property::{
    ADDR_ENV, PROPERTY_PROTOCOL_VERSION, PropertyHello, PropertyReply, PropertyRequest, Role,
    SECRET_FILE_ENV, TASK_ENV,
};
use pnet_protocol::{Secret, read_msg, write_msg};

/// Why a property call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientError {
    /// The task's environment lacks what the client needs (not run by the DDS runner?).
    Environment(String),
    /// The runner cannot be reached.
    Connect(String),
    /// The runner refused the connection (wrong secret, unknown task, other version).
    Refused(String),
    /// The runner refused the request; `code` is stable (see
    /// [`pnet_protocol::property::PropertyReply::Error`]).
    Property { code: String, message: String },
    /// `wait` ran out of time.
    TimedOut { key: String, after: Duration },
    /// The connection broke or carried something unexpected.
    Protocol(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Environment(m) | ClientError::Connect(m) | ClientError::Protocol(m) => {
                f.write_str(m)
            }
            ClientError::Refused(m) => write!(f, "the DDS runner refused the connection: {m}"),
            ClientError::Property { code, message } => write!(f, "{message} [{code}]"),
            ClientError::TimedOut { key, after } => write!(
                f,
                "no value of property `{key}` reached this task within {}",
                crate::report::seconds(*after)
            ),
        }
    }
}

impl std::error::Error for ClientError {}

/// A connection recipe to the runner's property server, for one task.
#[derive(Clone, Debug)]
pub struct Properties {
    addr: String,
    secret: Secret,
    task: u32,
}

/// Reads a secret file (64 hex digits).
pub fn read_secret_file(path: &Path) -> Result<Secret, ClientError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ClientError::Environment(format!(
            "cannot read the secret file {}: {e}",
            path.display()
        ))
    })?;
    Secret::from_hex(&text).ok_or_else(|| {
        ClientError::Environment(format!(
            "the secret file {} does not hold 64 hex digits",
            path.display()
        ))
    })
}

impl Properties {
    /// A client for task number `task` of the runner at `addr` (`host:port`).
    pub fn new(addr: impl Into<String>, secret: Secret, task: u32) -> Properties {
        Properties {
            addr: addr.into(),
            secret,
            task,
        }
    }

    /// A client from the environment the runner gives every task: `GSPC_PROPERTY_ADDR`,
    /// `GSPC_PROPERTY_TASK` and `GSPC_PROPERTY_SECRET_FILE`.
    pub fn from_env() -> Result<Properties, ClientError> {
        let var = |name: &str| {
            std::env::var(name).map_err(|_| {
                ClientError::Environment(format!(
                    "{name} is not set: gspc-property works inside a task started by the DDS runner (gspc-dds)"
                ))
            })
        };
        let addr = var(ADDR_ENV)?;
        let task_text = var(TASK_ENV)?;
        let task = task_text.trim().parse::<u32>().map_err(|_| {
            ClientError::Environment(format!("{TASK_ENV}: `{task_text}` is not a task number"))
        })?;
        let secret = read_secret_file(Path::new(&var(SECRET_FILE_ENV)?))?;
        Ok(Properties::new(addr, secret, task))
    }

    /// The task's number.
    pub fn task(&self) -> u32 {
        self.task
    }

    fn call(&self, role: Role, req: &PropertyRequest) -> Result<PropertyReply, ClientError> {
        let mut stream = connect(&self.addr)?;
        hello(&mut stream, &self.secret, self.task, role)?;
        write_msg(&mut stream, req)
            .map_err(|e| ClientError::Protocol(format!("cannot send the request: {e}")))?;
        read_msg(&mut stream)
            .map_err(|e| ClientError::Protocol(format!("no answer from the DDS runner: {e}")))
    }

    /// Writes a property: the value reaches every other task that reads it.
    pub fn set(&self, key: &str, value: &str) -> Result<(), ClientError> {
        let req = PropertyRequest::Set {
            key: key.into(),
            value: value.into(),
        };
        match self.call(Role::Client, &req)? {
            PropertyReply::Ok => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// The value of a property that reached this task, if any.
    pub fn get(&self, key: &str) -> Result<Option<String>, ClientError> {
        match self.call(Role::Client, &PropertyRequest::Get { key: key.into() })? {
            PropertyReply::Value(v) => Ok(v),
            other => Err(unexpected(other)),
        }
    }

    /// Waits until a value of the property has reached this task (at most `timeout`).
    pub fn wait(&self, key: &str, timeout: Option<Duration>) -> Result<String, ClientError> {
        let req = PropertyRequest::Wait {
            key: key.into(),
            timeout_ms: timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        };
        match self.call(Role::Client, &req)? {
            PropertyReply::Value(Some(v)) => Ok(v),
            PropertyReply::TimedOut => Err(ClientError::TimedOut {
                key: key.into(),
                after: timeout.unwrap_or_default(),
            }),
            other => Err(unexpected(other)),
        }
    }
}

fn unexpected(reply: PropertyReply) -> ClientError {
    match reply {
        PropertyReply::Error { code, message } => ClientError::Property { code, message },
        PropertyReply::Refused { reason } => ClientError::Refused(reason),
        other => ClientError::Protocol(format!("unexpected answer from the DDS runner: {other:?}")),
    }
}

/// Connects to `addr` (`host:port`), trying each address it resolves to.
pub(crate) fn connect(addr: &str) -> Result<TcpStream, ClientError> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| {
            ClientError::Connect(format!(
                "cannot resolve the DDS runner's address `{addr}`: {e}"
            ))
        })?
        .collect();
    let mut last = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, Duration::from_secs(10)) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(ClientError::Connect(match last {
        Some(e) => format!("cannot connect to the DDS runner at {addr}: {e}"),
        None => format!("the DDS runner's address `{addr}` resolves to nothing"),
    }))
}

/// Sends the hello and reads the welcome.
pub(crate) fn hello(
    stream: &mut TcpStream,
    secret: &Secret,
    task: u32,
    role: Role,
) -> Result<(), ClientError> {
    let hello = PropertyRequest::Hello(PropertyHello {
        protocol: PROPERTY_PROTOCOL_VERSION,
        secret: secret.clone(),
        task,
        role,
    });
    write_msg(stream, &hello)
        .map_err(|e| ClientError::Connect(format!("cannot talk to the DDS runner: {e}")))?;
    match read_msg::<_, PropertyReply>(stream) {
        Ok(PropertyReply::Welcome) => Ok(()),
        Ok(PropertyReply::Refused { reason }) => Err(ClientError::Refused(reason)),
        Ok(other) => Err(ClientError::Protocol(format!(
            "unexpected answer to the hello: {other:?}"
        ))),
        Err(e) => Err(ClientError::Protocol(format!(
            "no answer to the hello from the DDS runner: {e}"
        ))),
    }
}
