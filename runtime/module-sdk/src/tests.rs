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

crate::export_module! {
    name: "testmod",
    functions: {
        "square" => square,
        "describe" => describe,
        "boom" => boom,
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
fn descriptor_lists_the_functions() {
    let m = module();
    assert_eq!(m.name, "testmod");
    let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["square", "describe", "boom"]);
    assert!(m.function("nope").is_none());
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
