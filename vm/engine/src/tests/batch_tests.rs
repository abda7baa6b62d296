//! `Engine::run_steps` against single `Engine::step`s: random nets (priorities, conditions
//! that switch loops off, places taken from twice, read and count ports, child nets) run
//! with the same seed through both, in random batch sizes, must give the same steps, the
//! same markings after every batch and the same statistics.

use pnet_stdlib::Value;

use super::build;
use crate::rng::Rng;
use crate::{Engine, RunConfig, Step};

const PLACES: usize = 4;

fn pick<'a>(rng: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[rng.below(xs.len())]
}

/// A random net in the compact format of `tests.rs`: places `p0..p3` of longs.
fn random_net(rng: &mut Rng, tokens: usize) -> String {
    let mut s = String::from("net main\n");
    // Often a loop on p0 with one token and the highest priority (the case that `run_steps`
    // hands to the code runner's loop).
    let hot = rng.below(2) == 0;
    for p in 0..PLACES {
        let n = if hot && p == 0 { 1 } else { rng.below(tokens) };
        let toks: Vec<String> = (0..n).map(|_| format!("{}L", rng.below(9))).collect();
        s += &format!("  place p{p} long = {}\n", toks.join(" "));
    }
    let child = rng.below(4) == 0;
    let n_trans = 1 + rng.below(4);
    for t in 0..n_trans {
        let prio = if hot && t == 0 { 3 } else { rng.below(3) };
        s += &format!("  trans t{t} prio {prio}\n");
        let a = if hot && t == 0 { 0 } else { rng.below(PLACES) };
        if child && t == 1 {
            s += &format!("    in x long <- p{a}\n");
            s += &format!("    out y long -> p{}\n", rng.below(PLACES));
            s += "    use sub\n";
            continue;
        }
        match if hot && t == 0 { 0 } else { rng.below(3) } {
            // A loop on one place (the shape of the countdown).
            // Sometimes failing: a division by zero in the condition or the expression, a
            // value of another type left in the port.
            0 => {
                s += &format!("    inout a long <-> p{a}\n");
                let c = pick(rng, &["0L", "1L", "2L", "3L"]);
                s += &match rng.below(5) {
                    // A local of the condition, in the slot of a local of the expression.
                    1 => format!("    cond load a; store u; load u; const {c}; gt\n"),
                    0 => {
                        format!("    cond const 12L; load a; const 1L; sub; idiv; const {c}; gt\n")
                    }
                    _ => format!("    cond load a; const {c}; gt\n"),
                };
                s += pick(
                    rng,
                    &[
                        "    expr load a; const 1L; sub; store a\n",
                        "    expr load a; const 1L; sub; store a\n",
                        "    expr load a; const 1L; sub; store a\n",
                        "    expr load a; const 1L; sub; store a; const 12L; load a; const 2L; sub; idiv; pop\n",
                        "    expr load a; const 1L; sub; store a; load a; const 1L; eq; jf 10; const 1; store a\n",
                        "    expr load a; const 1L; sub; store a; load a; const 3L; ne; jt 10; load w; pop\n",
                    ],
                );
            }
            // A move, maybe conditional, maybe with a second token (from the same place or
            // another one), a read or a count.
            1 => {
                s += &format!("    in a long <- p{a}\n");
                let extra = rng.below(4);
                match extra {
                    0 => s += &format!("    in b long <- p{}\n", rng.below(PLACES)),
                    1 => s += &format!("    read b long <- p{}\n", rng.below(PLACES)),
                    2 => s += &format!("    count n ulong <- p{}\n", rng.below(PLACES)),
                    _ => {}
                }
                s += &format!("    out o long -> p{}\n", rng.below(PLACES));
                if rng.below(2) == 0 {
                    let c = pick(rng, &["2L", "3L", "4L"]);
                    if extra == 2 && rng.below(2) == 0 {
                        // Over the token and a count of tokens.
                        s += &format!(
                            "    cond load a; const {c}; lt; load n; const 3UL; gt; and\n"
                        );
                    } else {
                        s += &format!("    cond load a; const {c}; lt\n");
                    }
                }
                s += pick(
                    rng,
                    &[
                        "    expr load a; store o\n",
                        "    expr load a; const 1L; add; store o\n",
                    ],
                );
            }
            // A sink or a source.
            _ => {
                if rng.below(2) == 0 {
                    s += &format!("    in a long <- p{a}\n");
                    s += "    cond load a; const 5L; gt\n";
                } else {
                    s += &format!("    in a long <- p{a}\n");
                    s += &format!("    out o long -> p{a}\n");
                    s += &format!("    out q long -> p{}\n", rng.below(PLACES));
                    s += "    cond load a; const 1L; lt\n";
                    s += "    expr load a; const 2L; add; store o; load a; store q\n";
                }
            }
        }
    }
    if child {
        s += "net sub\n";
        s += "  port in x long @a\n";
        s += "  port out y long @b\n";
        s += "  place a long\n";
        s += "  place b long\n";
        s += "  trans down\n";
        s += "    inout v long <-> a\n";
        s += "    cond load v; const 0L; gt\n";
        s += "    expr load v; const 1L; sub; store v\n";
        s += "  trans out\n";
        s += "    in v long <- a\n";
        s += "    out w long -> b\n";
        s += "    expr load v; store w\n";
    }
    s += "end\n";
    s
}

