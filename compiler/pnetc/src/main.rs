//! `pnetc`: compiles an xpnet net into a `.pnet` bundle, or only checks it.
//!
//! Exit codes: 0 success, 1 compile errors (or the output cannot be written), 2 usage errors.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use pnet_sema::Options;
use pnet_stdlib::cli::InputOutput;
use pnet_stdlib::{errln, out, outln};
use pnetc::ColorMode;
use pnetc::args::{CompilerArgs, warnings_listing};
use pnetc::render_diagnostics;

const AFTER_HELP: &str = "\
Make-style dependency options (as GCC's):
  -M                     print make rules for the net's dependencies
  -MM                    like -M, but without files found through a search path
  -MF FILE               write the make rules to FILE
  -MT TARGET             use TARGET as the rule's target
  -MQ TARGET             like -MT, with make's special characters quoted
  -MP                    add a phony target for each dependency

Examples:
  pnetc net.xpnet                          check a net
  pnetc -I lib net.xpnet -o net.pnet       compile it into a bundle
  pnetc --emit=ir net.xpnet | less         look at the compiled net
  pnetc net.xpnet --build-modules build    build its C++ modules (gspc-run --module-path build)";

/// pnetc: compile an xpnet Petri net into a .pnet bundle
///
/// NET is an .xpnet file whose root element is a defun (default: -i, or standard input), or
/// a workload description (a file ending in .workload, see grammar/workload.md), which is
/// lowered to an xpnet net first. -o FILE writes the bundle to FILE; without -o the net is
/// only checked.
#[derive(Parser)]
#[command(name = "pnetc", after_help = AFTER_HELP, disable_version_flag = true)]
struct Cli {
    #[command(flatten)]
    io: InputOutput,
    /// Print a text form to standard output (xpnet: the net generated from a .workload file;
    /// an .xpnet input is printed as it is)
    #[arg(long, value_enum, value_name = "KIND")]
    emit: Option<Emit>,
    /// Print the files the net includes, one per line
    #[arg(long)]
    list_dependencies: bool,
    /// Colours in diagnostics
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorMode::Auto)]
    color: ColorMode,
    /// List the warnings with their defaults and exit
    #[arg(long)]
    list_warnings: bool,
    /// Print the version
    #[arg(short = 'V', long)]
    version: bool,
    #[command(flatten)]
    cxx: CxxArgs,
    #[command(flatten)]
    compile: CompilerArgs,
}

/// The C++ module options.
#[derive(clap::Args, Default)]
#[command(next_help_heading = "C++ modules (modules with <code>; see compiler/cxx/README.md)")]
struct CxxArgs {
    /// Write the modules' generated C++ sources, the support header and a Makefile
    /// (make -C DIR builds lib<module>.so) to DIR
    #[arg(short = 'g', long = "path-to-cpp", value_name = "DIR")]
    sources_dir: Option<PathBuf>,
    /// Generate and build every module into DIR/lib<module>.so with the C++ compiler ($CXX,
    /// default c++); run the net with gspc-run --module-path DIR
    #[arg(long = "build-modules", value_name = "DIR")]
    build_dir: Option<PathBuf>,
    /// More compiler flags for the modules (repeatable)
    #[arg(
        long = "gen-cxxflags",
        value_name = "FLAGS",
        allow_hyphen_values = true
    )]
    cxx_flags: Vec<String>,
    /// More linker flags for the modules (repeatable)
    #[arg(long = "gen-ldflags", value_name = "FLAGS", allow_hyphen_values = true)]
    ld_flags: Vec<String>,
    /// Print each module's compiler flags (`MODULE: FLAGS`)
    #[arg(long = "print-cxxflags")]
    print_cxx_flags: bool,
    /// Print each module's linker flags (`MODULE: FLAGS`)
    #[arg(long = "print-ldflags")]
    print_ld_flags: bool,
}

