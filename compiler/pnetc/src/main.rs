//! `pnetc`: compiles an xpnet net into a `.pnet` bundle, or only checks it.
//!
//! Exit codes: 0 success, 1 compile errors (or the output cannot be written), 2 usage errors.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pnet_driver::args::{COMPILER_OPTIONS_HELP, take_compiler_option, warnings_listing};
use pnet_driver::{ColorMode, render_diagnostics};
use pnet_sema::Options;

const USAGE: &str = "\
pnetc: compile an xpnet Petri net into a .pnet bundle

Usage: pnetc [OPTIONS] [INPUT]

INPUT is an .xpnet file whose root element is a defun (default: -i, or standard input), or
a workload description (a file ending in .workload, see grammar/workload.md), which is
lowered to an xpnet net first. Without -o the net is only checked.

Options:
  -i, --input FILE             the net to compile
  -o, --output FILE            write the bundle to FILE
      --emit KIND              print a text form to standard output: ast, ir, bytecode, or
                               xpnet (the net generated from a .workload file; an .xpnet
                               input is printed as it is)
      --list-dependencies      print the files the net includes, one per line
  -M                           print make rules for the net's dependencies
  -MM                          like -M, but without files found through a search path
  -MF FILE                     write the make rules to FILE
  -MT TARGET                   use TARGET as the rule's target
  -MQ TARGET                   like -MT, with make's special characters quoted
  -MP                          add a phony target for each dependency
      --color WHEN             colours in diagnostics: auto, always, never

C++ modules (modules with <code>; see compiler/cxx/README.md):
  -g, --path-to-cpp DIR        write the modules' generated C++ sources, the support header
                               and a Makefile (make -C DIR builds lib<module>.so) to DIR
      --build-modules DIR      generate and build every module into DIR/lib<module>.so with
                               the C++ compiler ($CXX, default c++); run the net with
                               gspc-run --module-path DIR
      --gen-cxxflags FLAGS     more compiler flags for the modules (repeatable)
      --gen-ldflags FLAGS      more linker flags for the modules (repeatable)
      --print-cxxflags         print each module's compiler flags (`MODULE: FLAGS`)
      --print-ldflags          print each module's linker flags (`MODULE: FLAGS`)
  -V, --version                print the version
  -h, --help                   print this help
";

#[derive(Default)]
struct Args {
    input: Option<String>,
    output: Option<PathBuf>,
    emit: Option<Emit>,
    list_dependencies: bool,
    make: Option<MakeDeps>,
    color: ColorMode,
    options: Options,
    cxx: CxxArgs,
}

