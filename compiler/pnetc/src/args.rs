//! The compiler's command-line options, shared by every tool that compiles `.xpnet` files:
//! `-I/--search-path DIR`, `--W<name>[=bool]`, `--Wall`, `--Werror`, `--no-inline`,
//! `--synthesize-virtual-places`.

use std::ffi::OsString;
use std::path::PathBuf;

use pnet_sema::Options;

/// Help text for the compiler options, to include in a tool's `--help`.
pub const COMPILER_OPTIONS_HELP: &str = "\
Compiler options:
  -I, --search-path DIR        look for included files in DIR (after the including file's folder);
                               repeatable, searched in order
      --no-inline              do not inline transitions marked inline=\"true\"
      --synthesize-virtual-places
                               keep transitions with a place-map as child nets
      --W<name>[=BOOL]         turn warning <name> on or off (BOOL: true/false, on/off, yes/no, 1/0)
      --Wall                   turn on every warning
      --Werror                 treat warnings as errors
      --list-warnings          list the warnings with their defaults and exit";

/// Splits `--flag=value` into the flag and its inline value; any other argument (short flags,
/// operands) comes back whole, without a value.
pub fn split_flag(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f, Some(v)),
        _ => (arg, None),
    }
}

/// The value of option `flag`: its inline value (`--flag=value`), else the next argument, at
/// which `i` is left. The error is the usage message `FLAG needs a value`.
pub fn option_value(
    argv: &[String],
    i: &mut usize,
    flag: &str,
    inline: Option<&str>,
) -> Result<String, String> {
    if let Some(v) = inline {
        return Ok(v.to_string());
    }
    *i += 1;
    argv.get(*i)
        .cloned()
        .ok_or_else(|| format!("{flag} needs a value"))
}

/// Parses the number given to option `flag`; the error is the usage message
/// `FLAG: 'V' is not a number`.
pub fn parse_number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag}: '{v}' is not a number"))
}

/// Parses a boolean flag value.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "on" | "yes" | "1" => Some(true),
        "false" | "off" | "no" | "0" => Some(false),
        _ => None,
    }
}

/// The list of warnings with their defaults, as printed by `--list-warnings`.
pub fn warnings_listing() -> String {
    let mut out = String::new();
    for (name, on) in pnet_sema::WARNINGS {
        out.push_str(&format!(
            "--W{name:<40} {}\n",
            if *on { "on" } else { "off" }
        ));
    }
    out
}

/// If `args[i]` starts a compiler option, applies it to `options` and returns how many
/// arguments it used; `Ok(0)` if it is not a compiler option; `Err` with a usage message if it
/// is one but malformed.
pub fn take_compiler_option(
    args: &[String],
    i: usize,
    options: &mut Options,
) -> Result<usize, String> {
    let arg = args[i].as_str();
    let value_of = |flag: &str| -> Result<String, String> {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value"))
    };
    match arg {
        "-I" | "--search-path" => {
            options.search_paths.push(PathBuf::from(value_of(arg)?));
            return Ok(2);
        }
        "--no-inline" => {
            options.no_inline = true;
            return Ok(1);
        }
        "--synthesize-virtual-places" => {
            options.synthesize_virtual_places = true;
            return Ok(1);
        }
        "--Wall" => {
            options.warnings.all = true;
            return Ok(1);
        }
        "--Werror" => {
            options.warnings.error = true;
            return Ok(1);
        }
        _ => {}
    }
    if let Some(dir) = arg.strip_prefix("--search-path=") {
        options.search_paths.push(PathBuf::from(dir));
        return Ok(1);
    }
    if let Some(dir) = arg.strip_prefix("-I") {
        options.search_paths.push(PathBuf::from(dir));
        return Ok(1);
    }
    if let Some(rest) = arg.strip_prefix("--W") {
        let (name, value) = match rest.split_once('=') {
            Some((n, v)) => {
                let b = parse_bool(v)
                    .ok_or_else(|| format!("{arg}: '{v}' is not a boolean (true/false)"))?;
                (n, b)
            }
            None => (rest, true),
        };
        // Accept both spellings, `inline-many-output-ports` and `inline_many_output_ports`.
        let known = pnet_sema::WARNINGS
            .iter()
            .find(|(w, _)| *w == name || w.replace('_', "-") == name.replace('_', "-"));
        let Some((canonical, _)) = known else {
            return Err(format!("unknown warning '{name}' (see --list-warnings)"));
        };
        options
            .warnings
            .settings
            .push((canonical.to_string(), value));
        return Ok(1);
    }
    Ok(0)
}

