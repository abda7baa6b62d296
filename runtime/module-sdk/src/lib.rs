//! The native module SDK: the stable C ABI between a worker and a native module library,
//! and a Rust macro to export module functions through it.
//!
//! # The ABI (version 1, revision 3)
//!
//! A native module `m` is a shared library `libm.so` in a directory of the module path. It
//! exports one symbol:
//!
//! ```c
//! const pnet_module_descriptor *pnet_module_v1(void);
//! ```
//!
//! returning a pointer to a static [`ModuleDescriptor`]:
//!
//! ```c
//! typedef struct pnet_buffer {                       /* revision 2 */
//!     const uint8_t *name; size_t name_len;          /* the memory-buffer's name, UTF-8, no NUL */
//!     void *ptr;                                     /* its bytes, aligned as declared */
//!     uint64_t size;                                 /* exactly its size in bytes */
//!     uint32_t read_only;                            /* 1: the module must not write to it */
//! } pnet_buffer;
//!
//! typedef struct pnet_call_context {
//!     void *host;                                    /* opaque, for the callbacks */
//!     int32_t (*is_cancelled)(const struct pnet_call_context *ctx);  /* 1 when cancelled */
//!     const uint8_t *worker_name; size_t worker_name_len;            /* UTF-8, no NUL */
//!     uint64_t task;                                 /* the task's id, for logs */
//!     /* revision 2 (appended: libraries of revision 1 read only the fields above) */
//!     const pnet_buffer *buffers; size_t buffer_count;  /* the call's memory buffers */
//!     const uint8_t *hostname; size_t hostname_len;      /* UTF-8, no NUL */
//!     /* revision 3: appends one log line (UTF-8, no newline needed) to the task's log;
//!        null when the host keeps no log */
//!     void (*log)(const struct pnet_call_context *ctx, const uint8_t *ptr, size_t len);
//! } pnet_call_context;
//!
//! typedef struct pnet_out_buffer {
//!     void *host;                                    /* opaque, for the callback */
//!     /* appends len bytes at ptr to the buffer; may be called any number of times */
//!     void (*write)(struct pnet_out_buffer *out, const uint8_t *ptr, size_t len);
//! } pnet_out_buffer;
//!
//! typedef int32_t (*pnet_call)(const pnet_call_context *ctx,
//!                              const uint8_t *input, size_t input_len,
//!                              pnet_out_buffer *out);
//!
//! typedef struct { const char *name; pnet_call call; } pnet_function;   /* name: NUL-terminated */
//!
//! typedef struct pnet_module_descriptor {
//!     uint32_t abi_version;                          /* PNET_ABI_VERSION = 1 */
//!     const char *name;                              /* the module's name, NUL-terminated */
//!     const pnet_function *functions; size_t function_count;
//! } pnet_module_descriptor;
//! ```
//!
//! A call gets the JSON object of its inputs (UTF-8, port name → value in the JSON encoding of
//! values, see `MODULES.md`), and returns 0 after writing the JSON object of its outputs to
//! `out`, or non-zero after writing an error message (UTF-8 text) to `out`. The host owns
//! every buffer: no allocation crosses the boundary. Calls of one worker come one at a time
//! from one thread, but not always the same thread; the library stays loaded until the
//! worker exits. A long call should poll `is_cancelled` now and then and return early when it
//! answers 1 (what it returns then is ignored).
//!
//! Revision 2 appended the call's memory buffers (`memory-buffer` elements of the function,
//! filled by the `memory-get` transfers before the call and read by the `memory-put`
//! transfers after it; each lives from the call's start to its end, with a guard page behind
//! it: writing past it stops the worker) and the host's name (the worker's host identity, see
//! `gspc-worker --host-id`). The version stays 1: libraries of revision 1 keep working, since
//! they read only the fields they know. A library of revision 2 needs a worker of revision 2
//! when it uses the new fields (workers and modules of one installation always match).
//!
//! Revision 3 appended `log`: a line for the task's log (`gspc logs`, `gspc-run --logs`; the
//! worker keeps the last 64 KiB of a task's log). A library must check it for null (a host of
//! revision 2 does not have it; [`Context::log`] does).
//!
//! A module with several implementations for several targets (`<modules>` with `target`s)
//! exports the implementation for target `t` of function `f` as `f@t`: the worker looks for
//! `f@t` first, then for `f` (see `MODULES.md`).
//!
//! # From Rust
//!
//! ```
//! use pnet_module_sdk::{Context, Inputs, Outputs};
//!
//! fn square(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
//!     let n = inputs.get_i64("n")?;
//!     let r = n.checked_mul(n).ok_or("overflow")?;
//!     Ok(Outputs::new().set("r", r))
//! }
//!
//! pnet_module_sdk::export_module! {
//!     name: "arith",
//!     functions: { "square" => square },
//! }
//! # fn main() {}
//! ```
//!
//! in a crate with `crate-type = ["cdylib"]` and `name = "arith"` in its `[lib]` section
//! gives `libarith.so`. Panics in module functions are caught at the boundary and become
//! errors (unless the library is built with `panic = "abort"`).

