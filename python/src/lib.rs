//! `pnet._native`: the native part of the Python package `pnet` (see `python/README.md`).
//!
//! It calls the workspace's crates in-process: the compiler (`pnet-sema`, `pnetc`) for
//! [`compile`], the agent's one-job entry point (`pnet_agent::run_job_with`, what `gspc-run`
//! calls) for [`run`], the persistent runtime's `pnet_agent::serve` for the daemon that
//! `pnet.Runtime.boot` starts, and `pnet_agent::control::RtClient` for [`Client`]. Every call
//! that blocks releases the GIL. The Python part (`python/pnet/`) wraps these in the
//! documented API.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pnet_agent::control::{JobOutcome, RtClient, RtRequest, RtResponse};
use pnet_bundle::{Body, Bundle as IrBundle, PortDir};
use pnet_stdlib::{Type, Value};
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

mod values;

use values::{error, from_py, outputs_to_py, serde_to_py};

/// A module function the net calls: module, function, its in ports with their types (JSON
/// form), its out ports.
type ModuleCall = (String, String, Vec<(String, String)>, Vec<String>);

/// How a job ended: state, outputs (when done), details.
type Ended<'py> = (String, Option<Bound<'py, PyDict>>, Bound<'py, PyDict>);

/// A compiled net (a bundle), ready to run or submit.
#[pyclass(module = "pnet._native", frozen)]
struct Bundle {
    bundle: Arc<IrBundle>,
    /// The net's file, as given.
    path: String,
}

impl Bundle {
    fn root_net(&self) -> Option<&pnet_bundle::Net> {
        match &self.bundle.function(self.bundle.root).body {
            Body::Net(n) => Some(n),
            _ => None,
        }
    }

    fn ports(&self, input: bool) -> Vec<(String, Type)> {
        let f = self.bundle.function(self.bundle.root);
        f.ports
            .iter()
            .filter(|p| {
                if input {
                    p.dir.is_input()
                } else {
                    p.dir.is_output()
                }
            })
            .map(|p| (p.name.clone(), p.ty.clone()))
            .collect()
    }

    /// The type of the root's in port `name` (with the engine's message naming the nearest
    /// port when there is none).
    fn in_port_type(&self, name: &str) -> PyResult<Type> {
        let f = self.bundle.function(self.bundle.root);
        pnet_bundle::inputs::in_port(f, name)
            .map(|p| p.ty.clone())
            .map_err(|e| error("bad-input", e))
    }

    /// The type of the root net's place `name` (any type when there is no such place: the
    /// engine then refuses the token with its message).
    fn place_type(&self, name: &str) -> Type {
        self.root_net()
            .and_then(|n| n.places.iter().find(|p| p.name == name))
            .map_or(Type::Any, |p| p.ty.clone())
    }

    /// Converts `{port: [values]}` by the in ports' types.
    fn inputs(&self, inputs: &Bound<'_, PyList>) -> PyResult<Vec<(String, Vec<Value>)>> {
        let mut out = Vec::new();
        for item in inputs.iter() {
            let (port, tokens): (String, Bound<'_, PyList>) = item.extract()?;
            let ty = self.in_port_type(&port)?;
            let mut vs = Vec::new();
            for t in tokens.iter() {
                vs.push(from_py(&t, &ty, &format!("inputs.{port}"))?);
            }
            out.push((port, vs));
        }
        Ok(out)
    }
}

#[pymethods]
impl Bundle {
    /// The net's file as given to `compile`.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// The root's in ports: `[(name, type)]`, the type as written in xpnet.
    fn in_ports(&self) -> Vec<(String, String)> {
        (self.ports(true).into_iter())
            .map(|(n, t)| (n, pnet_stdlib::type_name(&t)))
            .collect()
    }

    /// The root's out ports: `[(name, type)]`.
    fn out_ports(&self) -> Vec<(String, String)> {
        (self.ports(false).into_iter())
            .map(|(n, t)| (n, pnet_stdlib::type_name(&t)))
            .collect()
    }

