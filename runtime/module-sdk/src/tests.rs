use std::sync::atomic::AtomicBool;

use super::host::{self, Module};
use super::*;

fn square(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let n = inputs.get_i64("n")?;
    Ok(Outputs::new().set("r", n.checked_mul(n).ok_or("overflow")?))
}

fn describe(ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    Ok(Outputs::new()
        .set("worker", ctx.worker_name())
        .set("task", ctx.task())
        .set("cancelled", ctx.is_cancelled())
        .set("u", inputs.get_u64("u")?)
        .set_f64("f", inputs.get_f64("f")?)
        .set("s", inputs.get_str("s")?)
        .set("b", inputs.get_bool("b")?)
        .set("j", inputs.get_json("j")?.clone())
        .set("y", ()))
}

fn boom(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let v: Vec<u64> = Vec::new();
    let i = inputs.get_u64("i")? as usize;
    Ok(Outputs::new().set("never", v[i]))
}

/// Adds `delta` to every byte of buffer `data`, sums read-only buffer `src`, and reports
/// what the context lends.
fn buffers(ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let delta = u8::try_from(inputs.get_u64("delta")?).map_err(|_| "delta > 255")?;
    let sum: u64 = ctx
        .buffer("src")
        .ok_or("no buffer src")?
        .iter()
        .map(|b| u64::from(*b))
        .sum();
    // Read-only: never mutably.
    let src_mut = ctx.buffer_mut("src").is_some();
    let data = ctx.buffer_mut("data").ok_or("no buffer data")?;
    for b in data.iter_mut() {
        *b = b.wrapping_add(delta);
    }
    // Lent mutably already: neither again nor shared.
    let again = ctx.buffer_mut("data").is_some() || ctx.buffer("data").is_some();
    Ok(Outputs::new()
        .set("sum", sum)
        .set("src_mut", src_mut)
        .set("again", again)
        .set("missing", ctx.buffer("nope").is_some())
        .set("names", ctx.buffer_names().join(","))
        .set("host", ctx.hostname()))
}

/// Logs `n` lines of 1 KiB (with their newlines).
fn chatty(ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    for i in 0..inputs.get_u64("n")? {
        ctx.log(&format!("{i:04} {}", "x".repeat(1018)));
    }
    Ok(Outputs::new())
}

fn gpu(_ctx: &Context, _inputs: &Inputs) -> Result<Outputs, String> {
    Ok(Outputs::new().set("impl", "gpu"))
}

crate::export_module! {
    name: "testmod",
    functions: {
        "square" => square,
        "describe" => describe,
        "boom" => boom,
        "buffers" => buffers,
        "square@gpu" => gpu,
        "chatty" => chatty,
    },
}

fn module() -> Module {
    // SAFETY: the descriptor made by the macro above.
    unsafe { host::read_descriptor(pnet_module_v1()) }.unwrap()
}

fn run(function: &str, input: &str, cancelled: bool) -> (i32, String) {
    let m = module();
    let f = m.function(function).unwrap();
    let flag = AtomicBool::new(cancelled);
    let mut out = vec![1, 2, 3];
    // SAFETY: a function of this test binary's module.
    let status = unsafe { host::call(f.call, "w-1", 42, &flag, input.as_bytes(), &mut out) };
    (status, String::from_utf8(out).unwrap())
}