use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

pub use serde_json;
use serde_json::{Map, Value as Json};

/// The ABI version this SDK implements.
pub const ABI_VERSION: u32 = 1;

/// The revision of the ABI: 2 appended the memory buffers and the hostname to
/// [`CallContext`], 3 the log callback (compatible: a library of an older revision still
/// works).
pub const ABI_REVISION: u32 = 3;

/// A task's log line callback (ABI revision 3).
pub type LogFn = unsafe extern "C" fn(ctx: *const CallContext, ptr: *const u8, len: usize);

/// The separator between a function's name and its target in an exported name (`f@gpu`).
pub const TARGET_SEPARATOR: char = '@';

/// The name of the symbol a module library exports.
pub const ENTRY_SYMBOL: &str = "pnet_module_v1";

/// The type of the exported entry point.
pub type EntryFn = unsafe extern "C" fn() -> *const ModuleDescriptor;

/// A module function, see the crate documentation.
pub type CallFn = unsafe extern "C" fn(
    ctx: *const CallContext,
    input: *const u8,
    input_len: usize,
    out: *mut OutBuffer,
) -> i32;

/// What the host hands to a call.
#[repr(C)]
pub struct CallContext {
    /// Opaque host data for the callback.
    pub host: *mut c_void,
    /// Returns 1 when the task has been cancelled, else 0.
    pub is_cancelled: unsafe extern "C" fn(ctx: *const CallContext) -> i32,
    /// The worker's name (UTF-8, not NUL-terminated).
    pub worker_name: *const u8,
    pub worker_name_len: usize,
    /// The task's id.
    pub task: u64,
    // ---- revision 2
    /// The call's memory buffers (`buffer_count` of them; null when there are none).
    pub buffers: *const BufferRef,
    pub buffer_count: usize,
    /// The host's name (the worker's host identity; UTF-8, not NUL-terminated).
    pub hostname: *const u8,
    pub hostname_len: usize,
    // ---- revision 3
    /// Appends a line to the task's log (None: the host keeps no log).
    pub log: Option<LogFn>,
}

/// One memory buffer of a call (ABI revision 2).
#[repr(C)]
pub struct BufferRef {
    /// The buffer's name (UTF-8, not NUL-terminated).
    pub name: *const u8,
    pub name_len: usize,
    /// The buffer's bytes, aligned as declared.
    pub ptr: *mut c_void,
    /// Its size in bytes.
    pub size: u64,
    /// 1: the module must not write to it.
    pub read_only: u32,
}

/// Where a call writes its outputs (or its error message).
#[repr(C)]
pub struct OutBuffer {
    /// Opaque host data for the callback.
    pub host: *mut c_void,
    /// Appends `len` bytes at `ptr`.
    pub write: unsafe extern "C" fn(out: *mut OutBuffer, ptr: *const u8, len: usize),
}