    /// The root net's `put_token` places: `[(name, type)]`.
    fn put_token_places(&self) -> Vec<(String, String)> {
        self.root_net()
            .map(|n| {
                (n.places.iter())
                    .filter(|p| p.put_token)
                    .map(|p| (p.name.clone(), pnet_stdlib::type_name(&p.ty)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the net calls modules (then it needs workers).
    fn calls_modules(&self) -> bool {
        pnet_agent::calls_modules(&self.bundle)
    }

    /// The module calls of the net: `[(module, function, {in port: type as JSON}, [out
    /// ports])]`, one per distinct module function (for `pnet.module` launchers).
    fn module_calls(&self) -> Vec<ModuleCall> {
        let mut out: Vec<ModuleCall> = Vec::new();
        for f in &self.bundle.functions {
            let modules: Vec<&pnet_bundle::Module> = match &f.body {
                Body::Module(m) => vec![m],
                Body::Modules { modules, .. } => modules.iter().collect(),
                _ => continue,
            };
            for m in modules {
                if out
                    .iter()
                    .any(|(a, b, _, _)| *a == m.name && *b == m.signature.function)
                {
                    continue;
                }
                let ins = (f.ports.iter())
                    .filter(|p| p.dir.is_input())
                    .map(|p| (p.name.clone(), values::type_json(&p.ty)))
                    .collect();
                let outs = (f.ports.iter())
                    .filter(|p| p.dir.is_output() && p.dir != PortDir::Tunnel)
                    .map(|p| p.name.clone())
                    .collect();
                out.push((m.name.clone(), m.signature.function.clone(), ins, outs));
            }
        }
        out
    }

    /// Writes the bundle as a `.pnet` file (what `pnetc -o` writes).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let bytes = pnet_bundle::format::encode(&self.bundle)
            .map_err(|e| error("bundle-encode", e.to_string()))?;
        py.detach(|| std::fs::write(&path, bytes))
            .map_err(|e| error("io", format!("cannot write {}: {e}", path.display())))
    }

    fn __repr__(&self) -> String {
        format!("<pnet.Bundle {}>", self.path)
    }
}

/// One diagnostic as a dict: severity, code, message, file, line, column (1-based; None
/// without a location), notes.
fn diagnostic_dict<'py>(
    py: Python<'py>,
    files: &[pnet_sema::LoadedFile],
    d: &pnet_diagnostics::Diagnostic,
    root: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("severity", if d.is_error() { "error" } else { "warning" })?;
    dict.set_item("code", d.code)?;
    dict.set_item("message", &d.message)?;
    dict.set_item("notes", &d.notes)?;
    let (file, line, column) = if let Some(span) = d.primary_span()
        && let Some(f) = files.get(span.file.0 as usize)
    {
        let (l, c) = pnet_diagnostics::line_col(&f.text, span.start as usize);
        (f.path.display().to_string(), Some(l), Some(c))
    } else if let Some(loc) = &d.location {
        (loc.clone(), None, None)
    } else {
        // No location (a file that cannot be read): the net's file.
        (root.to_string(), None, None)
    };
    dict.set_item("file", file)?;
    dict.set_item("line", line)?;
    dict.set_item("column", column)?;
    Ok(dict)
}

/// Compiles the net at `path` (an `.xpnet`; a `.pnet` bundle is read, a `.workload` lowered
/// and compiled): returns `(bundle or None, [diagnostic dicts], rendered text)`; the bundle
/// is None when there are errors.
#[pyfunction]
#[pyo3(signature = (path, search_paths = Vec::new()))]
fn compile<'py>(
    py: Python<'py>,
    path: PathBuf,
    search_paths: Vec<PathBuf>,
) -> PyResult<(Option<Bundle>, Bound<'py, PyList>, String)> {
    let options = pnet_sema::Options {
        search_paths,
        ..pnet_sema::Options::default()
    };
    let name = path.display().to_string();
    let is_xpnet = !path
        .extension()
        .is_some_and(|e| e == "pnet" || e == "workload");
    if !is_xpnet {
        let loaded = py.detach(|| {
            pnet_stdlib::input::read_file(&path, pnet_stdlib::input::MAX_SOURCE_BYTES)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))
                .and_then(|bytes| pnetc::load_net(&path, &bytes, &options, pnetc::ColorMode::Never))
        });
        return match loaded {
            Ok((bundle, _)) => Ok((
                Some(Bundle {
                    bundle: Arc::new(bundle),
                    path: name,
                }),
                PyList::empty(py),
                String::new(),
            )),
            Err(message) => {
                let d = PyDict::new(py);
                d.set_item("severity", "error")?;
                d.set_item("code", "load")?;
                d.set_item("message", &message)?;
                d.set_item("notes", PyList::empty(py))?;
                d.set_item("file", &name)?;
                d.set_item("line", py.None())?;
                d.set_item("column", py.None())?;
                Ok((None, PyList::new(py, [d])?, message))
            }
        };
    }
    let out = py.detach(|| pnet_sema::compile_path(&path, &options));
    let diags = out
        .diagnostics
        .iter()
        .map(|d| diagnostic_dict(py, &out.files, d, &name))
        .collect::<PyResult<Vec<_>>>()?;
    let rendered = if out.diagnostics.is_empty() {
        String::new()
    } else {
        pnetc::render::render_to_string(&out.files, &out.diagnostics)
    };
    let has_errors = out.has_errors();
    let bundle = match out.bundle {
        Some(b) if !has_errors => Some(Bundle {
            bundle: Arc::new(b),
            path: name,
        }),
        _ => None,
    };
    Ok((bundle, PyList::new(py, diags)?, rendered))
}

/// The worker plan from a topology string (default: one worker per core, each with
/// `default_shm` bytes of working memory) on this host.
fn plan(topology: Option<&str>, default_shm: u64) -> PyResult<pnet_topology::Plan> {
    let render = |text: &str, diags: &[pnet_diagnostics::Diagnostic]| {
        let file = pnet_diagnostics::RenderFile {
            name: "topology",
            text,
        };
        pnet_diagnostics::render::render_to_string(&[file], diags)
    };
    let (topo, text) = match topology {
        Some(t) => {
            let (topo, diags) = pnet_topology::parse_topology(t);
            if pnet_topology::has_errors(&diags) {
                return Err(PyValueError::new_err(format!(
                    "the topology has errors:\n{}",
                    render(t, &diags)
                )));
            }
            (topo, t.to_string())
        }
        None => {
            let topo = pnet_topology::default_topology_with_memory(
                pnet_topology::hwloc::core_count(),
                default_shm,
            );
            let text = topo.to_string();
            (topo, text)
        }
    };
    let hosts = vec![pnet_topology::local_hostname()];
    let mut checks = pnet_topology::check_worker_count(&topo, hosts.len());
    checks.extend(pnet_topology::check_local_sockets(&topo));
    if pnet_topology::has_errors(&checks) {
        return Err(PyValueError::new_err(format!(
            "the topology does not fit:\n{}",
            render(&text, &checks)
        )));
    }
    Ok(pnet_topology::plan(&topo, &hosts))
}

/// How expressions run, as `gspc-run --jit` says: `auto` (the default: compile what pays
/// off once it is hot), `on` or `off`; without a mode, the environment variable `PNET_JIT`.
fn jit_mode(mode: Option<String>) -> PyResult<pnet_jit::JitMode> {
    match mode.or_else(|| std::env::var("PNET_JIT").ok()) {
        None => Ok(pnet_jit::JitMode::Auto),
        Some(m) => pnet_jit::JitMode::parse(&m).ok_or_else(|| {
            PyValueError::new_err(format!("jit: '{m}' is not one of auto, on, off"))
        }),
    }
}

/// The worker program: the given one, else `pnet_agent::worker_program()` (`GSPC_WORKER`, or
/// `gspc-worker` beside the Python executable).
fn worker(worker: Option<PathBuf>) -> PathBuf {
    worker.unwrap_or_else(pnet_agent::worker_program)
}

/// Runs a job once (as `gspc-run` does: the agent in this process, workers started from the
/// topology when the net calls modules) and returns `(outputs, info)`: outputs a dict from out
/// port to its tokens, info a dict with `firings`, `tasks`, `complete` and `warning`.
#[pyfunction]
#[pyo3(signature = (bundle, inputs, topology = None, module_path = Vec::new(), worker_program = None, seed = None, max_firings = None, logs = None, trace = None, jit = None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    bundle: &Bundle,
    inputs: &Bound<'py, PyList>,
    topology: Option<String>,
    module_path: Vec<PathBuf>,
    worker_program: Option<PathBuf>,
    seed: Option<u64>,
    max_firings: Option<u64>,
    logs: Option<PathBuf>,
    trace: Option<PathBuf>,
    jit: Option<String>,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let jit = jit_mode(jit)?;
    let inputs = bundle.inputs(inputs)?;
    let shm = if pnet_agent::uses_memory(&bundle.bundle) {
        pnet_agent::DEFAULT_WORKER_SHM
    } else {
        0
    };
    let plan = plan(topology.as_deref(), shm)?;
    let worker = worker(worker_program);
    if bundle.calls_modules() && !worker.exists() {
        return Err(error(
            "no-worker-program",
            format!(
                "the net calls modules, but the worker program {} does not exist (set \
                 GSPC_WORKER, or put gspc-worker on PATH: cargo build --release -p pnet-worker)",
                worker.display()
            ),
        ));
    }
    let mut config = pnet_agent::AgentConfig::new(plan, worker.clone());
    if let Some(s) = seed {
        config.run.seed = s;
    }
    config.run.max_firings = max_firings;
    if jit != pnet_jit::JitMode::Off {
        config.run.runner = Some(Arc::new(pnet_jit::JitFactory::new(jit)));
    }
    let mut path = module_path;
    if let Some(dir) = worker.parent().filter(|d| !d.as_os_str().is_empty()) {
        path.push(dir.to_path_buf());
    }
    config.module_path = path;
    config.logs = logs;
    config.trace = trace;
    let b = bundle.bundle.clone();
    let result = py.detach(move || {
        pnet_agent::run_job_with(&b, &inputs, &config, pnet_agent::JobOptions::default())
    });
    let result = match result {
        Ok(r) => r,
        Err(pnet_agent::AgentError::Cancelled) => {
            return Err(PyKeyboardInterrupt::new_err("the run was cancelled"));
        }
        Err(e) => return Err(error(e.code(), e.to_string())),
    };
    let outputs = outputs_to_py(py, &result.outputs)?;
    let info = PyDict::new(py);
    info.set_item("firings", result.stats.firings)?;
    info.set_item("tasks", result.stats.tasks)?;
    info.set_item("complete", result.ending.is_complete())?;
    info.set_item(
        "warning",
        pnet_agent::output::ending_warning("pnet", &result.ending),
    )?;
    Ok((outputs, info))
}

