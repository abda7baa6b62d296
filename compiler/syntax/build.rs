fn main() {
    // Grammars live in the workspace's top-level `grammar/` folder.
    lalrpop::Configuration::new()
        .set_in_dir("../../grammar")
        .set_out_dir(std::env::var("OUT_DIR").unwrap())
        .process()
        .unwrap();
    println!("cargo:rerun-if-changed=../../grammar");
}
