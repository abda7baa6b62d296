use clap::Parser;

/// pnet-lsp: the language server for xpnet Petri nets
///
/// Speaks the Language Server Protocol on standard input and output; an editor starts it
/// (see compiler/lsp/editors/).
#[derive(Parser)]
#[command(
    name = "pnet-lsp",
    version,
    after_help = "Example (Neovim): cmd = { \"pnet-lsp\" }; VS Code: compiler/lsp/editors/vscode"
)]
struct Cli {
    /// Talk over standard input and output (the default and only transport)
    #[arg(long)]
    stdio: bool,
    /// Other arguments an editor may pass are ignored
    #[arg(hide = true, trailing_var_arg = true, allow_hyphen_values = true)]
    _ignored: Vec<std::ffi::OsString>,
}

fn main() {
    let _: Cli = pnet_stdlib::parse_args!(Cli, "pnet-lsp");
    if let Err(e) = pnet_lsp::server::run_stdio() {
        pnet_stdlib::errln!("pnet-lsp: {e}");
        std::process::exit(1);
    }
}