/// Runs a persistent runtime in this process until a client stops it (the daemon of
/// `pnet.Runtime.boot`, `python -m pnet._daemon`); the state directory must hold the secret.
#[pyfunction]
#[pyo3(signature = (state_dir, topology = None, module_path = Vec::new(), worker_program = None, listen = None, max_retries = None))]
fn serve(
    py: Python<'_>,
    state_dir: PathBuf,
    topology: Option<String>,
    module_path: Vec<PathBuf>,
    worker_program: Option<PathBuf>,
    listen: Option<String>,
    max_retries: Option<u32>,
) -> PyResult<String> {
    let plan = plan(topology.as_deref(), 0)?;
    let listen = listen
        .as_deref()
        .unwrap_or("127.0.0.1:0")
        .parse()
        .map_err(|_| PyValueError::new_err("listen: not an address like 127.0.0.1:0"))?;
    let secret =
        pnet_agent::control::read_secret(&state_dir).map_err(|e| error(e.code, e.message))?;
    let worker = worker(worker_program);
    let mut path = module_path;
    if let Some(d) = worker.parent().filter(|d| !d.as_os_str().is_empty()) {
        path.push(d.to_path_buf());
    }
    let mut agent = pnet_agent::AgentConfig::new(plan, worker);
    // As gspc daemon: expressions through the JIT where it pays off.
    agent.run.runner = Some(Arc::new(pnet_jit::JitFactory::new(pnet_jit::JitMode::Auto)));
    agent.module_path = path;
    agent.listen = listen;
    agent.log = Some(state_dir.join(pnet_agent::control::LOG_FILE));
    agent.max_retries = max_retries;
    let rc = pnet_agent::RuntimeConfig {
        agent,
        state_dir,
        secret,
        sched: pnet_agent::SchedConfig::default(),
        stop_grace: Duration::from_secs(3),
    };
    match py.detach(move || pnet_agent::serve(rc)) {
        Ok(r) => Ok(format!(
            "stopped: {} jobs cancelled, {} workers stopped, {} left",
            r.cancelled.len(),
            r.workers.len(),
            r.left.len()
        )),
        Err(e) => Err(error(e.code(), e.to_string())),
    }
}

