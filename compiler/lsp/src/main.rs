fn main() {
    if std::env::args().any(|a| a == "--version") {
        println!("pnet-lsp {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    if let Err(e) = pnet_lsp::server::run_stdio() {
        eprintln!("pnet-lsp: {e}");
        std::process::exit(1);
    }
}
