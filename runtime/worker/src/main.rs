fn main() {
    eprintln!("gspc-worker: not yet written");
    std::process::exit(2);
}