/// How many workers the topology string plans on this host (default: one per core).
#[pyfunction]
#[pyo3(signature = (topology = None))]
fn plan_size(topology: Option<String>) -> PyResult<usize> {
    Ok(plan(topology.as_deref(), 0)?.workers.len())
}

/// A fresh secret for a runtime (64 hex digits).
#[pyfunction]
fn new_secret() -> PyResult<String> {
    pnet_protocol::Secret::random()
        .map(|s| s.to_hex())
        .map_err(|e| error("secret", format!("cannot make a secret: {e}")))
}

/// How long a short request may take.
const SHORT: Duration = Duration::from_secs(30);

/// A client of a persistent runtime (its state directory's control socket and secret).
#[pyclass(module = "pnet._native", frozen)]
struct Client {
    inner: Arc<RtClient>,
}

impl Client {
    fn call(
        &self,
        py: Python<'_>,
        req: RtRequest,
        timeout: Option<Duration>,
    ) -> PyResult<RtResponse> {
        let c = self.inner.clone();
        py.detach(move || c.call(req, timeout))
            .map_err(|e| error(e.code, e.message))
    }
}

fn unexpected(r: RtResponse) -> PyErr {
    error(
        "gspc-protocol",
        format!("unexpected answer from the runtime: {r:?}"),
    )
}