fn marking(e: &Engine) -> Vec<Vec<Value>> {
    (0..PLACES)
        .map(|p| e.tokens(pnet_bundle::PlaceId(p as u32)))
        .collect()
}

#[test]
fn run_steps_is_the_same_as_single_steps() {
    let mut rng = Rng::new(11);
    let mut batches = 0u64;
    let mut firings = 0u64;
    let mut errors: std::collections::BTreeMap<String, u32> = Default::default();
    for net in 0..1500 {
        let text = random_net(&mut rng, 4);
        let bundle = build(&text);
        crate::validate(&bundle).unwrap_or_else(|e| panic!("invalid net {net}: {e}\n{text}"));
        let config = RunConfig {
            seed: 1 + net as u64,
            max_firings: [None, None, None, Some(rng.below(40) as u64)][rng.below(4)],
            ..RunConfig::default()
        };
        let mut single = Engine::new(&bundle, &config).expect("engine");
        let mut batched = Engine::new(&bundle, &config).expect("engine");
        let mut total = 0u64;
        loop {
            let k = [1, 1, 2, 3, 7, 64][rng.below(6)];
            // `k` single steps, up to the first that is no firing.
            let mut n = 0;
            let mut last = Ok(Step::Fired);
            while n < k {
                last = single.step();
                if !matches!(last, Ok(Step::Fired)) {
                    break;
                }
                n += 1;
            }
            let got = batched.run_steps(k);
            let want = last.map(|s| (n, s));
            assert_eq!(
                format!("{got:?}"),
                format!("{want:?}"),
                "net {net}, after {total} firings, batch of {k}:\n{text}"
            );
            assert_eq!(marking(&single), marking(&batched), "net {net}:\n{text}");
            assert_eq!(
                format!("{:?}", single.stats()),
                format!("{:?}", batched.stats()),
                "net {net}"
            );
            batches += 1;
            total += n;
            match want {
                Ok((_, Step::Fired)) if total < 400 => {}
                Err(e) => {
                    let m = format!("{:?}", e.kind);
                    let kind = m.split(['(', ' ']).next().unwrap_or("").to_string();
                    *errors.entry(kind).or_insert(0) += 1;
                    break;
                }
                _ => break,
            }
        }
        firings += total;
    }
    // The nets do loop and stop: many batches and firings were compared.
    let loops = super::loop_ends();
    eprintln!("{batches} batches, {firings} firings, errors {errors:?}, loops {loops:?}");
    assert!(
        batches > 5000 && firings > 40_000,
        "{batches} batches, {firings} firings"
    );
    // The runner's loop was reached, and left in every way but `missing` (which compiled
    // nets cannot reach: a port's slot is never emptied).
    for kind in ["budget", "disabled", "condition", "expression", "mismatch"] {
        assert!(loops.get(kind).is_some_and(|&n| n >= 5), "{loops:?}");
    }
    // Runs ended in each kind of error a loop can meet (in the condition, the expression,
    // the type of its value, the firing limit), and were the same there.
    for kind in ["Eval", "TypeMismatch", "MaxFirings"] {
        assert!(errors.get(kind).is_some_and(|&n| n >= 5), "{errors:?}");
    }
}

/// The enabling search that resumes after the tokens known to fail a condition chooses what
/// the search over the whole place chooses: random nets with up to 15 tokens a place, run step
/// by step with and without it (same seed), give the same steps and markings after every step.
#[test]
fn resumed_enabling_search_is_the_same_as_a_full_one() {
    let mut rng = Rng::new(23);
    let mut steps = 0u64;
    for net in 0..1200 {
        let text = random_net(&mut rng, 16);
        let bundle = build(&text);
        let config = RunConfig {
            seed: 7 + net as u64,
            ..RunConfig::default()
        };
        let mut resumed = Engine::new(&bundle, &config).expect("engine");
        let mut full = Engine::new(&bundle, &config).expect("engine");
        for k in 0..300 {
            super::set_scan_cache(true);
            let a = resumed.step();
            super::set_scan_cache(false);
            let b = full.step();
            super::set_scan_cache(true);
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "net {net}, step {k}:\n{text}"
            );
            assert_eq!(
                marking(&resumed),
                marking(&full),
                "net {net}, step {k}:\n{text}"
            );
            steps += 1;
            if !matches!(a, Ok(Step::Fired)) {
                break;
            }
        }
    }
    assert!(steps > 45_000, "{steps} steps");
}
