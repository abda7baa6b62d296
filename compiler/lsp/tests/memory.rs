//! A long editing session keeps a bounded database: thousands of distinct texts of one
//! transition, through the database, leave as many live item texts and
//! per-item memos as a short session (salsa's counts, `Analysis::salsa_counts`): an edited
//! item keeps its input, its memos replaced (`pnet_sema::db::ItemInput`).

use std::path::PathBuf;

use pnet_lsp::analysis::Analysis;

const N: usize = 200;

/// The counts after `edits` distinct texts of the middle transition's expression.
fn counts_after(edits: usize) -> [usize; 4] {
    let text = pnet_lsp::generate::chain_net(N);
    let needle = format!("${{x}} + {}L<", N / 2);
    assert_eq!(text.matches(&needle).count(), 1);
    let path = PathBuf::from("/nonexistent/memory/chain.xpnet");
    let mut a = Analysis::default();
    a.open(path.clone(), &text, 0);
    for i in 0..edits {
        let edited = text.replace(&needle, &format!("${{x}} + {}L<", 1000 + i));
        a.change(path.clone(), &edited, i as i32 + 1);
        let d = a.diagnostics();
        assert!(d.values().all(Vec::is_empty), "edit {i}: {d:?}");
    }
    let c = a.salsa_counts();
    let get = |name: &str| c.get(name).copied().unwrap_or(0);
    [
        get("ItemInput"),
        get("parse_group"),
        get("chunk_query"),
        get("Chunk"),
    ]
}

#[test]
fn thousands_of_edits_of_one_transition_keep_the_database_bounded() {
    let short = counts_after(20);
    let long = counts_after(3_000);
    eprintln!(
        "[ItemInput, parse_group, chunk_query, Chunk]: after 20 edits {short:?}, after 3,000 {long:?}"
    );
    // the file's items (N + 1 places, N transitions) are all live; a few old ones on top
    let items = 2 * N + 1;
    assert!(
        short[0] >= items && short[1] >= items / 64 && short[2] >= N / 64 && short[3] >= N / 64,
        "{short:?}"
    );
    for (s, l) in short.iter().zip(&long) {
        assert!(*l <= s + 16, "{short:?} {long:?}");
    }
}