#[pymethods]
impl Client {
    /// Opens the runtime of `state_dir` (checks the directory, reads the secret).
    #[new]
    fn new(state_dir: PathBuf) -> PyResult<Client> {
        RtClient::open(&state_dir)
            .map(|c| Client { inner: Arc::new(c) })
            .map_err(|e| error(e.code, e.message))
    }

    /// The runtime's status (a dict: pid, address, workers, jobs, memory).
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.call(py, RtRequest::Status, Some(SHORT))? {
            RtResponse::Status(s) => serde_to_py(py, &s),
            r => Err(unexpected(r)),
        }
    }

    /// Submits a job; `inputs` is `[(port, [values])]`; returns the job's id.
    #[pyo3(signature = (bundle, inputs, name = None, module_path = Vec::new()))]
    fn submit(
        &self,
        py: Python<'_>,
        bundle: &Bundle,
        inputs: &Bound<'_, PyList>,
        name: Option<String>,
        module_path: Vec<String>,
    ) -> PyResult<u64> {
        let inputs = bundle.inputs(inputs)?;
        let encoded = pnet_bundle::format::encode(&bundle.bundle)
            .map_err(|e| error("bundle-encode", e.to_string()))?;
        let net = bundle.path.clone();
        let req = match name {
            Some(name) => RtRequest::SubmitNamed {
                name,
                net,
                bundle: encoded,
                inputs,
                module_path,
            },
            None => RtRequest::SubmitAt {
                net,
                bundle: encoded,
                inputs,
                module_path,
            },
        };
        match self.call(py, req, Some(SHORT))? {
            RtResponse::Submitted { job } => Ok(job),
            r => Err(unexpected(r)),
        }
    }

    /// Waits for a job's end (at most `timeout` seconds): None when it has not ended, else
    /// `(state, outputs or None, info)`; state is `done`, `failed` or `cancelled`, info a
    /// dict (`firings`, `tasks`, `complete`, `warning` when done; `code`, `message` when
    /// failed).
    #[pyo3(signature = (job, timeout = None))]
    fn wait<'py>(
        &self,
        py: Python<'py>,
        job: u64,
        timeout: Option<f64>,
    ) -> PyResult<Option<Ended<'py>>> {
        let timeout = timeout.map(|t| Duration::from_secs_f64(t.max(0.001)));
        let t0 = Instant::now();
        let c = self.inner.clone();
        let answer = py.detach(move || c.call(RtRequest::Wait { job }, timeout));
        let outcome = match answer {
            Err(e) if e.code == "gspc-connection" && timeout.is_some_and(|t| t0.elapsed() >= t) => {
                return Ok(None);
            }
            Err(e) => return Err(error(e.code, e.message)),
            Ok(RtResponse::Outcome { outcome, .. }) => outcome,
            Ok(r) => return Err(unexpected(r)),
        };
        let info = PyDict::new(py);
        Ok(Some(match outcome {
            JobOutcome::Done {
                outputs,
                firings,
                tasks,
                ending,
                ..
            } => {
                info.set_item("firings", firings)?;
                info.set_item("tasks", tasks)?;
                info.set_item("complete", ending.is_complete())?;
                info.set_item(
                    "warning",
                    pnet_agent::output::ending_warning("pnet", &ending),
                )?;
                ("done".into(), Some(outputs_to_py(py, &outputs)?), info)
            }
            JobOutcome::Failed { code, message } => {
                info.set_item("code", code)?;
                info.set_item("message", message)?;
                ("failed".into(), None, info)
            }
            JobOutcome::Cancelled => ("cancelled".into(), None, info),
        }))
    }

    /// Cancels a job.
    fn cancel(&self, py: Python<'_>, job: u64) -> PyResult<()> {
        match self.call(py, RtRequest::Cancel { job }, Some(SHORT))? {
            RtResponse::Ok | RtResponse::Job(pnet_agent::control::Response::Ok) => Ok(()),
            r => Err(unexpected(r)),
        }
    }

    /// Tells a job that no more tokens will come.
    fn close(&self, py: Python<'_>, job: u64) -> PyResult<()> {
        match self.call(py, RtRequest::Close { job }, Some(SHORT))? {
            RtResponse::Ok | RtResponse::Job(pnet_agent::control::Response::Ok) => Ok(()),
            r => Err(unexpected(r)),
        }
    }

    /// Puts a token on a `put_token` place of a job's root net, converted by the place's type.
    fn put_token(
        &self,
        py: Python<'_>,
        bundle: &Bundle,
        job: u64,
        place: String,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let ty = bundle.place_type(&place);
        let value = from_py(value, &ty, &format!("place `{place}`"))?;
        match self.call(py, RtRequest::PutToken { job, place, value }, Some(SHORT))? {
            RtResponse::Ok | RtResponse::Job(pnet_agent::control::Response::Ok) => Ok(()),
            r => Err(unexpected(r)),
        }
    }

    /// The jobs (a list of dicts: id, net, state, name, error, task counts).
    fn jobs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.call(py, RtRequest::Jobs, Some(SHORT))? {
            RtResponse::Jobs(j) => serde_to_py(py, &j),
            r => Err(unexpected(r)),
        }
    }

    /// A job's tasks (a dict: tasks, queued, dropped, workers).
    fn tasks<'py>(&self, py: Python<'py>, job: u64) -> PyResult<Bound<'py, PyAny>> {
        match self.call(py, RtRequest::Tasks { job }, Some(SHORT))? {
            RtResponse::Tasks(t) => serde_to_py(py, &t),
            r => Err(unexpected(r)),
        }
    }

    /// The logs of a job's tasks (a list of dicts: task, transition, worker, text, dropped).
    #[pyo3(signature = (job, task = None))]
    fn logs<'py>(
        &self,
        py: Python<'py>,
        job: u64,
        task: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.call(py, RtRequest::Logs { job, task }, Some(SHORT))? {
            RtResponse::Logs(l) => serde_to_py(py, &l),
            r => Err(unexpected(r)),
        }
    }

    /// Stops the runtime (cancelling running jobs, or with `wait` waiting for them); returns
    /// what was stopped (a dict).
    #[pyo3(signature = (wait = false))]
    fn stop<'py>(&self, py: Python<'py>, wait: bool) -> PyResult<Bound<'py, PyAny>> {
        let timeout = if wait {
            None
        } else {
            Some(Duration::from_secs(60))
        };
        match self.call(py, RtRequest::Stop { wait }, timeout)? {
            RtResponse::Stopped(r) => serde_to_py(py, &r),
            r => Err(unexpected(r)),
        }
    }
}

/// The directory of this crate when it was built (to find the workspace's `target/` and its
/// `gspc-worker` from a package built from a checkout).
const SOURCE_DIR: &str = env!("CARGO_MANIFEST_DIR");

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Bundle>()?;
    m.add_class::<Client>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(new_secret, m)?)?;
    m.add_function(wrap_pyfunction!(plan_size, m)?)?;
    m.add_function(wrap_pyfunction!(values::decode, m)?)?;
    m.add_function(wrap_pyfunction!(values::encode, m)?)?;
    m.add_function(wrap_pyfunction!(values::_register, m)?)?;
    m.add("SOURCE_DIR", SOURCE_DIR)?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
