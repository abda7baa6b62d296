use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;
use crate::Value;
use crate::literal::parse_literal;

/// The elements the brief names: word boundaries, 2^32 - 1, 2^63, the largest unsigned long.
const EDGES: [u64; 6] = [0, 63, 64, (1 << 32) - 1, 1 << 63, u64::MAX];

fn set(elements: &[u64]) -> Bitset {
    Bitset::from_elements(elements.iter().copied())
}

/// The text `Display` gives, read back with `parse_literal`.
fn reread(b: &Bitset) -> Bitset {
    match parse_literal(&b.to_string()) {
        Ok(Value::Bitset(r)) => r,
        other => panic!("{b} read back as {other:?}"),
    }
}

#[test]
fn insert_delete_is_element_and_count_on_edge_elements() {
    let mut b = Bitset::new();
    for (k, &e) in EDGES.iter().enumerate() {
        assert!(!b.contains(e), "{e}");
        b = b.inserted(e);
        assert!(b.contains(e), "{e}");
        assert_eq!(b.count(), k as u64 + 1);
        // Inserting again changes nothing.
        assert_eq!(b.inserted(e), b);
    }
    assert_eq!(b.elements().collect::<Vec<_>>(), EDGES);
    // Neighbours of the elements are not in the set.
    for e in [
        1,
        62,
        65,
        1 << 32,
        (1 << 63) - 1,
        (1 << 63) + 1,
        u64::MAX - 1,
    ] {
        assert!(!b.contains(e), "{e}");
    }
    // The words: GPI-Space's vector would be 2^58 long; we keep 5 nonzero words.
    assert_eq!(b.word_len(), MAX_WORD_INDEX + 1);
    assert_eq!(
        b.nonzero_words(),
        [
            (0, 1 | 1 << 63),
            (1, 1),
            (67_108_863, 1 << 63),
            (1 << 57, 1),
            (MAX_WORD_INDEX, 1 << 63)
        ]
    );
    assert_eq!(b.word(1), 1);
    assert_eq!(b.word(2), 0);
    assert_eq!(b.word(MAX_WORD_INDEX), 1 << 63);
    for (k, &e) in EDGES.iter().enumerate() {
        b = b.deleted(e);
        assert!(!b.contains(e), "{e}");
        assert_eq!(b.count(), (EDGES.len() - k - 1) as u64);
        // Deleting keeps the number of words, as in GPI-Space.
        assert_eq!(b.word_len(), MAX_WORD_INDEX + 1);
    }
    assert!(b.is_empty());
    assert_eq!(b, Bitset::new());
    assert!(b.nonzero_words().is_empty());
    // Deleting what is not there (beyond the words too) changes nothing.
    assert_eq!(set(&[5]).deleted(u64::MAX), set(&[5]));
    assert_eq!(set(&[5]).deleted(u64::MAX).word_len(), 1);
}

#[test]
fn or_and_xor_with_large_elements() {
    let a = set(&[0, 63, 1 << 63, u64::MAX]);
    let b = set(&[63, 64, (1 << 32) - 1, u64::MAX]);
    let elements = |b: Bitset| b.elements().collect::<Vec<_>>();
    assert_eq!(
        elements(a.or(&b)),
        [0, 63, 64, (1 << 32) - 1, 1 << 63, u64::MAX]
    );
    assert_eq!(elements(a.and(&b)), [63, u64::MAX]);
    assert_eq!(elements(a.xor(&b)), [0, 64, (1 << 32) - 1, 1 << 63]);
    // A word cancelled by xor or and is not kept (equality and memory).
    assert_eq!(a.xor(&a), Bitset::new());
    assert!(a.xor(&a).nonzero_words().is_empty());
    assert_eq!(a.xor(&a).word_len(), MAX_WORD_INDEX + 1);
    // The lengths are GPI-Space's: `or`/`xor` the longer, `and` the shorter.
    let short = set(&[1]);
    assert_eq!(a.or(&short).word_len(), MAX_WORD_INDEX + 1);
    assert_eq!(a.and(&short).word_len(), 1);
    assert_eq!(short.and(&a).word_len(), 1);
    assert_eq!(elements(a.and(&short)), Vec::<u64>::new());
    assert_eq!(
        Bitset::from_words([1, 0, 0]).and(&a).to_string(),
        "{ 1 0 0}"
    );
}