#[test]
fn log_lines_reach_the_task_log_and_keep_their_tail() {
    let m = module();
    let f = m.function("chatty").unwrap();
    let flag = AtomicBool::new(false);
    let tail = std::cell::RefCell::new(host::LogTail::new(64 * 1024));
    let info = host::CallInfo {
        worker_name: "w",
        hostname: "h",
        task: 1,
        cancelled: &flag,
        buffers: &[],
        log: Some(&tail),
    };
    let mut out = Vec::new();
    // SAFETY: a function of this test binary's module.
    let status = unsafe { host::call_with(f.call, &info, br#"{"n": 3}"#, &mut out) };
    assert_eq!(status, 0);
    let (text, dropped) = tail.borrow_mut().take();
    assert_eq!((text.lines().count(), dropped), (3, 0));
    assert!(text.starts_with("0000 xxx") && text.ends_with("x\n"));
    // 200 lines of 1 KiB: the last 64 KiB are kept.
    // SAFETY: as above.
    let status = unsafe { host::call_with(f.call, &info, br#"{"n": 200}"#, &mut out) };
    assert_eq!(status, 0);
    let (text, dropped) = tail.borrow_mut().take();
    assert_eq!(text.len(), 64 * 1024);
    assert_eq!(dropped, 200 * 1024 - 64 * 1024);
    assert!(text.ends_with(&format!("0199 {}\n", "x".repeat(1018))));
    // Without a log (the plain entry point), logging does nothing.
    assert_eq!(run("chatty", r#"{"n": 2}"#, false), (0, "{}".into()));
}

#[test]
fn descriptor_lists_the_functions() {
    let m = module();
    assert_eq!(m.name, "testmod");
    let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "square",
            "describe",
            "boom",
            "buffers",
            "square@gpu",
            "chatty"
        ]
    );
    assert!(m.function("nope").is_none());
}

#[test]
fn implementations_for_targets_are_found_by_suffix() {
    let m = module();
    assert_eq!(host::target_name("f", "gpu"), "f@gpu");
    let name = |t: Option<&str>, f: &str| m.function_for(f, t).map(|f| f.name.clone());
    assert_eq!(name(Some("gpu"), "square").as_deref(), Some("square@gpu"));
    assert_eq!(name(Some("cpu"), "square").as_deref(), Some("square"));
    assert_eq!(name(None, "square").as_deref(), Some("square"));
    assert_eq!(name(Some("gpu"), "nope"), None);
}

#[test]
fn buffers_and_hostname_reach_the_module() {
    let m = module();
    let f = m.function("buffers").unwrap();
    let mut data = vec![1u8, 2, 255];
    let mut src = vec![10u8, 20, 30, 40];
    let bufs = [
        host::Buffer {
            name: "data",
            ptr: data.as_mut_ptr(),
            size: data.len() as u64,
            read_only: false,
        },
        host::Buffer {
            name: "src",
            ptr: src.as_mut_ptr(),
            size: src.len() as u64,
            read_only: true,
        },
        host::Buffer {
            name: "empty",
            ptr: std::ptr::null_mut(),
            size: 0,
            read_only: false,
        },
    ];
    let flag = AtomicBool::new(false);
    let info = host::CallInfo {
        worker_name: "w",
        hostname: "node-7",
        task: 3,
        cancelled: &flag,
        buffers: &bufs,
        log: None,
    };
    let mut out = Vec::new();
    // SAFETY: a function of this test binary's module; the buffers are the vectors above.
    let status = unsafe { host::call_with(f.call, &info, br#"{"delta": 2}"#, &mut out) };
    assert_eq!(
        (status, String::from_utf8(out).unwrap()),
        (
            0,
            r#"{"again":false,"host":"node-7","missing":false,"names":"data,src,empty","src_mut":false,"sum":100}"#
                .into()
        )
    );
    assert_eq!(data, [3, 4, 1]);
    assert_eq!(src, [10, 20, 30, 40]);
    // Without buffers (the revision 1 entry point): the module says so.
    assert_eq!(
        run("buffers", r#"{"delta": 1}"#, false),
        (1, "no buffer src".into())
    );
}

#[test]
fn calls_through_the_c_abi() {
    assert_eq!(
        run("square", r#"{"n": -7}"#, false),
        (0, r#"{"r":49}"#.into())
    );
    assert_eq!(
        run(
            "describe",
            r#"{"u": 18446744073709551615, "f": "-Infinity", "s": "é", "b": true, "j": [1, {"a": null}]}"#,
            true
        ),
        (
            0,
            r#"{"b":true,"cancelled":true,"f":"-Infinity","j":[1,{"a":null}],"s":"é","task":42,"u":18446744073709551615,"worker":"w-1","y":null}"#
                .into()
        )
    );
}

#[test]
fn errors_are_messages() {
    assert_eq!(
        run("square", r#"{"n": 4000000000}"#, false),
        (1, "overflow".into())
    );
    assert_eq!(
        run("square", r#"{"n": "3"}"#, false),
        (1, r#"input `n`: expected an integer, found "3""#.into())
    );
    assert_eq!(
        run("square", r#"{"m": 3}"#, false),
        (1, "no input port `n`".into())
    );
    assert_eq!(
        run("square", r#"[1]"#, false),
        (1, "inputs: expected a JSON object, found [1]".into())
    );
    let (status, message) = run("square", r#"{"n": "#, false);
    assert_eq!(status, 1);
    assert!(
        message.starts_with("inputs: malformed JSON: EOF"),
        "{message}"
    );
    assert_eq!(
        run("describe", r#"{"u": -1}"#, false),
        (
            1,
            "input `u`: expected an unsigned integer, found -1".into()
        )
    );
}

#[test]
fn panics_are_caught() {
    let (status, message) = run("boom", r#"{"i": 3}"#, false);
    assert_eq!(status, 2);
    assert!(
        message.starts_with("module function panicked: index out of bounds"),
        "{message}"
    );
}

#[test]
fn invalid_calls_do_not_crash() {
    let m = module();
    let f = m.function("square").unwrap();
    let mut out = Vec::new();
    let mut buffer = OutBuffer {
        host: &mut out as *mut Vec<u8> as *mut std::ffi::c_void,
        write: {
            unsafe extern "C" fn w(out: *mut OutBuffer, ptr: *const u8, len: usize) {
                // SAFETY: the test's vector and the module's bytes.
                unsafe {
                    let v = &mut *((*out).host as *mut Vec<u8>);
                    v.extend_from_slice(std::slice::from_raw_parts(ptr, len));
                }
            }
            w
        },
    };
    // SAFETY: a null context is answered with an error, without being read.
    let status = unsafe { (f.call)(std::ptr::null(), std::ptr::null(), 0, &mut buffer) };
    assert_eq!(status, 2);
    assert_eq!(out, b"invalid call: null context or input");
}

#[test]
fn descriptors_are_checked() {
    static BAD: ModuleDescriptor = ModuleDescriptor {
        abi_version: 99,
        name: c"bad".as_ptr(),
        functions: std::ptr::null(),
        function_count: 0,
    };
    // SAFETY: a valid descriptor of another version, and a null one.
    unsafe {
        assert_eq!(
            host::read_descriptor(&BAD).unwrap_err(),
            "module ABI version 99 (this worker speaks version 1)"
        );
        assert_eq!(
            host::read_descriptor(std::ptr::null()).unwrap_err(),
            "pnet_module_v1 returned a null descriptor"
        );
    }
}
