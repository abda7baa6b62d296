//! C++ modules: for a net whose `<module>`s carry C++ `<code>`, generates one C++ translation
//! unit per module (the wrapper code that converts tokens to and from C++ values and exports
//! the worker's module ABI, `pnet_module_v1`) and builds each into `lib<module>.so` with the
//! system's C++ compiler. See README.md for the type mapping and the value type.
//!
//! ```text
//! let modules = pnet_cxx::generate(&bundle)?;          // the C++ sources
//! pnet_cxx::build(&modules, out_dir, &options)?;       // lib<module>.so in out_dir
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pnet_bundle::{Body, Bundle, Function, Module, PortDir, SourceSpan};
use pnet_stdlib::{StructType, Type};

mod build;
mod flags;

pub use build::{BuildOptions, build, write_sources};
pub use flags::shell_words;

/// The support header every generated file includes (JSON, the value types, the ABI).
pub const SUPPORT_HEADER: &str = include_str!("../include/pnet_cxx.hpp");

/// The support header's file name.
pub const SUPPORT_HEADER_NAME: &str = "pnet_cxx.hpp";

/// A problem found while generating or building modules: the shared diagnostic, an error
/// with a stable code (`cxx-compiler-missing`, `cxx-compile-failed`, `cxx-unknown-port`,
/// `cxx-bad-signature`, `cxx-duplicate-function`, `cxx-io`), a message and a textual
/// [`Diagnostic::location`] (`file:line:col` of the module in the net, or of the compiler's
/// first error). `Display` gives `location: error[code]: message`.
pub use pnet_diagnostics::Diagnostic;

/// The error `code` with `message` at `location` (see [`Diagnostic`]).
pub fn diagnostic(
    code: &'static str,
    message: impl Into<String>,
    location: impl Into<String>,
) -> Diagnostic {
    Diagnostic::error(code, message).with_location(location)
}

/// The generated code of one module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedModule {
    /// The module's name (the library is `lib<name>.so`).
    pub name: String,
    /// The generated files: relative path and text (`<name>.cpp`).
    pub files: Vec<(PathBuf, String)>,
    /// The module's `<cxx flag>`s (as written; see [`shell_words`]).
    pub cxx_flags: Vec<String>,
    /// The module's `<ld flag>`s (as written).
    pub ld_flags: Vec<String>,
    /// The module's `<cinclude href>`s.
    pub cincludes: Vec<String>,
    /// Folders of the net files that define the module's functions (for relative cincludes).
    pub include_dirs: Vec<PathBuf>,
    /// `file:line:col` of the module's first function, for diagnostics.
    pub location: String,
}

/// Generates the C++ code of every module of `bundle` that has `<code>` (modules without
/// code are implemented elsewhere, e.g. command modules, and are left out). The net's files
/// are read from disk to place `#line` directives; see [`generate_with_sources`].
pub fn generate(bundle: &Bundle) -> Result<Vec<GeneratedModule>, Vec<Diagnostic>> {
    generate_with_sources(bundle, &|i| {
        bundle
            .files
            .get(i)
            .and_then(|f| std::fs::read_to_string(&f.path).ok())
    })
}