/// The C++ module options.
#[derive(Default)]
struct CxxArgs {
    sources_dir: Option<PathBuf>,
    build_dir: Option<PathBuf>,
    cxx_flags: Vec<String>,
    ld_flags: Vec<String>,
    print_cxx_flags: bool,
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Emit {
    Xpnet,
    Ast,
    Ir,
    Bytecode,
}

#[derive(Default)]
struct MakeDeps {
    skip_search_path: bool,
    file: Option<PathBuf>,
    targets: Vec<String>,
    phony: bool,
}

enum Parsed {
    Run(Box<Args>),
    Exit(ExitCode),
}

fn usage_error(msg: &str) -> Parsed {
    eprintln!("pnetc: {msg}\nTry 'pnetc --help' for more information.");
    Parsed::Exit(ExitCode::from(2))
}

fn parse_args(argv: &[String]) -> Parsed {
    let mut a = Args::default();
    let mut i = 0;
    while i < argv.len() {
        let arg = argv[i].as_str();
        let next = argv.get(i + 1).cloned();
        match take_compiler_option(argv, i, &mut a.options) {
            Err(msg) => return usage_error(&msg),
            Ok(n) if n > 0 => {
                i += n;
                continue;
            }
            Ok(_) => {}
        }
        let mut used = 1;
        match arg {
            "-h" | "--help" => {
                println!("{USAGE}\n{COMPILER_OPTIONS_HELP}");
                return Parsed::Exit(ExitCode::SUCCESS);
            }
            "-V" | "--version" => {
                println!(
                    "pnetc {} (bundle format {})",
                    env!("CARGO_PKG_VERSION"),
                    pnet_bundle::FORMAT_VERSION
                );
                return Parsed::Exit(ExitCode::SUCCESS);
            }
            "--list-warnings" => {
                print!("{}", warnings_listing());
                return Parsed::Exit(ExitCode::SUCCESS);
            }
            "-g" | "--path-to-cpp" | "--build-modules" | "--gen-cxxflags" | "--gen-ldflags" => {
                let Some(v) = next else {
                    return usage_error(&format!("{arg} needs a value"));
                };
                used = 2;
                match arg {
                    "-g" | "--path-to-cpp" => a.cxx.sources_dir = Some(PathBuf::from(v)),
                    "--build-modules" => a.cxx.build_dir = Some(PathBuf::from(v)),
                    "--gen-cxxflags" => a.cxx.cxx_flags.push(v),
                    _ => a.cxx.ld_flags.push(v),
                }
            }
            "--print-cxxflags" => a.cxx.print_cxx_flags = true,
            "--print-ldflags" => a.cxx.print_ld_flags = true,
            "-i" | "--input" | "-o" | "--output" | "--emit" | "--color" | "-MF" | "-MT" | "-MQ" => {
                let Some(v) = next else {
                    return usage_error(&format!("{arg} needs a value"));
                };
                used = 2;
                match arg {
                    "-i" | "--input" => a.input = Some(v),
                    "-o" | "--output" => a.output = Some(PathBuf::from(v)),
                    "--emit" => match parse_emit(&v) {
                        Some(e) => a.emit = Some(e),
                        None => {
                            return usage_error(&format!(
                                "--emit: unknown kind '{v}' (ast, ir, bytecode, xpnet)"
                            ));
                        }
                    },
                    "--color" => match parse_color(&v) {
                        Some(c) => a.color = c,
                        None => {
                            return usage_error(&format!(
                                "--color: unknown value '{v}' (auto, always, never)"
                            ));
                        }
                    },
                    "-MF" => {
                        let m = a.make.get_or_insert_with(MakeDeps::default);
                        m.file = Some(PathBuf::from(v));
                    }
                    "-MT" => a.make.get_or_insert_with(MakeDeps::default).targets.push(v),
                    _ => a
                        .make
                        .get_or_insert_with(MakeDeps::default)
                        .targets
                        .push(quote_make(&v)),
                }
            }
            "-M" => {
                a.make.get_or_insert_with(MakeDeps::default);
            }
            "-MM" => {
                a.make
                    .get_or_insert_with(MakeDeps::default)
                    .skip_search_path = true
            }
            "-MP" => a.make.get_or_insert_with(MakeDeps::default).phony = true,
            "--list-dependencies" => a.list_dependencies = true,
            _ => {
                if let Some(v) = arg.strip_prefix("--emit=") {
                    match parse_emit(v) {
                        Some(e) => a.emit = Some(e),
                        None => {
                            return usage_error(&format!(
                                "--emit: unknown kind '{v}' (ast, ir, bytecode, xpnet)"
                            ));
                        }
                    }
                } else if let Some(v) = arg.strip_prefix("--color=") {
                    match parse_color(v) {
                        Some(c) => a.color = c,
                        None => {
                            return usage_error(&format!(
                                "--color: unknown value '{v}' (auto, always, never)"
                            ));
                        }
                    }
                } else if let Some(v) = arg.strip_prefix("--path-to-cpp=") {
                    a.cxx.sources_dir = Some(PathBuf::from(v));
                } else if let Some(v) = arg.strip_prefix("--build-modules=") {
                    a.cxx.build_dir = Some(PathBuf::from(v));
                } else if let Some(v) = arg.strip_prefix("--gen-cxxflags=") {
                    a.cxx.cxx_flags.push(v.to_string());
                } else if let Some(v) = arg.strip_prefix("--gen-ldflags=") {
                    a.cxx.ld_flags.push(v.to_string());
                } else if let Some(v) = arg.strip_prefix("--output=") {
                    a.output = Some(PathBuf::from(v));
                } else if let Some(v) = arg.strip_prefix("--input=") {
                    a.input = Some(v.to_string());
                } else if arg.starts_with('-') && arg != "-" {
                    return usage_error(&format!("unknown option '{arg}'"));
                } else if a.input.is_some() {
                    return usage_error(&format!("more than one input ('{arg}')"));
                } else {
                    a.input = Some(arg.to_string());
                }
            }
        }
        i += used;
    }
    Parsed::Run(Box::new(a))
}

fn parse_emit(s: &str) -> Option<Emit> {
    match s {
        "ast" => Some(Emit::Ast),
        "ir" => Some(Emit::Ir),
        "bytecode" => Some(Emit::Bytecode),
        "xpnet" => Some(Emit::Xpnet),
        _ => None,
    }
}

fn parse_color(s: &str) -> Option<ColorMode> {
    match s {
        "auto" => Some(ColorMode::Auto),
        "always" => Some(ColorMode::Always),
        "never" => Some(ColorMode::Never),
        _ => None,
    }
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
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Parsed::Run(mut a) => {
            // Generating module code makes `duplicate_external_function` an error.
            a.options.build_modules = a.cxx.build_dir.is_some();
            a
        }
        Parsed::Exit(code) => return code,
    };
    run(&args)
}