/// One exported function.
#[repr(C)]
pub struct FunctionDescriptor {
    /// NUL-terminated UTF-8.
    pub name: *const c_char,
    pub call: CallFn,
}

/// What `pnet_module_v1` returns.
#[repr(C)]
pub struct ModuleDescriptor {
    pub abi_version: u32,
    /// NUL-terminated UTF-8.
    pub name: *const c_char,
    pub functions: *const FunctionDescriptor,
    pub function_count: usize,
}

// SAFETY: descriptors are immutable statics that point to static, immutable data (string
// literals and function pointers); sharing them between threads is fine.
unsafe impl Sync for FunctionDescriptor {}
// SAFETY: as above.
unsafe impl Sync for ModuleDescriptor {}

/// What a module function sees of its call.
pub struct Context<'a> {
    raw: &'a CallContext,
    /// Per buffer: 0 = not lent, 1 = lent shared, 2 = lent mutably (Rust's aliasing rules
    /// across calls of [`Context::buffer`] and [`Context::buffer_mut`]).
    lent: std::cell::RefCell<Vec<u8>>,
}

/// A string given by the host as pointer and length (empty when null or not UTF-8).
///
/// # Safety
/// `ptr` must be null or point to `len` readable bytes that outlive `'a`.
unsafe fn host_str<'a>(ptr: *const u8, len: usize) -> &'a str {
    if ptr.is_null() {
        return "";
    }
    // SAFETY: by the caller's guarantee.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    std::str::from_utf8(bytes).unwrap_or("")
}