/// Like [`generate`], with the text of source file `i` of the bundle given by `source(i)`.
pub fn generate_with_sources(
    bundle: &Bundle,
    source: &dyn Fn(usize) -> Option<String>,
) -> Result<Vec<GeneratedModule>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    // Module name -> functions, in order of appearance.
    let mut groups: Vec<(String, Vec<(&Function, &Module)>)> = Vec::new();
    for f in &bundle.functions {
        let modules: Vec<&Module> = match &f.body {
            Body::Module(m) => vec![m],
            Body::Modules { modules, .. } => modules.iter().collect(),
            _ => continue,
        };
        for m in modules {
            if m.code.is_none() {
                continue;
            }
            match groups.iter_mut().find(|(n, _)| *n == m.name) {
                Some((_, fs)) => {
                    // One function per name and target (implementations for several
                    // targets are exported as `f@target`).
                    let same = fs.iter().find(|(_, other)| {
                        other.signature.function == m.signature.function && other.target == m.target
                    });
                    match same {
                        None => fs.push((f, m)),
                        Some((of, om)) => {
                            if om.code != m.code
                                || om.signature != m.signature
                                || port_types(of) != port_types(f)
                                || buffer_names(of) != buffer_names(f)
                            {
                                let target = match &m.target {
                                    Some(t) => format!(" for target `{t}`"),
                                    None => String::new(),
                                };
                                diags.push(diagnostic("cxx-duplicate-function", format!(
                                        "module `{}` has two different functions `{}`{target} (the other is at {})",
                                        m.name,
                                        m.signature.function,
                                        bundle.location(om.span)
                                    ), bundle.location(m.span)));
                            }
                        }
                    }
                }
                None => groups.push((m.name.clone(), vec![(f, m)])),
            }
        }
    }
    let mut sources: Vec<Option<Option<String>>> = vec![None; bundle.files.len()];
    let mut text_of = |file: usize| -> Option<String> {
        let slot = sources.get_mut(file)?;
        if slot.is_none() {
            *slot = Some(source(file));
        }
        slot.clone().flatten()
    };
    let mut out = Vec::new();
    for (name, functions) in &groups {
        match generate_module(bundle, name, functions, &mut text_of) {
            Ok(m) => out.push(m),
            Err(mut d) => diags.append(&mut d),
        }
    }
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(diags)
    }
}

fn buffer_names(f: &Function) -> Vec<(&str, bool)> {
    f.memory_buffers
        .iter()
        .map(|b| (b.name.as_str(), b.read_only))
        .collect()
}

/// The name under which an implementation is exported: `f`, or `f@target` for a target
/// (the worker looks for `f@target` first, then `f`).
pub fn exported_name(function: &str, target: Option<&str>) -> String {
    match target {
        Some(t) => format!("{function}@{t}"),
        None => function.to_string(),
    }
}

/// A C++ identifier for a target that keeps distinct targets distinct: letters and digits
/// stay, `_` doubles, anything else is `_x` and the hex digits of its UTF-8 bytes.
fn target_ident(t: &str) -> String {
    let mut out = String::from("target_");
    for c in t.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if c == '_' {
            out.push_str("__");
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("_x{b:02x}"));
            }
        }
    }
    out
}

fn port_types(f: &Function) -> Vec<(&str, PortDir, &Type)> {
    f.ports
        .iter()
        .map(|p| (p.name.as_str(), p.dir, &p.ty))
        .collect()
}

