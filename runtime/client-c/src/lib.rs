//! `libpnet_client`: a C interface to a `gspc` runtime (`include/pnet_client.h`), over
//! [`pnet_agent::control::RtClient`]: connect to a state directory, submit a `.pnet` bundle
//! with inputs in JSON, put tokens, wait (with a timeout) for the outputs as JSON text, cancel,
//! ask a job's status. Values are in the one JSON encoding of values (`docs/PROTOCOL.md`),
//! typed by the net's ports and places. Every function returns a `pnet_status` code; the
//! message of the last error of the calling thread is [`pnet_last_error`].

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_double, c_int};
use std::path::Path;
use std::time::{Duration, Instant};

use pnet_agent::control::{RtClient, RtError, RtRequest, RtResponse, json};

/// `PNET_OK`: done.
pub const PNET_OK: c_int = 0;
/// A null pointer or a string that is not UTF-8.
pub const PNET_ERR_ARGUMENT: c_int = 1;
/// No runtime in the state directory, or it cannot be used (its mode, its secret).
pub const PNET_ERR_NO_RUNTIME: c_int = 2;
/// The control socket cannot be reached or the connection broke.
pub const PNET_ERR_CONNECTION: c_int = 3;
/// The runtime refused the request (another user, a wrong secret).
pub const PNET_ERR_REFUSED: c_int = 4;
/// The runtime answered with an error (no such job, no such place, a value of the wrong type).
pub const PNET_ERR_REQUEST: c_int = 5;
/// The bundle cannot be read or is not a valid bundle.
pub const PNET_ERR_BUNDLE: c_int = 6;
/// A JSON text is malformed, or a value does not fit its port.
pub const PNET_ERR_VALUE: c_int = 7;
/// The wait's time ran out (the job still runs).
pub const PNET_ERR_TIMEOUT: c_int = 8;
/// The job failed or was cancelled (the result still describes it).
pub const PNET_ERR_JOB_FAILED: c_int = 9;
/// An answer the client did not expect (a runtime of another release).
pub const PNET_ERR_PROTOCOL: c_int = 10;

/// A connection to a runtime (opaque in C).
#[derive(Debug)]
pub struct PnetClient {
    rt: RtClient,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
}

fn fail(code: c_int, message: &str) -> c_int {
    set_error(message);
    code
}

fn rt_fail(e: &RtError) -> c_int {
    let code = match e.code {
        "gspc-refused" => PNET_ERR_REFUSED,
        "gspc-request-failed" => PNET_ERR_REQUEST,
        "gspc-protocol" => PNET_ERR_PROTOCOL,
        "gspc-not-running" | "gspc-connection" => PNET_ERR_CONNECTION,
        _ => PNET_ERR_NO_RUNTIME,
    };
    fail(code, &e.message)
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `s` is null or points to a NUL-terminated string.
unsafe fn arg<'a>(s: *const c_char, what: &str) -> Result<&'a str, c_int> {
    if s.is_null() {
        return Err(fail(PNET_ERR_ARGUMENT, &format!("{what} is NULL")));
    }
    // SAFETY: not null, NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| fail(PNET_ERR_ARGUMENT, &format!("{what} is not UTF-8")))
}

/// A client argument.
///
/// # Safety
/// `c` is null or a pointer from [`pnet_connect`] not yet disconnected.
unsafe fn client<'a>(c: *mut PnetClient) -> Result<&'a PnetClient, c_int> {
    // SAFETY: the caller's contract.
    unsafe { c.as_ref() }.ok_or_else(|| fail(PNET_ERR_ARGUMENT, "the client is NULL"))
}

/// Hands a string to C (freed with [`pnet_free_string`]).
///
/// # Safety
/// `out` is a valid pointer to write to.
unsafe fn give(out: *mut *mut c_char, text: String) {
    let s = CString::new(text.replace('\0', " ")).unwrap_or_default();
    // SAFETY: the caller checked `out`.
    unsafe { *out = s.into_raw() };
}

fn run(f: impl FnOnce() -> Result<c_int, c_int>) -> c_int {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(code)) | Ok(Err(code)) => code,
        Err(_) => fail(
            PNET_ERR_PROTOCOL,
            "internal error (a panic in libpnet_client)",
        ),
    }
}

