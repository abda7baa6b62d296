//! The compiler's command-line options, shared by every tool that compiles `.xpnet` files:
//! `-I/--search-path DIR`, `--W<name>[=bool]`, `--Wall`, `--Werror`, `--no-inline`,
//! `--synthesize-virtual-places`.

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