#[test]
fn equality_and_order_ignore_zero_words_and_follow_the_numbers() {
    assert_eq!(Bitset::from_words([1, 0, 0]), Bitset::from_words([1]));
    assert_eq!(Bitset::from_words([0, 0]), Bitset::new());
    assert_eq!(set(&[u64::MAX]).deleted(u64::MAX), Bitset::new());
    // Single elements order as the elements, sets as the numbers sum 2^e.
    let singles: Vec<Bitset> = EDGES.iter().map(|&e| set(&[e])).collect();
    for w in singles.windows(2) {
        assert!(w[0] < w[1], "{} < {}", w[0], w[1]);
    }
    assert!(Bitset::new() < set(&[0]));
    assert!(set(&[0, 64]) > set(&[64]));
    assert!(set(&[63, 64]) < set(&[0, 1, 65]));
    assert!(set(&[0, u64::MAX]) > set(&[1 << 63, u64::MAX]).deleted(1 << 63));
    assert!(set(&[5, u64::MAX]) < set(&[6, u64::MAX]));
    assert_eq!(
        Bitset::from_words([3, 0, 0]).cmp(&Bitset::from_words([3])),
        std::cmp::Ordering::Equal
    );
    // As values in sets.
    let in_set: BTreeSet<Value> = [set(&[u64::MAX]), set(&[0]), Bitset::from_words([1, 0])]
        .into_iter()
        .map(Value::Bitset)
        .collect();
    assert_eq!(in_set.len(), 2);
}

#[test]
fn small_sets_print_every_word_as_gpi_space() {
    assert_eq!(Bitset::new().to_string(), "{}");
    assert_eq!(set(&[12]).to_string(), "{ 4096}");
    assert_eq!(Bitset::from_words([1, 0]).to_string(), "{ 1 0}");
    assert_eq!(set(&[64]).to_string(), "{ 0 1}");
    assert_eq!(Bitset::new().to_hex(), "0x/");
    assert_eq!(
        Bitset::from_words([1, 0]).to_hex(),
        "0x/0000000000000001/0000000000000000/"
    );
    // 2^16 words still print in full (2^16 - 1 zero words, then 1).
    let full = set(&[64 * (DENSE_PRINT_WORDS - 1)]);
    assert_eq!(full.word_len(), DENSE_PRINT_WORDS);
    let text = full.to_string();
    assert!(text.starts_with("{ 0 0 "), "{}", &text[..20]);
    assert!(text.ends_with(" 0 1}"));
    assert_eq!(text.len(), 2 + 2 * DENSE_PRINT_WORDS as usize);
    assert_eq!(full.to_hex().len(), 3 + 17 * DENSE_PRINT_WORDS as usize);
    assert_eq!(reread(&full).word_len(), DENSE_PRINT_WORDS);
}

#[test]
fn large_sets_skip_runs_of_zero_words_and_read_back() {
    let b = set(&[0, 1 << 63, u64::MAX]);
    assert_eq!(
        b.to_string(),
        "{ 1 @144115188075855872 1 @288230376151711743 9223372036854775808}"
    );
    assert_eq!(
        b.to_hex(),
        "0x/0000000000000001/@200000000000000/0000000000000001/@3ffffffffffffff/8000000000000000/"
    );
    // Trailing zero words: `@i 0` for the last word.
    let trailing =
        Bitset::from_words([5]).or(&set(&[64 * DENSE_PRINT_WORDS]).deleted(64 * DENSE_PRINT_WORDS));
    assert_eq!(trailing.word_len(), DENSE_PRINT_WORDS + 1);
    assert_eq!(trailing.to_string(), "{ 5 @65536 0}");
    assert_eq!(
        trailing.to_hex(),
        "0x/0000000000000005/@10000/0000000000000000/"
    );
    // Adjacent nonzero words need no skip.
    let adjacent = set(&[0, 64, 128, 64 * 100_000]);
    assert_eq!(adjacent.to_string(), "{ 1 1 1 @100000 1}");
    for b in [b, trailing, adjacent, set(&[u64::MAX])] {
        let back = reread(&b);
        assert_eq!(back, b);
        assert_eq!(back.word_len(), b.word_len());
        assert_eq!(back.to_string(), b.to_string());
        let back = Bitset::from_hex(&b.to_hex()).expect("reads back");
        assert_eq!(back, b);
        assert_eq!(back.word_len(), b.word_len());
    }
}

