//! `gspc-dds`: runs a DDS topology file on the runtime's workers. See `gspc-dds --help`.

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    pnet_dds_run::main(&argv)
}