/// A C++ identifier made of `s` (other characters become `_`).
fn ident(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A C++ string literal.
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The C++ type of a static type.
pub fn cxx_type(t: &Type) -> String {
    match t {
        Type::Control => "::we::type::literal::control".into(),
        Type::Bool => "bool".into(),
        Type::Int => "int".into(),
        Type::Long => "long".into(),
        Type::UInt => "unsigned int".into(),
        Type::ULong => "unsigned long".into(),
        Type::Float => "float".into(),
        Type::Double => "double".into(),
        Type::Char => "char".into(),
        Type::String | Type::Shared(_) => "std::string".into(),
        Type::Bitset => "::gspc::pnet::type::bitsetofint::type".into(),
        Type::Bytearray => "::gspc::pnet::type::bytearray::type".into(),
        Type::Bigint => "::gspc::pnet::type::bigint::type".into(),
        Type::List(_) => "std::list<::gspc::pnet::type::value::value_type>".into(),
        Type::Set(_) => "std::set<::gspc::pnet::type::value::value_type>".into(),
        Type::Map(_, _) => "std::map<::gspc::pnet::type::value::value_type, \
                            ::gspc::pnet::type::value::value_type>"
            .into(),
        Type::Struct(s) => {
            let n = ident(&s.name);
            format!("::pnetc::type::{n}::{n}")
        }
        Type::Any => "::gspc::pnet::type::value::value_type".into(),
    }
}

/// The C++ expression of the run-time description (`pnet_cxx::tydesc`) of a type.
fn tydesc(t: &Type) -> String {
    let k = |name: &str| format!("::pnet_cxx::td(::pnet_cxx::kind::{name})");
    match t {
        Type::Control => k("control"),
        Type::Bool => k("bool_"),
        Type::Int => k("int_"),
        Type::Long => k("long_"),
        Type::UInt => k("uint_"),
        Type::ULong => k("ulong_"),
        Type::Float => k("float_"),
        Type::Double => k("double_"),
        Type::Char => k("char_"),
        Type::String => k("string"),
        Type::Shared(_) => k("shared"),
        Type::Bitset => k("bitset"),
        Type::Bytearray => k("bytearray"),
        Type::Bigint => k("bigint"),
        Type::List(e) => format!("::pnet_cxx::td(::pnet_cxx::kind::list, {{{}}})", tydesc(e)),
        Type::Set(e) => format!("::pnet_cxx::td(::pnet_cxx::kind::set, {{{}}})", tydesc(e)),
        Type::Map(a, b) => format!(
            "::pnet_cxx::td(::pnet_cxx::kind::map, {{{}, {}}})",
            tydesc(a),
            tydesc(b)
        ),
        Type::Struct(s) => {
            let fields: Vec<String> = s
                .fields
                .iter()
                .map(|(n, t)| format!("{{{}, {}}}", c_string(n), tydesc(t)))
                .collect();
            format!(
                "::pnet_cxx::td_struct({}, {{{}}})",
                c_string(&s.name),
                fields.join(", ")
            )
        }
        Type::Any => k("any"),
    }
}

/// Adds the struct types in `t` to `out` (dependencies first), once per name.
fn collect_structs(t: &Type, out: &mut Vec<std::sync::Arc<StructType>>) {
    match t {
        Type::List(e) | Type::Set(e) => collect_structs(e, out),
        Type::Map(a, b) => {
            collect_structs(a, out);
            collect_structs(b, out);
        }
        Type::Struct(s) => {
            if out.iter().any(|o| o.name == s.name) {
                return;
            }
            for (_, ft) in &s.fields {
                collect_structs(ft, out);
            }
            if !out.iter().any(|o| o.name == s.name) {
                out.push(s.clone());
            }
        }
        _ => {}
    }
}

/// Text with a running line count, for `#line` directives.
struct Writer {
    text: String,
    file: String,
}

impl Writer {
    fn line(&mut self, s: &str) {
        self.text.push_str(s);
        self.text.push('\n');
    }

    /// The number of the next line.
    fn next_line(&self) -> usize {
        self.text.matches('\n').count() + 1
    }

    fn restore_line(&mut self) {
        let n = self.next_line() + 1;
        let d = format!("#line {n} {}", c_string(&self.file));
        self.line(&d);
    }
}

/// Where a module's code starts in its source file: `(path, line)`.
fn code_line(
    bundle: &Bundle,
    span: SourceSpan,
    code: &str,
    text_of: &mut dyn FnMut(usize) -> Option<String>,
) -> Option<(String, u32)> {
    let file = bundle.files.get(span.file.index())?;
    let start = span.start as usize;
    let offset = text_of(span.file.index()).and_then(|text| {
        let rest = text.get(start..)?;
        if !code.trim().is_empty()
            && let Some(i) = rest.find(code)
        {
            return Some(start + i);
        }
        // The code was written with entities: start after `<code ...>`.
        let i = rest.find("<code")?;
        let j = rest[i..].find('>')?;
        let after = start + i + j + 1;
        Some(if text[after..].starts_with("<![CDATA[") {
            after + 9
        } else {
            after
        })
    });
    let offset = offset.unwrap_or(start);
    let (line, _) = file.line_col(offset as u32);
    Some((file.path.clone(), line))
}

/// Where the `<cinclude href="X"/>` of the module at `span` writes `X`: `(path, line,
/// column)` in its source file.
fn cinclude_location(
    bundle: &Bundle,
    span: SourceSpan,
    href: &str,
    text_of: &mut dyn FnMut(usize) -> Option<String>,
) -> Option<(String, u32, u32)> {
    let file = bundle.files.get(span.file.index())?;
    let text = text_of(span.file.index())?;
    let start = span.start as usize;
    let end = if span.end > span.start {
        (span.end as usize).min(text.len())
    } else {
        text.len()
    };
    let element = text.get(start..end)?;
    let value = ["\"", "'"].iter().find_map(|q| {
        let mut from = 0;
        while let Some(i) = element[from..].find("<cinclude") {
            let at = from + i;
            let close = element[at..].find('>').map_or(element.len(), |j| at + j);
            let tag = &element[at..close];
            if let Some(k) = tag.find(&format!("href={q}{href}{q}")) {
                return Some(at + k + "href=".len() + 1);
            }
            from = close;
        }
        None
    })?;
    let (line, col) = file.line_col((start + value) as u32);
    Some((file.path.clone(), line, col))
}

fn generate_module(
    bundle: &Bundle,
    name: &str,
    functions: &[(&Function, &Module)],
    text_of: &mut dyn FnMut(usize) -> Option<String>,
) -> Result<GeneratedModule, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let file_name = format!("{name}.cpp");
    let mut w = Writer {
        text: String::new(),
        file: file_name.clone(),
    };
    let ns = ident(name);
    let location = functions
        .first()
        .map(|(_, m)| bundle.location(m.span))
        .unwrap_or_default();

    let mut cincludes: Vec<String> = Vec::new();
    // Where each cinclude is written (file, line, column of its value), when found.
    let mut cinclude_at: Vec<Option<(String, u32, u32)>> = Vec::new();
    let mut cxx_flags: Vec<String> = Vec::new();
    let mut ld_flags: Vec<String> = Vec::new();
    let mut include_dirs: Vec<PathBuf> = Vec::new();
    let mut structs = Vec::new();
    for s in &bundle.structs {
        collect_structs(&Type::Struct(std::sync::Arc::new(s.clone())), &mut structs);
    }
    for (f, m) in functions {
        for p in &f.ports {
            collect_structs(&p.ty, &mut structs);
        }
        for c in &m.cincludes {
            if !cincludes.contains(c) {
                cincludes.push(c.clone());
                cinclude_at.push(cinclude_location(bundle, m.span, c, text_of));
            }
        }
        for (from, to) in [(&m.cxx_flags, &mut cxx_flags), (&m.ld_flags, &mut ld_flags)] {
            for x in from {
                if !to.contains(x) {
                    to.push(x.clone());
                }
            }
        }
        if let Some(file) = bundle.files.get(m.span.file.index()) {
            let dir = Path::new(&file.path)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            if !include_dirs.contains(&dir) {
                include_dirs.push(dir);
            }
        }
    }

    w.line(&format!(
        "// Generated by pnetc (pnet-cxx) for module `{name}`: do not edit."
    ));
    w.line(&format!("#include <{SUPPORT_HEADER_NAME}>"));
    w.line("");
    if !structs.is_empty() {
        w.line("// The net's struct types.");
    }
    for s in &structs {
        let n = ident(&s.name);
        w.line(&format!(
            "namespace pnetc {{ namespace type {{ namespace {n} {{"
        ));
        w.line(&format!("struct {n}"));
        w.line("{");
        for (fname, ft) in &s.fields {
            w.line(&format!("  {} {}{{}};", cxx_type(ft), ident(fname)));
        }
        w.line("};");
        w.line("} } }");
    }
    if !structs.is_empty() {
        w.line("namespace pnet_cxx {");
        for s in &structs {
            let n = ident(&s.name);
            let ty = format!("::pnetc::type::{n}::{n}");
            w.line(&format!(
                "inline void from_json(const json::value& v, {ty}& x, const tydesc&, const std::string& path);"
            ));
            w.line(&format!(
                "inline void to_json(std::string& out, const {ty}& x, const tydesc&);"
            ));
        }
        for s in &structs {
            let n = ident(&s.name);
            let ty = format!("::pnetc::type::{n}::{n}");
            w.line(&format!(
                "inline void from_json(const json::value& v, {ty}& x, const tydesc&, const std::string& path)"
            ));
            w.line("{");
            w.line(&format!(
                "  if (v.kind != json::value::object) mismatch(path, {}, v);",
                c_string(&format!("an object ({})", s.name))
            ));
            for (i, (fname, ft)) in s.fields.iter().enumerate() {
                w.line(&format!("  static const tydesc t{i} = {};", tydesc(ft)));
                w.line(&format!(
                    "  const json::value* f{i} = v.find({});",
                    c_string(fname)
                ));
                w.line(&format!(
                    "  if (f{i} == nullptr) throw error(path + {});",
                    c_string(&format!(": missing field `{fname}` of {}", s.name))
                ));
                w.line(&format!(
                    "  from_json(*f{i}, x.{}, t{i}, path + {});",
                    ident(fname),
                    c_string(&format!(".{fname}"))
                ));
            }
            w.line("}");
            w.line(&format!(
                "inline void to_json(std::string& out, const {ty}& x, const tydesc&)"
            ));
            w.line("{");
            w.line("  bool first = true;");
            w.line("  out += '{';");
            for (i, (fname, ft)) in s.fields.iter().enumerate() {
                w.line(&format!("  static const tydesc t{i} = {};", tydesc(ft)));
                w.line(&format!(
                    "  output_key(out, {}, first); to_json(out, x.{}, t{i});",
                    c_string(fname),
                    ident(fname)
                ));
            }
            w.line("  (void)first;");
            w.line("  out += '}';");
            w.line("}");
        }
        w.line("}  // namespace pnet_cxx");
        // As in GPI-Space: a struct converts to a value, prints in literal syntax and
        // compares (fields in order).
        w.line("namespace pnetc { namespace type {");
        for s in &structs {
            let n = ident(&s.name);
            w.line(&format!(
                "namespace {n} {{ inline ::gspc::pnet::type::value::value_type to_value (const {n}& x); }}"
            ));
        }
        for s in &structs {
            let n = ident(&s.name);
            w.line(&format!("namespace {n} {{"));
            w.line(&format!(
                "inline ::gspc::pnet::type::value::value_type to_value (const {n}& x)"
            ));
            w.line("{");
            w.line("  ::gspc::pnet::type::value::structured_type s;");
            for (fname, ft) in &s.fields {
                let v = match ft {
                    Type::Struct(fs) => {
                        let f = ident(&fs.name);
                        format!("::pnetc::type::{f}::to_value (x.{})", ident(fname))
                    }
                    _ => format!("::gspc::pnet::type::value::value_type (x.{})", ident(fname)),
                };
                w.line(&format!("  s.emplace_back ({}, {v});", c_string(fname)));
            }
            w.line("  return ::gspc::pnet::type::value::value_type (std::move (s));");
            w.line("}");
            w.line(&format!(
                "inline std::ostream& operator<< (std::ostream& os, const {n}& x)"
            ));
            w.line("{");
            w.line("  return os << ::gspc::pnet::type::value::show (to_value (x));");
            w.line("}");
            let same: Vec<String> = s
                .fields
                .iter()
                .map(|(f, _)| format!(" && a.{f} == b.{f}", f = ident(f)))
                .collect();
            w.line(&format!(
                "inline bool operator== (const {n}& a, const {n}& b) {{ (void) a; (void) b; return true{}; }}",
                same.join("")
            ));
            w.line(&format!(
                "inline bool operator!= (const {n}& a, const {n}& b) {{ return !(a == b); }}"
            ));
            w.line(&format!(
                "inline bool operator< (const {n}& a, const {n}& b) {{ return to_value (a) < to_value (b); }}"
            ));
            w.line("}");
        }
        w.line("} }");
    }
    w.line("");
    if !cincludes.is_empty() {
        w.line("// The module's cincludes.");
    }
    for (c, at) in cincludes.iter().zip(&cinclude_at) {
        match at {
            // The compiler's messages about the include (a missing header) point at the
            // `<cinclude>`: its line, and `<` under the href's value.
            Some((path, line, col)) => {
                w.line(&format!("#line {line} {}", c_string(path)));
                let pad = (*col as usize).saturating_sub("#include ".len()).max(1);
                w.line(&format!("#include{}<{c}>", " ".repeat(pad)));
                w.restore_line();
            }
            None => w.line(&format!("#include <{c}>")),
        }
    }
    w.line("");

    // The functions, as GPI-Space declares them.
    let mut wrappers = Vec::new();
    for (idx, (f, m)) in functions.iter().enumerate() {
        let sig = &m.signature;
        let fname = ident(&sig.function);
        let port = |n: &str| {
            f.ports
                .iter()
                .find(|p| p.name == n && p.dir != PortDir::Tunnel)
        };
        let mut params = Vec::new();
        let mut call_args = Vec::new();
        if m.pass_context {
            params.push("::pnet_cxx::context* _pnetc_context".to_string());
            call_args.push("&_ctx".to_string());
        }
        let mut ok = true;
        for a in &sig.args {
            match port(a) {
                Some(p) => {
                    let t = cxx_type(&p.ty);
                    params.push(match p.dir {
                        PortDir::In => format!("const {t}& {}", ident(a)),
                        _ => format!("{t}& {}", ident(a)),
                    });
                    let pi = f.ports.iter().position(|q| std::ptr::eq(q, p)).unwrap_or(0);
                    call_args.push(format!("_p{pi}"));
                }
                None => match f.memory_buffers.iter().find(|b| b.name == *a) {
                    // A memory buffer: its address, from the call's buffers by name.
                    Some(b) => {
                        let constness = if b.read_only { "const " } else { "" };
                        params.push(format!("{constness}void* {}", ident(a)));
                        call_args.push(format!("_ctx.buffer ({})", c_string(a)));
                    }
                    None => {
                        ok = false;
                        diags.push(diagnostic("cxx-unknown-port", format!(
                                "the signature of `{name}.{}` names `{a}`, which is not a port or memory buffer of the function",
                                sig.function
                            ), bundle.location(m.span)));
                    }
                },
            }
        }
        // A memory buffer as the result (GPI-Space): the module returns a pointer into it.
        let result_buffer = sig.result.as_ref().and_then(|r| {
            port(r)
                .is_none()
                .then(|| f.memory_buffers.iter().find(|b| b.name == *r))
                .flatten()
        });
        let result = match &sig.result {
            None => None,
            Some(_) if result_buffer.is_some() => None,
            Some(r) => match port(r) {
                Some(p) if p.dir.is_output() => {
                    Some(f.ports.iter().position(|q| std::ptr::eq(q, p)).unwrap_or(0))
                }
                _ => {
                    ok = false;
                    diags.push(diagnostic("cxx-bad-signature", format!(
                            "the signature of `{name}.{}` returns `{r}`, which is not an out port of the function",
                            sig.function
                        ), bundle.location(m.span)));
                    None
                }
            },
        };
        if !ok {
            continue;
        }
        let ret = match (result, result_buffer) {
            (Some(i), _) => cxx_type(&f.ports[i].ty),
            (None, Some(b)) if b.read_only => "const void*".to_string(),
            (None, Some(_)) => "void*".to_string(),
            (None, None) => "void".to_string(),
        };
        // An implementation for a target lives in a namespace of its own.
        let (open, close, qualified) = match &m.target {
            None => (
                format!("namespace pnetc {{ namespace op {{ namespace {ns} {{"),
                "} } }",
                format!("::pnetc::op::{ns}::{fname}"),
            ),
            Some(t) => {
                let tn = target_ident(t);
                (
                    format!(
                        "namespace pnetc {{ namespace op {{ namespace {ns} {{ namespace {tn} {{"
                    ),
                    "} } } }",
                    format!("::pnetc::op::{ns}::{tn}::{fname}"),
                )
            }
        };
        w.line(&open);
        w.line(&format!("{ret} {fname} ({})", params.join(", ")));
        w.line("{");
        let code = m.code.as_deref().unwrap_or("");
        if let Some((path, line)) = code_line(bundle, m.span, code, text_of) {
            w.line(&format!("#line {line} {}", c_string(&path)));
        }
        // (Indentation before `]]>` would be trailing white space.)
        let body = code.trim_end_matches([' ', '\t']);
        w.text.push_str(body);
        if !body.ends_with('\n') {
            w.text.push('\n');
        }
        w.restore_line();
        w.line("}");
        w.line(close);

        // The ABI wrapper: JSON in, C++ call, JSON out.
        w.line(&format!(
            "static int32_t pnetc_call_{idx} (const pnet_call_context* _c, const uint8_t* _in, size_t _len, pnet_out_buffer* _out)"
        ));
        w.line("{");
        w.line(
            "  return ::pnet_cxx::invoke (_c, _in, _len, _out, [] (::pnet_cxx::context& _ctx, const ::pnet_cxx::json::value& _inputs, std::string& _o)",
        );
        w.line("  {");
        w.line("    (void) _ctx; (void) _inputs;");
        for (pi, p) in f.ports.iter().enumerate() {
            if p.dir == PortDir::Tunnel {
                continue;
            }
            w.line(&format!(
                "    static const ::pnet_cxx::tydesc _t{pi} = {};",
                tydesc(&p.ty)
            ));
            w.line(&format!("    {} _p{pi}{{}};", cxx_type(&p.ty)));
            if p.dir.is_input() {
                w.line(&format!(
                    "    ::pnet_cxx::from_json (::pnet_cxx::input (_inputs, {n}), _p{pi}, _t{pi}, std::string (\"inputs.\") + {n});",
                    n = c_string(&p.name)
                ));
            }
        }
        let call = format!("{qualified} ({})", call_args.join(", "));
        match (result, result_buffer) {
            (Some(i), _) => w.line(&format!("    _p{i} = {call};")),
            (None, Some(b)) => {
                // The worker checks that the returned pointer points into the buffer.
                let n = c_string(&b.name);
                w.line(&format!(
                    "    const std::uintptr_t _r = reinterpret_cast<std::uintptr_t> ({call});"
                ));
                w.line(&format!(
                    "    const std::uintptr_t _b = reinterpret_cast<std::uintptr_t> (_ctx.buffer ({n}));"
                ));
                w.line(&format!(
                    "    if (_r < _b || _r - _b >= _ctx.buffer_size ({n})) throw ::pnet_cxx::error (std::string (\"{}: the returned pointer does not point into memory buffer `{}`\"));",
                    sig.function.replace(['"', '\\'], ""),
                    b.name.replace(['"', '\\'], "")
                ));
            }
            (None, None) => w.line(&format!("    {call};")),
        }
        w.line("    bool _first = true;");
        for (pi, p) in f.ports.iter().enumerate() {
            if p.dir.is_output() {
                w.line(&format!(
                    "    ::pnet_cxx::output_key (_o, {}, _first); ::pnet_cxx::to_json (_o, _p{pi}, _t{pi});",
                    c_string(&p.name)
                ));
            }
        }
        w.line("    (void) _first;");
        w.line("  });");
        w.line("}");
        w.line("");
        wrappers.push((exported_name(&sig.function, m.target.as_deref()), idx));
    }

    w.line("static const pnet_function pnetc_functions[] = {");
    for (fname, idx) in &wrappers {
        w.line(&format!("  {{ {}, pnetc_call_{idx} }},", c_string(fname)));
    }
    if wrappers.is_empty() {
        w.line("  { nullptr, nullptr },");
    }
    w.line("};");
    w.line(&format!(
        "static const pnet_module_descriptor pnetc_descriptor = {{ 1, {}, pnetc_functions, {} }};",
        c_string(name),
        wrappers.len()
    ));
    w.line("extern \"C\" __attribute__ ((visibility (\"default\"))) const pnet_module_descriptor* pnet_module_v1 (void)");
    w.line("{");
    w.line("  return &pnetc_descriptor;");
    w.line("}");

    if !diags.is_empty() {
        return Err(diags);
    }
    Ok(GeneratedModule {
        name: name.to_string(),
        files: vec![(PathBuf::from(file_name), w.text)],
        cxx_flags,
        ld_flags,
        cincludes,
        include_dirs,
        location,
    })
}

/// The distinct `(module, function)` pairs of a bundle that have C++ code.
pub fn functions_with_code(bundle: &Bundle) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for f in &bundle.functions {
        let modules: Vec<&Module> = match &f.body {
            Body::Module(m) => vec![m],
            Body::Modules { modules, .. } => modules.iter().collect(),
            _ => continue,
        };
        for m in modules {
            if m.code.is_some() {
                out.insert((m.name.clone(), m.signature.function.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