#[test]
fn skips_read_anywhere_and_limits_are_errors() {
    let read = |s: &str| {
        parse_literal(s)
            .map(|v| v.to_string())
            .map_err(|e| e.to_string())
    };
    // A skip in a small set reads, and prints as GPI-Space (every word).
    assert_eq!(read("{ 1 @3 2}"), Ok("{ 1 0 0 2}".into()));
    assert_eq!(read("{@2}"), Ok("{ 0 0}".into()));
    assert_eq!(read("{ 1 @1 2}"), Ok("{ 1 2}".into()));
    assert_eq!(read("{ @0x10 1}").map(|s| s.len()), Ok(2 + 2 * 17));
    // The largest word index is 2^58 - 1: 2^58 words at most.
    assert_eq!(
        read("{ @288230376151711744}"),
        Ok("{ @288230376151711743 0}".into())
    );
    assert_eq!(
        read("{ @288230376151711744 1}"),
        Err("at offset 22: a bitset has at most 288230376151711744 words (elements up to 18446744073709551615)".into())
    );
    assert_eq!(
        read("{ @288230376151711745}"),
        Err("at offset 2: `@288230376151711745` is beyond the largest word index 288230376151711743 (elements up to 18446744073709551615)".into())
    );
    assert_eq!(
        read("{ 1 2 @1 3}"),
        Err("at offset 6: `@1` goes back (word 1 is already given)".into())
    );
    assert_eq!(
        read("{ @}"),
        Err("at offset 3: expected a word index after `@`".into())
    );
    assert_eq!(
        read("{ @x1}"),
        Err("at offset 3: expected a word index after `@`".into())
    );
    assert_eq!(
        read("{ @18446744073709551616}"),
        Err("at offset 2: invalid word index `18446744073709551616`".into())
    );
    // The same limits in `bitset_fromhex`'s form.
    assert_eq!(
        Bitset::from_hex("0x/@400000000000000/1"),
        Err(BitsetError(
            "a bitset has at most 288230376151711744 words (elements up to 18446744073709551615)"
                .into()
        ))
    );
    assert_eq!(
        Bitset::from_hex("0x/@400000000000001/"),
        Err(BitsetError("`@288230376151711745` is beyond the largest word index 288230376151711743 (elements up to 18446744073709551615)".into()))
    );
    assert_eq!(
        Bitset::from_hex("0x/1/@0/"),
        Err(BitsetError(
            "`@0` goes back (word 0 is already given)".into()
        ))
    );
    for bad in [
        "0x/@/",
        "0x/@g/",
        "0x/@12345678901234567/",
        "0x/@1@2/",
        "0x@1/",
    ] {
        assert_eq!(
            Bitset::from_hex(bad),
            Err(BitsetError(format!("malformed input {bad:?}"))),
            "{bad}"
        );
    }
}

#[test]
fn memory_stays_proportional_to_the_nonzero_words() {
    // A bitset is as large as the `Vec` it replaces: `Value` stays 32 bytes.
    assert_eq!(std::mem::size_of::<Bitset>(), 24);
    assert_eq!(std::mem::size_of::<Value>(), 32);
    let max = set(&[u64::MAX]);
    assert_eq!(max.nonzero_words().len(), 1);
    let bytes = postcard::to_stdvec(&max).unwrap();
    assert!(bytes.len() < 64, "{}", bytes.len());
    assert_eq!(bytes.len(), 29);
    let value = postcard::to_stdvec(&Value::Bitset(max.clone())).unwrap();
    assert!(value.len() < 64, "{}", value.len());
    // Small sets stay small too: one byte of gap per word.
    assert_eq!(
        postcard::to_stdvec(&set(&[0, 64])).unwrap(),
        [2, 2, 0, 1, 0, 1]
    );
    assert_eq!(postcard::to_stdvec(&Bitset::new()).unwrap(), [0, 0]);
    // The printed forms stay small.
    assert!(max.to_string().len() < 64);
    assert!(max.to_hex().len() < 64);
    let json = crate::json::to_json(&Value::Bitset(max.clone()));
    assert_eq!(json.to_string(), "[18446744073709551615]");
}