impl CxxArgs {
    fn wanted(&self) -> bool {
        self.sources_dir.is_some()
            || self.build_dir.is_some()
            || self.print_cxx_flags
            || self.print_ld_flags
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Emit {
    Ast,
    Ir,
    Bytecode,
    Xpnet,
}

#[derive(Default)]
struct MakeDeps {
    skip_search_path: bool,
    file: Option<PathBuf>,
    targets: Vec<String>,
    phony: bool,
}

struct Args {
    input: Option<PathBuf>,
    output: Option<PathBuf>,
    emit: Option<Emit>,
    list_dependencies: bool,
    make: Option<MakeDeps>,
    color: ColorMode,
    options: Options,
    cxx: CxxArgs,
}

/// Takes the make-style `-M*` flags out of the command line (clap has no multi-letter short
/// flags); the rest goes to clap.
fn take_make_flags(argv: Vec<OsString>) -> (Vec<OsString>, Option<MakeDeps>) {
    let mut make: Option<MakeDeps> = None;
    let mut rest = Vec::new();
    let mut it = argv.into_iter();
    while let Some(a) = it.next() {
        let flag = a.to_str().unwrap_or("");
        match flag {
            "--" => {
                rest.push(a);
                rest.extend(it.by_ref());
            }
            "-M" => {
                make.get_or_insert_with(MakeDeps::default);
            }
            "-MM" => make.get_or_insert_with(MakeDeps::default).skip_search_path = true,
            "-MP" => make.get_or_insert_with(MakeDeps::default).phony = true,
            "-MF" | "-MT" | "-MQ" => {
                let Some(v) = it.next() else {
                    pnet_stdlib::cli::usage_exit("pnetc", &format!("{flag} needs a value"));
                };
                let m = make.get_or_insert_with(MakeDeps::default);
                if flag == "-MF" {
                    m.file = Some(PathBuf::from(v));
                    continue;
                }
                let Some(t) = v.to_str() else {
                    pnet_stdlib::cli::usage_exit(
                        "pnetc",
                        &format!("{flag}: the target is not UTF-8 ({})", v.to_string_lossy()),
                    );
                };
                m.targets.push(if flag == "-MT" {
                    t.to_string()
                } else {
                    quote_make(t)
                });
            }
            _ => rest.push(a),
        }
    }
    (rest, make)
}

/// Quotes a target for make (`-MQ`): `$` as `$$`, spaces and `#` with a backslash.
fn quote_make(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '$' => out.push_str("$$"),
            ' ' | '\t' | '#' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn main() -> ExitCode {
    pnet_stdlib::cli::exit_quietly_on_broken_pipe();
    let (argv, make) = take_make_flags(pnetc::args::args_os());
    let cli = pnet_stdlib::parse_args!(Cli, "pnetc", argv);
    if cli.version {
        outln!(
            "pnetc {} (bundle format {})",
            env!("CARGO_PKG_VERSION"),
            pnet_bundle::FORMAT_VERSION
        );
        return ExitCode::SUCCESS;
    }
    if cli.list_warnings {
        out!("{}", warnings_listing());
        return ExitCode::SUCCESS;
    }
    let mut options = cli.compile.options();
    // Generating module code makes `duplicate_external_function` an error.
    options.build_modules = cli.cxx.build_dir.is_some();
    let args = Args {
        input: cli.io.input().map(Path::to_path_buf),
        output: cli.io.output,
        emit: cli.emit,
        list_dependencies: cli.list_dependencies,
        make,
        color: cli.color,
        options,
        cxx: cli.cxx,
    };
    run(&args)
}

fn run(args: &Args) -> ExitCode {
    let output = match args.input.as_deref() {
        Some(path) if pnet_workload::is_workload_path(path) => match compile_workload(path, args) {
            Ok(out) => out,
            Err(code) => return code,
        },
        Some(path) if path != Path::new("-") => {
            let out = pnet_sema::compile_path(path, &args.options);
            if args.emit == Some(Emit::Xpnet)
                && let Some(root) = out.files.first()
            {
                out!("{}", root.text);
            }
            out
        }
        _ => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                errln!(
                    "pnetc: no input (give a file, or pipe a net into standard input)\nTry 'pnetc --help' for more information."
                );
                return ExitCode::from(2);
            }
            let text = match pnet_stdlib::input::read_text_from(
                stdin,
                pnet_stdlib::input::MAX_SOURCE_BYTES,
            ) {
                Ok(text) => text,
                Err(e) => {
                    errln!("pnetc: cannot read standard input: {e}");
                    return ExitCode::from(1);
                }
            };
            if args.emit == Some(Emit::Xpnet) {
                out!("{text}");
            }
            pnet_sema::compile_source(Path::new("<stdin>"), &text, &args.options)
        }
    };
    if !args
        .input
        .as_deref()
        .is_some_and(pnet_workload::is_workload_path)
    {
        render_diagnostics(&output.files, &output.diagnostics, args.color);
    }

    if let Some(emit) = args.emit {
        match emit {
            Emit::Xpnet => {}
            Emit::Ast => {
                if let (Some(ast), Some(root)) = (&output.ast(), output.files.first()) {
                    out!("{}", pnet_syntax::xml::print_ast(ast, &root.text));
                }
            }
            Emit::Ir => {
                if let Some(b) = &output.bundle {
                    out!("{b}");
                }
            }
            Emit::Bytecode => {
                if let Some(b) = &output.bundle {
                    out!("{}", pnet_bundle::text::bytecode_listing(b));
                }
            }
        }
    }

    if args.list_dependencies {
        for dep in output.dependencies() {
            outln!("{}", dep.display());
        }
    }
    if let Some(make) = &args.make
        && let Err(e) = write_make_rules(args, make, &output)
    {
        errln!("pnetc: {e}");
        return ExitCode::from(1);
    }

    let errors = output.diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = output.diagnostics.len() - errors;
    if errors > 0 {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let root = output
            .files
            .first()
            .map(|f| f.path.display().to_string())
            .unwrap_or_default();
        errln!(
            "pnetc: {root}: {errors} error{}, {warnings} warning{}",
            plural(errors),
            plural(warnings)
        );
        return ExitCode::from(1);
    }
    if let (Some(path), Some(bundle)) = (&args.output, &output.bundle) {
        let bytes = match pnet_bundle::format::encode(bundle) {
            Ok(b) => b,
            Err(e) => {
                errln!("pnetc: {e}");
                return ExitCode::from(1);
            }
        };
        if let Err(e) = pnet_stdlib::cli::write_file(path, bytes) {
            errln!("pnetc: {e}");
            return ExitCode::from(1);
        }
    }
    if args.cxx.wanted()
        && let Some(bundle) = &output.bundle
        && let Err(code) = cxx_modules(args, bundle)
    {
        return code;
    }
    ExitCode::SUCCESS
}

/// `-g`, `--build-modules`, `--print-cxxflags`, `--print-ldflags`: generates the net's C++
/// modules, writes and builds them. Diagnostics are printed here; the error is the exit code.
fn cxx_modules(args: &Args, bundle: &pnet_bundle::Bundle) -> Result<(), ExitCode> {
    let report = |diags: Vec<pnet_cxx::Diagnostic>| {
        for d in &diags {
            errln!("{d}");
        }
        errln!(
            "pnetc: {} error{} in C++ modules",
            diags.len(),
            if diags.len() == 1 { "" } else { "s" }
        );
        ExitCode::from(1)
    };
    let modules = pnet_cxx::generate(bundle).map_err(report)?;
    let options = pnet_cxx::BuildOptions {
        cxx: None,
        include_dirs: args.options.search_paths.clone(),
        cxx_flags: args.cxx.cxx_flags.clone(),
        ld_flags: args.cxx.ld_flags.clone(),
        jobs: 0,
    };
    for m in &modules {
        if args.cxx.print_cxx_flags {
            let dir = args
                .cxx
                .sources_dir
                .clone()
                .unwrap_or_else(|| PathBuf::from("."));
            outln!("{}: {}", m.name, options.cxx_flags_of(m, &dir).join(" "));
        }
        if args.cxx.print_ld_flags {
            outln!("{}: {}", m.name, options.ld_flags_of(m).join(" "));
        }
    }
    if let Some(dir) = &args.cxx.sources_dir {
        pnet_cxx::write_sources(&modules, dir, &options).map_err(|d| report(vec![d]))?;
    }
    if let Some(dir) = &args.cxx.build_dir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            errln!("pnetc: cannot create {}: {e}", dir.display());
            return Err(ExitCode::from(1));
        }
        pnet_cxx::build(&modules, dir, &options).map_err(report)?;
    }
    Ok(())
}