impl<'a> Context<'a> {
    /// The context of a call, from the host's raw context.
    ///
    /// # Safety
    /// `raw` must be a context as the ABI describes (revision 2), valid for `'a`, whose
    /// buffers are not accessed otherwise during `'a`.
    pub unsafe fn from_raw(raw: &'a CallContext) -> Context<'a> {
        Context {
            raw,
            lent: std::cell::RefCell::new(vec![0; raw.buffer_count]),
        }
    }

    /// The raw buffers of the call.
    fn raw_buffers(&self) -> &[BufferRef] {
        if self.raw.buffers.is_null() || self.raw.buffer_count == 0 {
            return &[];
        }
        // SAFETY: the host provides `buffer_count` descriptions for the call's duration.
        unsafe { std::slice::from_raw_parts(self.raw.buffers, self.raw.buffer_count) }
    }

    /// The index of buffer `name`.
    fn buffer_index(&self, name: &str) -> Option<usize> {
        self.raw_buffers().iter().position(|b| {
            // SAFETY: the host provides the names for the call's duration.
            (unsafe { host_str(b.name, b.name_len) }) == name
        })
    }

    /// The names of the call's memory buffers, in declaration order.
    pub fn buffer_names(&self) -> Vec<&str> {
        self.raw_buffers()
            .iter()
            // SAFETY: the host provides the names for the call's duration.
            .map(|b| unsafe { host_str(b.name, b.name_len) })
            .collect()
    }

    /// The bytes of memory buffer `name` (filled by the `memory-get` transfers before the
    /// call). `None` when there is no such buffer, or when it is lent mutably already.
    pub fn buffer(&self, name: &str) -> Option<&[u8]> {
        let i = self.buffer_index(name)?;
        let mut lent = self.lent.borrow_mut();
        if lent.get(i).is_some_and(|l| *l == 2) {
            return None;
        }
        let b = &self.raw_buffers()[i];
        let size = usize::try_from(b.size).ok()?;
        if let Some(l) = lent.get_mut(i) {
            *l = 1;
        }
        if size == 0 || b.ptr.is_null() {
            return Some(&[]);
        }
        // SAFETY: the host provides `size` bytes at `ptr` for the call's duration; it is not
        // lent mutably (checked above).
        Some(unsafe { std::slice::from_raw_parts(b.ptr.cast::<u8>(), size) })
    }

    /// The bytes of memory buffer `name` for writing (the `memory-put` transfers read them
    /// after the call). `None` when there is no such buffer, when it is read-only, or when it
    /// is lent already (a buffer can be had mutably once per call).
    #[allow(clippy::mut_from_ref)]
    pub fn buffer_mut(&self, name: &str) -> Option<&mut [u8]> {
        let i = self.buffer_index(name)?;
        let mut lent = self.lent.borrow_mut();
        let b = &self.raw_buffers()[i];
        if b.read_only != 0 || lent.get(i).is_none_or(|l| *l != 0) {
            return None;
        }
        let size = usize::try_from(b.size).ok()?;
        lent[i] = 2;
        if size == 0 || b.ptr.is_null() {
            return Some(&mut []);
        }
        // SAFETY: the host provides `size` writable bytes at `ptr` for the call's duration;
        // this is the only reference to them (checked above).
        Some(unsafe { std::slice::from_raw_parts_mut(b.ptr.cast::<u8>(), size) })
    }

    /// The name of the worker's host (its host identity: the hostname, or `--host-id`).
    pub fn hostname(&self) -> &str {
        // SAFETY: the host provides the name's bytes for the call's duration.
        unsafe { host_str(self.raw.hostname, self.raw.hostname_len) }
    }

    /// Whether the task has been cancelled: a long computation should check now and then and
    /// return (anything) early.
    pub fn is_cancelled(&self) -> bool {
        // SAFETY: the host provides a valid callback and context for the call's duration.
        unsafe { (self.raw.is_cancelled)(self.raw) != 0 }
    }

    /// The worker's name.
    pub fn worker_name(&self) -> &str {
        // SAFETY: the host provides the name's bytes for the call's duration.
        unsafe { host_str(self.raw.worker_name, self.raw.worker_name_len) }
    }

    /// The task's id (for logs).
    pub fn task(&self) -> u64 {
        self.raw.task
    }

    /// Adds a line to the task's log (`gspc logs JOB TASK`, `gspc-run --logs DIR`; the worker
    /// keeps the last 64 KiB of a task's log). Does nothing on a host that keeps no log.
    pub fn log(&self, line: &str) {
        if let Some(log) = self.raw.log {
            // SAFETY: the host provides a valid callback and context for the call's duration;
            // `line` is `len` readable bytes.
            unsafe { log(self.raw, line.as_ptr(), line.len()) }
        }
    }
}

/// The inputs of a call: the JSON object of the input ports.
#[derive(Debug, Default)]
pub struct Inputs {
    map: Map<String, Json>,
}

impl Inputs {
    /// Inputs from a JSON object.
    pub fn new(map: Map<String, Json>) -> Inputs {
        Inputs { map }
    }

    /// The whole object.
    pub fn as_map(&self) -> &Map<String, Json> {
        &self.map
    }

    /// The JSON value of port `name`.
    pub fn get_json(&self, name: &str) -> Result<&Json, String> {
        self.map
            .get(name)
            .ok_or_else(|| format!("no input port `{name}`"))
    }

    fn typed<'a, T>(
        &'a self,
        name: &str,
        what: &str,
        f: impl FnOnce(&'a Json) -> Option<T>,
    ) -> Result<T, String> {
        let v = self.get_json(name)?;
        f(v).ok_or_else(|| format!("input `{name}`: expected {what}, found {v}"))
    }

    /// Port `name` as an unsigned integer.
    pub fn get_u64(&self, name: &str) -> Result<u64, String> {
        self.typed(name, "an unsigned integer", Json::as_u64)
    }

    /// Port `name` as a signed integer.
    pub fn get_i64(&self, name: &str) -> Result<i64, String> {
        self.typed(name, "an integer", Json::as_i64)
    }