fn run(args: &Args) -> ExitCode {
    let output = match args.input.as_deref() {
        Some(path) if pnet_workload::is_workload_path(Path::new(path)) => {
            match compile_workload(Path::new(path), args) {
                Ok(out) => out,
                Err(code) => return code,
            }
        }
        Some(path) if path != "-" => {
            let out = pnet_sema::compile_path(Path::new(path), &args.options);
            if args.emit == Some(Emit::Xpnet)
                && let Some(root) = out.files.first()
            {
                print!("{}", root.text);
            }
            out
        }
        _ => {
            let mut stdin = std::io::stdin();
            if stdin.is_terminal() {
                eprintln!(
                    "pnetc: no input (give a file, or pipe a net into standard input)\nTry 'pnetc --help' for more information."
                );
                return ExitCode::from(2);
            }
            let mut text = String::new();
            if let Err(e) = stdin.read_to_string(&mut text) {
                eprintln!("pnetc: cannot read standard input: {e}");
                return ExitCode::from(1);
            }
            if args.emit == Some(Emit::Xpnet) {
                print!("{text}");
            }
            pnet_sema::compile_source(Path::new("<stdin>"), &text, &args.options)
        }
    };
    if !args
        .input
        .as_deref()
        .is_some_and(|p| pnet_workload::is_workload_path(Path::new(p)))
    {
        render_diagnostics(&output.files, &output.diagnostics, args.color);
    }

    if let Some(emit) = args.emit {
        match emit {
            Emit::Xpnet => {}
            Emit::Ast => {
                if let (Some(ast), Some(root)) = (&output.ast, output.files.first()) {
                    print!("{}", pnet_syntax::xml::print_ast(ast, &root.text));
                }
            }
            Emit::Ir => {
                if let Some(b) = &output.bundle {
                    print!("{b}");
                }
            }
            Emit::Bytecode => {
                if let Some(b) = &output.bundle {
                    print!("{}", pnet_bundle::text::bytecode_listing(b));
                }
            }
        }
    }

    if args.list_dependencies {
        for dep in output.dependencies() {
            println!("{}", dep.display());
        }
    }
    if let Some(make) = &args.make
        && let Err(e) = write_make_rules(args, make, &output)
    {
        eprintln!("pnetc: {e}");
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
        eprintln!(
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
                eprintln!("pnetc: {e}");
                return ExitCode::from(1);
            }
        };
        if let Err(e) = std::fs::write(path, bytes) {
            eprintln!("pnetc: cannot write {}: {e}", path.display());
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
            eprintln!("{d}");
        }
        eprintln!(
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
            println!("{}: {}", m.name, options.cxx_flags_of(m, &dir).join(" "));
        }
        if args.cxx.print_ld_flags {
            println!("{}: {}", m.name, options.ld_flags_of(m).join(" "));
        }
    }
    if let Some(dir) = &args.cxx.sources_dir {
        pnet_cxx::write_sources(&modules, dir, &options).map_err(|d| report(vec![d]))?;
    }
    if let Some(dir) = &args.cxx.build_dir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("pnetc: cannot create {}: {e}", dir.display());
            return Err(ExitCode::from(1));
        }
        pnet_cxx::build(&modules, dir, &options).map_err(report)?;
    }
    Ok(())
}

/// Lowers and compiles a `.workload` file (printing the generated net for `--emit=xpnet`).
/// Diagnostics are rendered here; the error is the exit code.
fn compile_workload(path: &Path, args: &Args) -> Result<pnet_sema::Output, ExitCode> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("pnetc: cannot read {}: {e}", path.display());
        ExitCode::from(1)
    })?;
    let fail = |msg: String| {
        eprintln!("pnetc: {msg}");
        ExitCode::from(1)
    };
    let lowered = pnet_driver::net::lower_workload(path, &text, args.color).map_err(fail)?;
    if args.emit == Some(Emit::Xpnet) {
        print!("{lowered}");
    }
    let mut out = pnet_driver::net::compile_lowered(path, &lowered, &args.options, args.color)
        .map_err(fail)?;
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
            (None, Some(i)) => Path::new(i).with_extension("pnet").display().to_string(),
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
        Some(f) => {
            std::fs::write(f, text).map_err(|e| format!("cannot write {}: {e}", f.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
