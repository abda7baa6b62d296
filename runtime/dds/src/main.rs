//! `gspc-topology`: validate, expand, count and compare DDS topology files.

fn main() -> std::process::ExitCode {
    eprintln!("gspc-topology: not yet built");
    std::process::ExitCode::from(2)
}
