//! The compiler's command-line options, shared by every tool that compiles `.xpnet` files
//! as a flattened clap group ([`CompilerArgs`]): `-I/--search-path DIR`, `--W<name>[=bool]`,
//! `--Wall`, `--Werror`, `--no-inline`, `--synthesize-virtual-places`; and the value
//! parsers the tools share.

use std::ffi::OsString;
use std::path::PathBuf;

use pnet_sema::Options;

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
        let dashed = name.replace('_', "-");
        let near = pnet_stdlib::suggest::nearest(&dashed, pnet_sema::WARNINGS.iter().map(|w| w.0))
            .map(|w| format!("; did you mean '{w}'?"))
            .unwrap_or_default();
        return Err(format!(
            "unknown warning '{name}'{near} (see --list-warnings)"
        ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Tool {
        #[command(flatten)]
        compile: CompilerArgs,
    }

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        let argv = std::iter::once("tool")
            .chain(args.iter().copied())
            .map(OsString::from);
        Tool::try_parse_from(normalize_warning_flags(argv)).map(|t| t.compile.options())
    }

    #[test]
    fn gcc_style_warning_flags_and_search_paths() {
        let o = parse(&[
            "-Ia",
            "--search-path=b",
            "-I",
            "c",
            "--Wall",
            "--Werror",
            "--Winline_many_output_ports=off",
            "--Wvirtual-place-not-tunneled",
            "--no-inline",
        ])
        .unwrap();
        let dirs: Vec<PathBuf> = ["a", "b", "c"].iter().map(PathBuf::from).collect();
        assert_eq!(o.search_paths, dirs);
        assert!(o.warnings.all && o.warnings.error && o.no_inline);
        assert_eq!(
            o.warnings.settings,
            vec![
                ("inline_many_output_ports".to_string(), false),
                ("virtual-place-not-tunneled".to_string(), true),
            ]
        );
    }

    #[test]
    fn bad_warning_flags_are_usage_errors() {
        let e = parse(&["--Wno-such-warning"]).err().unwrap();
        assert!(
            e.to_string().contains("unknown warning 'no-such-warning'"),
            "{e}"
        );
        // A misspelled name gets the nearest one (issue 22, item 4).
        let e = parse(&["--Windependent-plce"]).err().unwrap();
        assert!(
            e.to_string()
                .contains("unknown warning 'independent-plce'; did you mean 'independent-place'?"),
            "{e}"
        );
        let e = parse(&["--Wall=maybe"]).err().unwrap();
        assert!(e.use_stderr());
        let e = parse(&["--Wvirtual-place-not-tunneled=perhaps"])
            .err()
            .unwrap();
        assert!(e.to_string().contains("'perhaps' is not a boolean"), "{e}");
        // Arguments after `--` and those that are not UTF-8 are left alone.
        use std::os::unix::ffi::OsStrExt;
        let bad = OsString::from(std::ffi::OsStr::from_bytes(b"--W\xff"));
        let argv = vec![OsString::from("--"), OsString::from("--Wx"), bad.clone()];
        assert_eq!(normalize_warning_flags(argv.clone()), argv);
    }
}