#[test]
fn serde_round_trips_and_refuses_broken_forms() {
    for b in [
        Bitset::new(),
        Bitset::from_words([1, 0, 0]),
        set(&EDGES),
        set(&[u64::MAX]).deleted(u64::MAX),
    ] {
        let bytes = postcard::to_stdvec(&b).unwrap();
        let back: Bitset = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, b);
        assert_eq!(back.word_len(), b.word_len());
        assert_eq!(back.nonzero_words(), b.nonzero_words());
    }
    // (len, [(gap, word)]) in postcard: varints.
    let decode = |bytes: &[u8]| postcard::from_bytes::<Bitset>(bytes).map_err(|e| e.to_string());
    assert!(decode(&[1, 1, 0, 5]).is_ok());
    // A zero word, a word beyond the length, a length beyond 2^58 words.
    assert!(decode(&[1, 1, 0, 0]).is_err());
    assert!(decode(&[1, 1, 1, 5]).is_err());
    let mut too_long = postcard::to_stdvec(&(MAX_WORD_INDEX + 2)).unwrap();
    too_long.push(0);
    assert!(decode(&too_long).is_err());
    // A gap that overflows.
    let mut overflow = postcard::to_stdvec(&(MAX_WORD_INDEX + 1)).unwrap();
    overflow.push(2);
    overflow.extend(postcard::to_stdvec(&(0u64, 1u64)).unwrap());
    overflow.extend(postcard::to_stdvec(&(u64::MAX, 1u64)).unwrap());
    assert!(decode(&overflow).is_err());
    // JSON (serde_json of the same impls) round-trips too.
    let b = set(&EDGES);
    let text = serde_json::to_string(&b).unwrap();
    assert_eq!(serde_json::from_str::<Bitset>(&text).unwrap(), b);
}

#[test]
fn dense_words_are_gpi_spaces_vector() {
    let b = Bitset::from_words([0, 7, 0, 9, 0]);
    assert_eq!(b.dense_words().collect::<Vec<_>>(), [0, 7, 0, 9, 0]);
    assert_eq!(b.word_len(), 5);
    assert_eq!(b.nonzero_words(), [(1, 7), (3, 9)]);
    let mut builder = BitsetBuilder::new();
    assert!(builder.is_empty());
    builder.push(3).unwrap();
    builder.skip_to(4).unwrap();
    assert_eq!(builder.len(), 4);
    builder.push(1).unwrap();
    assert_eq!(
        builder.finish().dense_words().collect::<Vec<_>>(),
        [3, 0, 0, 0, 1]
    );
}

/// Elements: mostly small (so that words meet), some anywhere.
fn elements() -> impl Strategy<Value = Vec<u64>> {
    proptest::collection::vec(
        prop_oneof![
            0u64..200,
            any::<u64>(),
            (0u64..4).prop_map(|k| u64::MAX - k),
            (0u64..4).prop_map(|k| (1 << 32) + k * 64),
        ],
        0..8,
    )
}

proptest! {
    #[test]
    fn operations_agree_with_a_set_of_numbers(a in elements(), b in elements(), probe in any::<u64>()) {
        let (sa, sb) = (set(&a), set(&b));
        let (ma, mb): (BTreeSet<u64>, BTreeSet<u64>) =
            (a.iter().copied().collect(), b.iter().copied().collect());
        let el = |b: Bitset| b.elements().collect::<Vec<_>>();
        prop_assert_eq!(el(sa.clone()), ma.iter().copied().collect::<Vec<_>>());
        prop_assert_eq!(sa.count(), ma.len() as u64);
        prop_assert_eq!(el(sa.or(&sb)), ma.union(&mb).copied().collect::<Vec<_>>());
        prop_assert_eq!(el(sa.and(&sb)), ma.intersection(&mb).copied().collect::<Vec<_>>());
        prop_assert_eq!(
            el(sa.xor(&sb)),
            ma.symmetric_difference(&mb).copied().collect::<Vec<_>>()
        );
        for e in a.iter().chain(&b).copied().chain([probe]) {
            prop_assert_eq!(sa.contains(e), ma.contains(&e));
            prop_assert!(sa.inserted(e).contains(e));
            prop_assert!(!sa.deleted(e).contains(e));
            prop_assert_eq!(sa.inserted(e).count(), ma.len() as u64 + u64::from(!ma.contains(&e)));
        }
        // The order of the numbers: from the largest element down.
        prop_assert_eq!(sa.cmp(&sb), ma.iter().rev().cmp(mb.iter().rev()));
        prop_assert_eq!(sa == sb, ma == mb);
        // Printing, hex and serde read back, word count included.
        for x in [&sa, &sa.or(&sb), &sa.and(&sb)] {
            let back = reread(x);
            prop_assert_eq!(&back, x);
            prop_assert_eq!(back.word_len(), x.word_len());
            let back = Bitset::from_hex(&x.to_hex()).unwrap();
            prop_assert_eq!(&back, x);
            prop_assert_eq!(back.word_len(), x.word_len());
            let back: Bitset = postcard::from_bytes(&postcard::to_stdvec(x).unwrap()).unwrap();
            prop_assert_eq!(back.nonzero_words(), x.nonzero_words());
            prop_assert_eq!(back.word_len(), x.word_len());
            prop_assert!(x.to_string().len() < 64 * (x.nonzero_words().len() + 1) || x.prints_dense());
        }
    }
}