/// The message of the calling thread's last error ("" when none); valid until the thread's
/// next call into the library.
#[unsafe(no_mangle)]
pub extern "C" fn pnet_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Connects to the runtime of a state directory (as `gspc --state-dir DIR`): checks the
/// directory and reads its secret.
///
/// # Safety
/// `state_dir` is a NUL-terminated string; `out` a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_connect(
    state_dir: *const c_char,
    out: *mut *mut PnetClient,
) -> c_int {
    run(|| {
        if out.is_null() {
            return Err(fail(PNET_ERR_ARGUMENT, "out is NULL"));
        }
        // SAFETY: the caller's contract.
        let dir = unsafe { arg(state_dir, "state_dir") }?;
        let rt = RtClient::open(Path::new(dir)).map_err(|e| rt_fail(&e))?;
        // The runtime must answer (a state directory whose daemon died is an error here).
        rt.call(RtRequest::Jobs, Some(Duration::from_secs(10)))
            .map_err(|e| rt_fail(&e))?;
        let c = Box::new(PnetClient { rt });
        // SAFETY: checked above.
        unsafe { *out = Box::into_raw(c) };
        Ok(PNET_OK)
    })
}

/// Boots a runtime (as `gspc boot --state-dir DIR --topology TOPOLOGY [--module-path
/// MODULE_PATH]`, with the program `gspc`: NULL for `$GSPC`, else `gspc` on the `PATH`), waits
/// until its workers have joined, and connects to it. `topology` NULL: `gspc boot`'s default
/// (one worker per core); `module_path` NULL: none. Stop it with [`pnet_stop`].
///
/// # Safety
/// The strings are NUL-terminated or (`gspc`, `topology`, `module_path`) NULL; `out` a valid
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_boot(
    gspc: *const c_char,
    state_dir: *const c_char,
    topology: *const c_char,
    module_path: *const c_char,
    out: *mut *mut PnetClient,
) -> c_int {
    run(|| {
        if out.is_null() {
            return Err(fail(PNET_ERR_ARGUMENT, "out is NULL"));
        }
        // SAFETY: the caller's contract (each string NUL-terminated or NULL).
        let opt = |s: *const c_char, what: &str| {
            if s.is_null() {
                Ok(None)
            } else {
                unsafe { arg(s, what) }.map(Some)
            }
        };
        let program = match opt(gspc, "gspc")? {
            Some(p) => p.to_string(),
            None => std::env::var("GSPC").unwrap_or_else(|_| "gspc".to_string()),
        };
        // SAFETY: the caller's contract.
        let dir = unsafe { arg(state_dir, "state_dir") }?;
        let mut cmd = std::process::Command::new(&program);
        cmd.args(["boot", "--state-dir", dir]);
        if let Some(t) = opt(topology, "topology")? {
            cmd.args(["--topology", t]);
        }
        if let Some(m) = opt(module_path, "module_path")? {
            cmd.args(["--module-path", m]);
        }
        let o = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                fail(
                    PNET_ERR_NO_RUNTIME,
                    &format!("cannot run {program} (set GSPC or pass the program): {e}"),
                )
            })?;
        if !o.status.success() {
            let err = String::from_utf8_lossy(&o.stderr);
            return Err(fail(
                PNET_ERR_NO_RUNTIME,
                &format!("{program} boot failed: {}", err.trim()),
            ));
        }
        // SAFETY: the caller's contract, as checked above.
        match unsafe { pnet_connect(state_dir, out) } {
            PNET_OK => Ok(PNET_OK),
            code => Err(code),
        }
    })
}

/// Stops the client's runtime (as `gspc stop`: running jobs are cancelled); the client is
/// still to be freed with [`pnet_disconnect`].
///
/// # Safety
/// `c` from [`pnet_connect`] or [`pnet_boot`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_stop(c: *mut PnetClient) -> c_int {
    run(|| {
        // SAFETY: the caller's contract.
        let c = unsafe { client(c) }?;
        match c
            .rt
            .call(RtRequest::Stop { wait: false }, Some(SHORT))
            .map_err(|e| rt_fail(&e))?
        {
            RtResponse::Stopped(_) => Ok(PNET_OK),
            r => Err(unexpected(&r)),
        }
    })
}

/// Frees a client (NULL is fine).
///
/// # Safety
/// `c` is null or from [`pnet_connect`], and not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_disconnect(c: *mut PnetClient) {
    if !c.is_null() {
        // SAFETY: from Box::into_raw in pnet_connect, freed once.
        drop(unsafe { Box::from_raw(c) });
    }
}