/// The compiler options as a clap argument group, flattened into the arguments of every tool
/// that compiles `.xpnet` files (pnetc, pnetv, pnet2dot, gspc-run, gspc). Give the command
/// line through [`normalize_warning_flags`] first, which turns GCC-style `--W<name>[=BOOL]`
/// into `--W=<name>[=BOOL]`.
#[derive(clap::Args, Debug, Default, Clone)]
#[command(next_help_heading = "Compiler options")]
pub struct CompilerArgs {
    /// Look for included files in DIR (after the including file's folder); repeatable,
    /// searched in order
    #[arg(short = 'I', long = "search-path", value_name = "DIR")]
    pub search_paths: Vec<PathBuf>,
    /// Do not inline transitions marked inline="true"
    #[arg(long)]
    pub no_inline: bool,
    /// Keep transitions with a place-map as child nets
    #[arg(long)]
    pub synthesize_virtual_places: bool,
    /// Turn warning NAME on or off, written --W<NAME>[=BOOL] (BOOL: true/false, on/off,
    /// yes/no, 1/0); repeatable
    #[arg(long = "W", value_name = "NAME[=BOOL]", value_parser = parse_warning)]
    pub warnings: Vec<(String, bool)>,
    /// Turn on every warning
    #[arg(long = "Wall")]
    pub wall: bool,
    /// Treat warnings as errors
    #[arg(long = "Werror")]
    pub werror: bool,
}

impl CompilerArgs {
    /// The compiler's options.
    pub fn options(&self) -> Options {
        let mut o = Options {
            search_paths: self.search_paths.clone(),
            no_inline: self.no_inline,
            synthesize_virtual_places: self.synthesize_virtual_places,
            ..Options::default()
        };
        o.warnings.all = self.wall;
        o.warnings.error = self.werror;
        o.warnings.settings = self.warnings.clone();
        o
    }
}

/// Parses a warning setting `NAME[=BOOL]` (`inline-many-output-ports` and
/// `inline_many_output_ports` both name one warning) into its canonical name and value.
pub fn parse_warning(s: &str) -> Result<(String, bool), String> {
    let (name, value) = match s.split_once('=') {
        Some((n, v)) => {
            let b = parse_bool(v)
                .ok_or_else(|| format!("--W{s}: '{v}' is not a boolean (true/false)"))?;
            (n, b)
        }
        None => (s, true),
    };
    let known = pnet_sema::WARNINGS
        .iter()
        .find(|(w, _)| *w == name || w.replace('_', "-") == name.replace('_', "-"));
    let Some((canonical, _)) = known else {
        return Err(format!("unknown warning '{name}' (see --list-warnings)"));
    };
    Ok((canonical.to_string(), value))
}

/// Rewrites GCC-style warning flags `--W<name>[=BOOL]` (other than `--Wall`, `--Werror`) into
/// `--W=<name>[=BOOL]`, the form [`CompilerArgs`] parses; other arguments, those after `--`
/// and those that are not UTF-8, are left as they are.
pub fn normalize_warning_flags(argv: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut rest = false;
    argv.into_iter()
        .map(|a| {
            if rest {
                return a;
            }
            match a.to_str() {
                Some("--") => {
                    rest = true;
                    a
                }
                Some(s)
                    if s.starts_with("--W")
                        && s.len() > 3
                        && !s.starts_with("--W=")
                        && s != "--Wall"
                        && s != "--Werror" =>
                {
                    OsString::from(format!("--W={}", &s[3..]))
                }
                _ => a,
            }
        })
        .collect()
}

/// The command line of this process with [`normalize_warning_flags`] applied.
pub fn args_os() -> Vec<OsString> {
    normalize_warning_flags(std::env::args_os())
}

/// The value of `-p/--put PORT=VALUE` (clap value parser).
pub fn parse_put_arg(s: &str) -> Result<(String, pnet_stdlib::Value), String> {
    crate::parse_put(s)
}

/// The value of `--color WHEN` (clap value parser).
pub fn parse_color_arg(s: &str) -> Result<crate::ColorMode, String> {
    match s {
        "auto" => Ok(crate::ColorMode::Auto),
        "always" => Ok(crate::ColorMode::Always),
        "never" => Ok(crate::ColorMode::Never),
        _ => Err(format!("unknown value '{s}' (auto, always, never)")),
    }
}
