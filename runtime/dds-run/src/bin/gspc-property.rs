//! `gspc-property`: DDS properties from inside a task (`set`, `get`, `wait`), and the task
//! wrapper the DDS runner starts (`exec`). See `gspc-property --help`.

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    pnet_dds_run::cli::property_main(&argv)
}
