//! Snapshot tests of the IR and bytecode text (`pnetc --emit=ir|bytecode`) for a handful of
//! corpus nets. The snapshots live in `tests/snapshots/`; after a deliberate change, refresh
//! them with `UPDATE_EXPECT=1 cargo test -p pnet-tests --test ir_snapshots` and review the diff.

use pnet_sema::Options;
use pnet_tests::{gpispace, gpispace_lib};

fn emit(rel: &str) -> String {
    let opts = Options {
        search_paths: vec![gpispace_lib()],
        ..Options::default()
    };
    let out = pnet_sema::compile_path(&gpispace().join(rel), &opts);
    let bundle = out
        .bundle
        .unwrap_or_else(|| panic!("{rel} does not compile: {:?}", out.diagnostics));
    let text = format!("{bundle}\n{}", pnet_bundle::text::bytecode_listing(&bundle));
    // Paths differ between checkouts: show them relative to the corpus.
    let corpus = gpispace().display().to_string();
    text.replace(&format!("{corpus}/"), "<gpispace>/")
}

macro_rules! snapshot {
    ($name:ident, $rel:literal) => {
        #[test]
        fn $name() {
            if pnet_tests::corpus_absent() {
                return;
            }
            expect_test::expect_file![concat!("../snapshots/", stringify!($name), ".ir")]
                .assert_eq(&emit($rel));
        }
    };
}

snapshot!(atomic, "share/doc/example/atomic/atomic.xpnet");
snapshot!(priorities_sum, "share/doc/example/priorities/sum.xpnet");
snapshot!(sum_expr_many, "share/doc/example/sum/sum_expr_many.xpnet");
snapshot!(sequence, "share/doc/example/sequence/sequence.xpnet");
snapshot!(
    generator_string,
    "share/doc/example/generator/generator_string.xpnet"
);
snapshot!(
    shared_cleanup_with_number_of_tokens,
    "share/doc/example/shared/cleanup_with_number_of_tokens.xpnet"
);
snapshot!(
    bigint_condition,
    "share/doc/example/bigint_condition/bigint_condition.xpnet"
);