    /// Port `name` as a number (`"NaN"`, `"Infinity"` and `"-Infinity"` included).
    pub fn get_f64(&self, name: &str) -> Result<f64, String> {
        self.typed(name, "a number", |v| match v {
            Json::String(s) => match s.as_str() {
                "NaN" => Some(f64::NAN),
                "Infinity" => Some(f64::INFINITY),
                "-Infinity" => Some(f64::NEG_INFINITY),
                _ => None,
            },
            _ => v.as_f64(),
        })
    }

    /// Port `name` as a string.
    pub fn get_str(&self, name: &str) -> Result<&str, String> {
        self.typed(name, "a string", Json::as_str)
    }

    /// Port `name` as a boolean.
    pub fn get_bool(&self, name: &str) -> Result<bool, String> {
        self.typed(name, "true or false", Json::as_bool)
    }
}

/// The outputs of a call: a builder of the JSON object of the output ports.
#[derive(Debug, Default)]
pub struct Outputs {
    map: Map<String, Json>,
}

impl Outputs {
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// Sets output port `name` (control ports take `()` or `Json::Null`).
    pub fn set(mut self, name: &str, value: impl Into<Json>) -> Outputs {
        self.map.insert(name.to_string(), value.into());
        self
    }

    /// Sets output port `name` to a number, encoding NaN and the infinities as the strings
    /// `"NaN"`, `"Infinity"` and `"-Infinity"` (`set` would make them `null`).
    pub fn set_f64(self, name: &str, x: f64) -> Outputs {
        let json = match serde_json::Number::from_f64(x) {
            Some(n) => Json::Number(n),
            None if x.is_nan() => Json::from("NaN"),
            None if x > 0.0 => Json::from("Infinity"),
            None => Json::from("-Infinity"),
        };
        self.set(name, json)
    }

    /// Sets output port `name` in place.
    pub fn insert(&mut self, name: &str, value: impl Into<Json>) {
        self.map.insert(name.to_string(), value.into());
    }

    /// The whole object.
    pub fn into_map(self) -> Map<String, Json> {
        self.map
    }
}

/// The signature of a module function written in Rust.
pub type ModuleFn = fn(&Context, &Inputs) -> Result<Outputs, String>;

/// Calls a Rust module function for the C ABI: decodes the inputs, catches panics, writes the
/// outputs or the error message. Used by [`export_module!`].
///
/// # Safety
///
/// The arguments must be as the ABI describes: a valid context and output buffer, and
/// `input_len` readable bytes at `input`.
pub unsafe fn invoke(
    ctx: *const CallContext,
    input: *const u8,
    input_len: usize,
    out: *mut OutBuffer,
    f: ModuleFn,
) -> i32 {
    let write = |bytes: &[u8]| {
        if !out.is_null() {
            // SAFETY: the host's buffer and callback are valid for the call's duration.
            unsafe { ((*out).write)(out, bytes.as_ptr(), bytes.len()) }
        }
    };
    if ctx.is_null() || (input.is_null() && input_len > 0) {
        write(b"invalid call: null context or input");
        return 2;
    }
    let result = catch_unwind(AssertUnwindSafe(|| {
        let bytes = if input_len == 0 {
            &[][..]
        } else {
            // SAFETY: the caller guarantees `input_len` bytes at `input`.
            unsafe { std::slice::from_raw_parts(input, input_len) }
        };
        let inputs = match serde_json::from_slice::<Json>(bytes) {
            Ok(Json::Object(map)) => Inputs::new(map),
            Ok(other) => return Err(format!("inputs: expected a JSON object, found {other}")),
            Err(e) => return Err(format!("inputs: malformed JSON: {e}")),
        };
        // SAFETY: checked non-null above; valid for the call's duration, as are its buffers.
        let context = unsafe { Context::from_raw(&*ctx) };
        let outputs = f(&context, &inputs)?;
        serde_json::to_vec(&Json::Object(outputs.into_map()))
            .map_err(|e| format!("outputs: cannot encode: {e}"))
    }));
    match result {
        Ok(Ok(json)) => {
            write(&json);
            0
        }
        Ok(Err(message)) => {
            write(message.as_bytes());
            1
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_string());
            write(format!("module function panicked: {what}").as_bytes());
            2
        }
    }
}

