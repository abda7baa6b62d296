//! When to use colours: the one place that reads `--color`, `NO_COLOR` and whether standard
//! error is a terminal.

use std::io::IsTerminal;

use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};

/// When to use colours (`--color auto|always|never`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ColorMode {
    /// Colours when standard error is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Colours, also into files and pipes.
    Always,
    /// No colours.
    Never,
}

impl ColorMode {
    /// The choice for standard error.
    pub fn stderr_choice(self) -> ColorChoice {
        match self {
            ColorMode::Always => ColorChoice::Always,
            ColorMode::Never => ColorChoice::Never,
            ColorMode::Auto => {
                if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
                    ColorChoice::Auto
                } else {
                    ColorChoice::Never
                }
            }
        }
    }

    /// Standard error as a stream that colours as this mode says.
    pub fn stderr(self) -> StandardStream {
        StandardStream::stderr(self.stderr_choice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_modes_are_obeyed() {
        assert_eq!(ColorMode::Always.stderr_choice(), ColorChoice::Always);
        assert_eq!(ColorMode::Never.stderr_choice(), ColorChoice::Never);
        assert_eq!(ColorMode::default(), ColorMode::Auto);
    }
}