/// Frees a string the library returned (NULL is fine).
///
/// # Safety
/// `s` is null or a string from this library, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_free_string(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: from CString::into_raw in `give`.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// Submits a job: the bundle at `bundle_path` (a `.pnet` from `pnetc`), `inputs_json` an
/// object `{"PORT": [TOKEN, ...]}` (NULL: none), `name` shown by `gspc jobs` (NULL: the file
/// name). Writes the job's id to `job`.
///
/// # Safety
/// The strings are NUL-terminated or (`inputs_json`, `name`) NULL; `c` from
/// [`pnet_connect`]; `job` a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_submit(
    c: *mut PnetClient,
    bundle_path: *const c_char,
    inputs_json: *const c_char,
    name: *const c_char,
    job: *mut u64,
) -> c_int {
    run(|| {
        // SAFETY: the caller's contract.
        let c = unsafe { client(c) }?;
        if job.is_null() {
            return Err(fail(PNET_ERR_ARGUMENT, "job is NULL"));
        }
        // SAFETY: the caller's contract.
        let path = unsafe { arg(bundle_path, "bundle_path") }?;
        let inputs = if inputs_json.is_null() {
            None
        } else {
            // SAFETY: the caller's contract.
            let text = unsafe { arg(inputs_json, "inputs_json") }?;
            Some(
                serde_json::from_str::<serde_json::Value>(text)
                    .map_err(|e| fail(PNET_ERR_VALUE, &format!("inputs: not JSON: {e}")))?,
            )
        };
        let name = if name.is_null() {
            String::new()
        } else {
            // SAFETY: the caller's contract.
            unsafe { arg(name, "name") }?.to_string()
        };
        let p = Path::new(path);
        let bytes = json::read_bundle_file(p).map_err(|e| fail(PNET_ERR_BUNDLE, &e))?;
        let bundle = json::decode_bundle(&bytes, path).map_err(|e| fail(PNET_ERR_BUNDLE, &e))?;
        let inputs = json::inputs_from_json(&bundle, inputs.as_ref())
            .map_err(|e| fail(PNET_ERR_VALUE, &e))?;
        let net = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.to_string());
        let request = RtRequest::SubmitNamed {
            name,
            net,
            bundle: bytes,
            inputs,
            module_path: Vec::new(),
        };
        match c.rt.call(request, Some(SHORT)).map_err(|e| rt_fail(&e))? {
            RtResponse::Submitted { job: id } => {
                // SAFETY: checked above.
                unsafe { *job = id };
                Ok(PNET_OK)
            }
            r => Err(unexpected(&r)),
        }
    })
}

/// How long a request other than a wait may take.
const SHORT: Duration = Duration::from_secs(60);

fn unexpected(r: &RtResponse) -> c_int {
    fail(
        PNET_ERR_PROTOCOL,
        &format!("unexpected answer from the runtime: {r:?}"),
    )
}

/// Puts a token on a `put_token="true"` place of a running job; `value_json` is the value in
/// the JSON encoding of values, decoded against the place's type (`"2"`, `"{\"x\": 1}"`).
///
/// # Safety
/// The strings are NUL-terminated; `c` from [`pnet_connect`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_put_token(
    c: *mut PnetClient,
    job: u64,
    place: *const c_char,
    value_json: *const c_char,
) -> c_int {
    run(|| {
        // SAFETY: the caller's contract.
        let c = unsafe { client(c) }?;
        // SAFETY: the caller's contract.
        let place = unsafe { arg(place, "place") }?.to_string();
        // SAFETY: the caller's contract.
        let value = unsafe { arg(value_json, "value_json") }?;
        serde_json::from_str::<serde_json::Value>(value)
            .map_err(|e| fail(PNET_ERR_VALUE, &format!("value: not JSON: {e}")))?;
        let request = RtRequest::PutTokenJson {
            job,
            place,
            value: value.to_string(),
        };
        ok_answer(c, request)
    })
}

fn ok_answer(c: &PnetClient, request: RtRequest) -> Result<c_int, c_int> {
    match c.rt.call(request, Some(SHORT)).map_err(|e| rt_fail(&e))? {
        RtResponse::Ok | RtResponse::Job(pnet_agent::control::Response::Ok) => Ok(PNET_OK),
        r => Err(unexpected(&r)),
    }
}