/// Lowers and compiles a `.workload` file (printing the generated net for `--emit=xpnet`).
/// Diagnostics are rendered here; the error is the exit code.
fn compile_workload(path: &Path, args: &Args) -> Result<pnet_sema::Output, ExitCode> {
    let text =
        pnet_stdlib::input::read_text(path, pnet_stdlib::input::MAX_SOURCE_BYTES).map_err(|e| {
            errln!("pnetc: cannot read {}: {e}", path.display());
            ExitCode::from(1)
        })?;
    let fail = |msg: String| {
        errln!("pnetc: {msg}");
        ExitCode::from(1)
    };
    let lowered = pnetc::net::lower_workload(path, &text, args.color).map_err(fail)?;
    if args.emit == Some(Emit::Xpnet) {
        out!("{lowered}");
    }
    let mut out =
        pnetc::net::compile_lowered(path, &lowered, &args.options, args.color).map_err(fail)?;
    // Make rules and messages name the workload file, not the generated net.
    if let Some(root) = out.files.first_mut() {
        root.path = path.to_path_buf();
    }
    Ok(out)
}

fn write_make_rules(
    args: &Args,
    make: &MakeDeps,
    output: &pnet_sema::Output,
) -> Result<(), String> {
    let targets = if make.targets.is_empty() {
        let t = match (&args.output, args.input.as_deref()) {
            (Some(o), _) => o.display().to_string(),
            (None, Some(i)) => i.with_extension("pnet").display().to_string(),
            (None, None) => "-".to_string(),
        };
        vec![quote_make(&t)]
    } else {
        make.targets.clone()
    };
    let in_search_path = |p: &Path| args.options.search_paths.iter().any(|s| p.starts_with(s));
    let deps: Vec<String> = output
        .files
        .iter()
        .enumerate()
        .filter(|(i, f)| *i == 0 || !(make.skip_search_path && in_search_path(&f.path)))
        .map(|(_, f)| quote_make(&f.path.display().to_string()))
        .collect();
    let mut text = format!("{}:", targets.join(" "));
    for d in &deps {
        text.push_str(" \\\n  ");
        text.push_str(d);
    }
    text.push('\n');
    if make.phony {
        for d in deps.iter().skip(1) {
            text.push_str(&format!("\n{d}:\n"));
        }
    }
    match &make.file {
        Some(f) => pnet_stdlib::cli::write_file(f, text),
        None => {
            out!("{text}");
            Ok(())
        }
    }
}
