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
fn random_net(rng: &mut Rng) -> String {
    let mut s = String::from("net main\n");
    for p in 0..PLACES {
        let n = rng.below(4);
        let toks: Vec<String> = (0..n).map(|_| format!("{}L", rng.below(6))).collect();
        s += &format!("  place p{p} long = {}\n", toks.join(" "));
    }
    let child = rng.below(4) == 0;
    let n_trans = 1 + rng.below(4);
    for t in 0..n_trans {
        let prio = rng.below(3);
        s += &format!("  trans t{t} prio {prio}\n");
        let a = rng.below(PLACES);
        if child && t == 0 {
            s += &format!("    in x long <- p{a}\n");
            s += &format!("    out y long -> p{}\n", rng.below(PLACES));
            s += "    use sub\n";
            continue;
        }
        match rng.below(3) {
            // A loop on one place (the shape of the countdown).
            0 => {
                s += &format!("    inout a long <-> p{a}\n");
                let c = pick(rng, &["0L", "1L", "2L", "3L"]);
                s += &format!("    cond load a; const {c}; gt\n");
                s += "    expr load a; const 1L; sub; store a\n";
            }
            // A move, maybe conditional, maybe with a second token (from the same place or
            // another one), a read or a count.
            1 => {
                s += &format!("    in a long <- p{a}\n");
                match rng.below(4) {
                    0 => s += &format!("    in b long <- p{}\n", rng.below(PLACES)),
                    1 => s += &format!("    read b long <- p{}\n", rng.below(PLACES)),
                    2 => s += &format!("    count n ulong <- p{}\n", rng.below(PLACES)),
                    _ => {}
                }
                s += &format!("    out o long -> p{}\n", rng.below(PLACES));
                if rng.below(2) == 0 {
                    let c = pick(rng, &["2L", "3L", "4L"]);
                    s += &format!("    cond load a; const {c}; lt\n");
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
    for net in 0..600 {
        let text = random_net(&mut rng);
        let bundle = build(&text);
        crate::validate(&bundle).unwrap_or_else(|e| panic!("invalid net {net}: {e}\n{text}"));
        let config = RunConfig {
            seed: 1 + net as u64,
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
                _ => break,
            }
        }
        firings += total;
    }
    // The nets do loop and stop: many batches and firings were compared.
    assert!(
        batches > 3000 && firings > 20_000,
        "{batches} batches, {firings} firings"
    );
}