/// Says that no more tokens will be put into the job: a net with `put_token` places ends once
/// nothing is left to do.
///
/// # Safety
/// `c` from [`pnet_connect`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_close_job(c: *mut PnetClient, job: u64) -> c_int {
    run(|| {
        // SAFETY: the caller's contract.
        let c = unsafe { client(c) }?;
        ok_answer(c, RtRequest::Close { job })
    })
}

/// Cancels a running job.
///
/// # Safety
/// `c` from [`pnet_connect`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_cancel(c: *mut PnetClient, job: u64) -> c_int {
    run(|| {
        // SAFETY: the caller's contract.
        let c = unsafe { client(c) }?;
        ok_answer(c, RtRequest::Cancel { job })
    })
}

/// Waits until the job has ended, at most `timeout_seconds` (0 or less: no limit), and writes
/// its outcome as JSON text to `result` (free it with [`pnet_free_string`]): `{"kind":
/// "outcome", "job": J, "state": "done", "outputs": {"PORT": {"type": T, "tokens": [...]}},
/// ...}` (docs/PROTOCOL.md, `wait`). `PNET_ERR_JOB_FAILED` when the job failed or was
/// cancelled (`result` is set too); `PNET_ERR_TIMEOUT` when the time ran out.
///
/// # Safety
/// `c` from [`pnet_connect`]; `result` a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_wait(
    c: *mut PnetClient,
    job: u64,
    timeout_seconds: c_double,
    result: *mut *mut c_char,
) -> c_int {
    run(|| {
        // SAFETY: the caller's contract.
        let c = unsafe { client(c) }?;
        if result.is_null() {
            return Err(fail(PNET_ERR_ARGUMENT, "result is NULL"));
        }
        let timeout = (timeout_seconds > 0.0)
            .then(|| Duration::try_from_secs_f64(timeout_seconds).unwrap_or(Duration::MAX));
        let start = Instant::now();
        let answer = match c.rt.call(RtRequest::Wait { job }, timeout) {
            Ok(a) => a,
            Err(e)
                if e.code == "gspc-connection" && timeout.is_some_and(|t| start.elapsed() >= t) =>
            {
                return Err(fail(
                    PNET_ERR_TIMEOUT,
                    &format!("job {job} has not ended after {timeout_seconds} s"),
                ));
            }
            Err(e) => return Err(rt_fail(&e)),
        };
        let RtResponse::Outcome { job, outcome } = answer else {
            return Err(unexpected(&answer));
        };
        // SAFETY: checked above.
        unsafe { give(result, json::outcome(job, &outcome).to_string()) };
        match outcome {
            pnet_agent::control::JobOutcome::Done { .. } => Ok(PNET_OK),
            pnet_agent::control::JobOutcome::Failed { message, .. } => Err(fail(
                PNET_ERR_JOB_FAILED,
                &format!("job {job} failed: {message}"),
            )),
            pnet_agent::control::JobOutcome::Cancelled => Err(fail(
                PNET_ERR_JOB_FAILED,
                &format!("job {job} was cancelled"),
            )),
        }
    })
}

/// The job's state as JSON text (free it with [`pnet_free_string`]): `{"id": J, "net": ...,
/// "name": ..., "state": "running", "tasks_running": N, "tasks_queued": N, "tasks_done": N,
/// "waiting": ..., "error": ...}` (docs/PROTOCOL.md, `jobs`).
///
/// # Safety
/// `c` from [`pnet_connect`]; `status` a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pnet_job_status(
    c: *mut PnetClient,
    job: u64,
    status: *mut *mut c_char,
) -> c_int {
    run(|| {
        // SAFETY: the caller's contract.
        let c = unsafe { client(c) }?;
        if status.is_null() {
            return Err(fail(PNET_ERR_ARGUMENT, "status is NULL"));
        }
        let answer =
            c.rt.call(RtRequest::Jobs, Some(SHORT))
                .map_err(|e| rt_fail(&e))?;
        let RtResponse::Jobs(jobs) = answer else {
            return Err(unexpected(&answer));
        };
        let j = jobs
            .iter()
            .find(|j| j.id == job)
            .ok_or_else(|| fail(PNET_ERR_REQUEST, &format!("there is no job {job}")))?;
        let text = serde_json::to_string(j)
            .map_err(|e| fail(PNET_ERR_PROTOCOL, &format!("cannot write the status: {e}")))?;
        // SAFETY: checked above.
        unsafe { give(status, text) };
        Ok(PNET_OK)
    })
}