/// Exports a native module: the `pnet_module_v1` symbol and its descriptor.
///
/// ```text
/// pnet_module_sdk::export_module! {
///     name: "arith",
///     functions: { "square" => square, "div" => div },
/// }
/// ```
///
/// Each function is a [`ModuleFn`]: `fn(&Context, &Inputs) -> Result<Outputs, String>`.
#[macro_export]
macro_rules! export_module {
    (name: $name:literal, functions: { $($fname:literal => $func:path),* $(,)? } $(,)?) => {
        #[doc(hidden)]
        pub static __PNET_MODULE_FUNCTIONS: &[$crate::FunctionDescriptor] = &[
            $($crate::FunctionDescriptor {
                name: concat!($fname, "\0").as_ptr().cast(),
                call: {
                    unsafe extern "C" fn __pnet_call(
                        ctx: *const $crate::CallContext,
                        input: *const u8,
                        input_len: usize,
                        out: *mut $crate::OutBuffer,
                    ) -> i32 {
                        // SAFETY: the host calls with the arguments the ABI describes.
                        unsafe { $crate::invoke(ctx, input, input_len, out, $func) }
                    }
                    __pnet_call
                },
            }),*
        ];

        #[doc(hidden)]
        pub static __PNET_MODULE_DESCRIPTOR: $crate::ModuleDescriptor = $crate::ModuleDescriptor {
            abi_version: $crate::ABI_VERSION,
            name: concat!($name, "\0").as_ptr().cast(),
            functions: __PNET_MODULE_FUNCTIONS.as_ptr(),
            function_count: __PNET_MODULE_FUNCTIONS.len(),
        };

        /// The module's entry point (pnet module ABI version 1).
        #[unsafe(no_mangle)]
        pub extern "C" fn pnet_module_v1() -> *const $crate::ModuleDescriptor {
            &__PNET_MODULE_DESCRIPTOR
        }
    };
}

/// The host side: reading descriptors and calling functions, for workers and tests.
pub mod host {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A function of a loaded module.
    #[derive(Clone, Debug)]
    pub struct Function {
        pub name: String,
        pub call: CallFn,
    }

    /// A module descriptor read into owned data.
    #[derive(Clone, Debug)]
    pub struct Module {
        pub name: String,
        pub functions: Vec<Function>,
    }

    impl Module {
        /// The function called `name`.
        pub fn function(&self, name: &str) -> Option<&Function> {
            self.functions.iter().find(|f| f.name == name)
        }

        /// The implementation of function `name` for `target`: `name@target` when the
        /// module exports it, else `name` (the implementation for any target).
        pub fn function_for(&self, name: &str, target: Option<&str>) -> Option<&Function> {
            target
                .and_then(|t| self.function(&target_name(name, t)))
                .or_else(|| self.function(name))
        }
    }

    /// Reads a descriptor, checking its ABI version and names.
    ///
    /// # Safety
    ///
    /// `desc` must be null or point to a descriptor laid out as the ABI describes, whose
    /// pointers are valid.
    pub unsafe fn read_descriptor(desc: *const ModuleDescriptor) -> Result<Module, String> {
        if desc.is_null() {
            return Err("pnet_module_v1 returned a null descriptor".into());
        }
        // SAFETY: non-null, and valid by the caller's guarantee.
        let d = unsafe { &*desc };
        if d.abi_version != ABI_VERSION {
            return Err(format!(
                "module ABI version {} (this worker speaks version {ABI_VERSION})",
                d.abi_version
            ));
        }
        // SAFETY: the caller guarantees valid NUL-terminated names.
        let name = unsafe { c_string(d.name) }.ok_or("the module's name is not valid UTF-8")?;
        let mut functions = Vec::with_capacity(d.function_count);
        if d.function_count > 0 {
            if d.functions.is_null() {
                return Err("the function table is null".into());
            }
            // SAFETY: the caller guarantees `function_count` descriptors at `functions`.
            let table = unsafe { std::slice::from_raw_parts(d.functions, d.function_count) };
            for f in table {
                // SAFETY: as above.
                let fname = unsafe { c_string(f.name) }
                    .ok_or("a function name is null or not valid UTF-8")?;
                functions.push(Function {
                    name: fname,
                    call: f.call,
                });
            }
        }
        Ok(Module { name, functions })
    }

