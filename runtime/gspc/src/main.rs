//! `gspc`: the persistent runtime's command-line tool.

fn main() -> std::process::ExitCode {
    eprintln!("gspc: not yet built");
    std::process::ExitCode::from(2)
}