    /// # Safety
    /// `p` must be null or a valid NUL-terminated string.
    unsafe fn c_string(p: *const c_char) -> Option<String> {
        if p.is_null() {
            return None;
        }
        // SAFETY: by the caller's guarantee.
        unsafe { CStr::from_ptr(p) }
            .to_str()
            .ok()
            .map(str::to_string)
    }

    struct Host<'a> {
        cancelled: &'a AtomicBool,
        log: Option<&'a std::cell::RefCell<LogTail>>,
    }

    /// The tail of a task's log: at most `limit` bytes (cut at a line or character boundary
    /// when it is read), counting what was cut.
    #[derive(Clone, Debug, Default)]
    pub struct LogTail {
        bytes: Vec<u8>,
        dropped: u64,
        limit: usize,
    }

    impl LogTail {
        pub fn new(limit: usize) -> LogTail {
            LogTail {
                bytes: Vec::new(),
                dropped: 0,
                limit,
            }
        }

        pub fn is_empty(&self) -> bool {
            self.bytes.is_empty()
        }

        /// Appends bytes.
        pub fn push(&mut self, b: &[u8]) {
            self.bytes.extend_from_slice(b);
            if self.bytes.len() > 2 * self.limit.max(1) {
                self.cut();
            }
        }

        /// Counts `n` bytes cut before what is pushed next.
        pub fn skipped(&mut self, n: u64) {
            self.dropped += n;
        }

        /// Appends a line (and a newline if it has none).
        pub fn line(&mut self, b: &[u8]) {
            self.push(b);
            if !b.ends_with(b"\n") {
                self.push(b"\n");
            }
        }

        fn cut(&mut self) {
            if self.bytes.len() > self.limit {
                let n = self.bytes.len() - self.limit;
                self.bytes.drain(..n);
                self.dropped += n as u64;
            }
        }

        /// The text kept (invalid UTF-8 replaced) and the number of bytes cut before it;
        /// empties the tail.
        pub fn take(&mut self) -> (String, u64) {
            self.cut();
            // Start at a character boundary.
            let skip = self
                .bytes
                .iter()
                .take(3)
                .take_while(|&&b| b & 0xC0 == 0x80)
                .count();
            let text = String::from_utf8_lossy(&self.bytes[skip..]).into_owned();
            let dropped = self.dropped + skip as u64;
            self.bytes.clear();
            self.dropped = 0;
            (text, dropped)
        }
    }

    unsafe extern "C" fn log(ctx: *const CallContext, ptr: *const u8, len: usize) {
        if ctx.is_null() || (ptr.is_null() && len > 0) {
            return;
        }
        // SAFETY: `host` is the `Host` of the call in progress (see `call_with`).
        let host = unsafe { &*((*ctx).host as *const Host<'_>) };
        let Some(tail) = host.log else {
            return;
        };
        let bytes = if len == 0 {
            &[][..]
        } else {
            // SAFETY: the module guarantees `len` readable bytes at `ptr`.
            unsafe { std::slice::from_raw_parts(ptr, len) }
        };
        if let Ok(mut t) = tail.try_borrow_mut() {
            t.line(bytes);
        }
    }

    unsafe extern "C" fn is_cancelled(ctx: *const CallContext) -> i32 {
        // SAFETY: `host` is the `Host` of the call in progress (see `call`).
        let host = unsafe { &*((*ctx).host as *const Host<'_>) };
        i32::from(host.cancelled.load(Ordering::Relaxed))
    }

    unsafe extern "C" fn write(out: *mut OutBuffer, ptr: *const u8, len: usize) {
        if out.is_null() || (ptr.is_null() && len > 0) {
            return;
        }
        // SAFETY: `host` is the output vector of the call in progress (see `call`).
        let buf = unsafe { &mut *((*out).host as *mut Vec<u8>) };
        if len > 0 {
            // SAFETY: the module guarantees `len` readable bytes at `ptr`.
            buf.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr, len) });
        }
    }

    /// A memory buffer handed to a call.
    #[derive(Clone, Copy, Debug)]
    pub struct Buffer<'a> {
        pub name: &'a str,
        pub ptr: *mut u8,
        pub size: u64,
        pub read_only: bool,
    }

    /// What a call gets besides its inputs.
    #[derive(Clone, Copy, Debug)]
    pub struct CallInfo<'a> {
        pub worker_name: &'a str,
        /// The host identity (hostname or `--host-id`).
        pub hostname: &'a str,
        pub task: u64,
        pub cancelled: &'a AtomicBool,
        pub buffers: &'a [Buffer<'a>],
        /// Where the call's log lines go (None: nowhere; the call sees a null `log`).
        pub log: Option<&'a std::cell::RefCell<LogTail>>,
    }

    /// Calls a module function: `input` is the JSON object of the inputs; on return, `out`
    /// holds what the function wrote (cleared first). Returns the function's status (0 =
    /// outputs, else an error message). Without buffers and with an empty hostname; see
    /// [`call_with`].
    ///
    /// # Safety
    ///
    /// `call` must be a function following the ABI, from a library that is still loaded.
    pub unsafe fn call(
        call: CallFn,
        worker_name: &str,
        task: u64,
        cancelled: &AtomicBool,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> i32 {
        let info = CallInfo {
            worker_name,
            hostname: "",
            task,
            cancelled,
            buffers: &[],
            log: None,
        };
        // SAFETY: by the caller's guarantee.
        unsafe { call_with(call, &info, input, out) }
    }

    /// Calls a module function with the memory buffers and hostname of `info` (ABI revision
    /// 2); otherwise as [`call`].
    ///
    /// # Safety
    ///
    /// `call` must be a function following the ABI, from a library that is still loaded;
    /// every buffer's `ptr` must point to `size` bytes, writable unless `read_only`, that
    /// nothing else touches during the call.
    pub unsafe fn call_with(
        call: CallFn,
        info: &CallInfo<'_>,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> i32 {
        out.clear();
        let host = Host {
            cancelled: info.cancelled,
            log: info.log,
        };
        let refs: Vec<BufferRef> = info
            .buffers
            .iter()
            .map(|b| BufferRef {
                name: b.name.as_ptr(),
                name_len: b.name.len(),
                ptr: b.ptr.cast(),
                size: b.size,
                read_only: u32::from(b.read_only),
            })
            .collect();
        let ctx = CallContext {
            host: &host as *const Host<'_> as *mut c_void,
            is_cancelled,
            worker_name: info.worker_name.as_ptr(),
            worker_name_len: info.worker_name.len(),
            task: info.task,
            buffers: if refs.is_empty() {
                std::ptr::null()
            } else {
                refs.as_ptr()
            },
            buffer_count: refs.len(),
            hostname: info.hostname.as_ptr(),
            hostname_len: info.hostname.len(),
            log: info.log.map(|_| log as LogFn),
        };
        let mut buffer = OutBuffer {
            host: out as *mut Vec<u8> as *mut c_void,
            write,
        };
        // SAFETY: valid context and buffer for the call's duration; `call` follows the ABI by
        // the caller's guarantee.
        unsafe { call(&ctx, input.as_ptr(), input.len(), &mut buffer) }
    }

    /// The exported name of the implementation of `function` for `target` (`f@t`).
    pub fn target_name(function: &str, target: &str) -> String {
        format!("{function}{TARGET_SEPARATOR}{target}")
    }
}

#[cfg(test)]
mod tests;
