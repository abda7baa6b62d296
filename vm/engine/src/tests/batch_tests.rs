//! `Engine::run_steps` against single `Engine::step`s: random nets (priorities, conditions
//! that switch loops off, places taken from twice, read and count ports, child nets) run
//! with the same seed through both, in random batch sizes, must give the same steps, the
//! same markings after every batch and the same statistics.

use pnet_stdlib::Value;

use super::parse_net;
use crate::rng::Rng;
use crate::{Engine, RunConfig, Step};

const PLACES: usize = 4;

fn pick<'a>(rng: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[rng.below(xs.len())]
}

/// A transition of a random net: its name, priority, connections (`in a <- p0`), ports
/// (`inout a : long`), the instructions of its condition and expression (`;`-separated IR
/// mnemonics), and its function (`None`: its own, with an expression body).
#[derive(Default)]
struct Trans {
    name: String,
    prio: usize,
    conns: Vec<String>,
    ports: Vec<(&'static str, &'static str, &'static str)>,
    cond: Option<String>,
    expr: String,
    function: Option<usize>,
}

/// Appends `code cID` over the given ports (more names become locals), reading the slots
/// it loads.
fn code(out: &mut String, id: usize, name: &str, ports: &[(&str, &str, &str)], instrs: &str) {
    let instrs: Vec<&str> = instrs.split("; ").filter(|i| !i.is_empty()).collect();
    let mut slots: Vec<(String, String, &str)> = ports
        .iter()
        .map(|(_, n, t)| (n.to_string(), "port".to_string(), *t))
        .collect();
    let mut reads: Vec<String> = Vec::new();
    for i in &instrs {
        if let Some((op @ ("load" | "store"), n)) = i.split_once(' ') {
            if !slots.iter().any(|s| s.0 == n) {
                slots.push((n.to_string(), "local".to_string(), "any"));
            }
            if op == "load" && !reads.iter().any(|r| r == n) {
                reads.push(n.to_string());
            }
        }
    }
    *out += &format!("\ncode c{id} \"{name}\" : any\n");
    for (k, (n, kind, t)) in slots.iter().enumerate() {
        *out += &format!("  slot {k} {kind} {n} : {t}\n");
    }
    if !reads.is_empty() {
        *out += &format!("  reads {}\n", reads.join(" "));
    }
    for (k, i) in instrs.iter().enumerate() {
        *out += &format!("  {k} {i}\n");
    }
}

/// The IR text of a net `NAME` with the given ports, places and transitions; its transitions'
/// functions get the ids from `f + 1` and their codes the ids from `*c`.
fn net_text(
    f: usize,
    name: &str,
    ports: &str,
    places: &str,
    trans: &[Trans],
    c: &mut usize,
) -> (String, String) {
    let mut s = format!("\nfunction f{f} {name}\n{ports}  net\n{places}");
    let mut funcs = String::new();
    let mut codes = String::new();
    let mut next = f + 1;
    for (i, t) in trans.iter().enumerate() {
        let fid = t.function.unwrap_or(next);
        s += &format!(
            "    transition t{i} {} priority {} -> f{fid}\n",
            t.name, t.prio
        );
        for conn in &t.conns {
            s += &format!("      {conn}\n");
        }
        if let Some(cond) = &t.cond {
            s += &format!("      condition c{c}\n");
            code(
                &mut codes,
                *c,
                &format!("condition of {}", t.name),
                &t.ports,
                cond,
            );
            *c += 1;
        }
        if t.function.is_none() {
            funcs += &format!("\nfunction f{next} {}\n", t.name);
            for (dir, n, ty) in &t.ports {
                funcs += &format!("  {dir} {n} : {ty}\n");
            }
            funcs += &format!("  expression c{c}\n");
            code(
                &mut codes,
                *c,
                &format!("expression of {}", t.name),
                &t.ports,
                &t.expr,
            );
            *c += 1;
            next += 1;
        }
    }
    (s + &funcs, codes)
}

/// A random net in the IR text form: places `p0..p3` of longs.
fn random_net(rng: &mut Rng, tokens: usize) -> String {
    const LONG: &str = "long";
    let mut places = String::new();
    // Often a loop on p0 with one token and the highest priority (the case that `run_steps`
    // hands to the code runner's loop).
    let hot = rng.below(2) == 0;
    for p in 0..PLACES {
        let n = if hot && p == 0 { 1 } else { rng.below(tokens) };
        places += &format!("    place p{p} p{p} : long\n");
        for _ in 0..n {
            places += &format!("      token {}L\n", rng.below(9));
        }
    }
    let child = rng.below(4) == 0;
    let n_trans = 1 + rng.below(4);
    let mut trans: Vec<Trans> = Vec::new();
    for t in 0..n_trans {
        let prio = if hot && t == 0 { 3 } else { rng.below(3) };
        let mut tr = Trans {
            name: format!("t{t}"),
            prio,
            ..Trans::default()
        };
        let a = if hot && t == 0 { 0 } else { rng.below(PLACES) };
        if child && t == 1 {
            tr.conns.push(format!("in x <- p{a}"));
            tr.conns.push(format!("out y -> p{}", rng.below(PLACES)));
            // The child net's function comes after those of the main net's transitions.
            tr.function = Some(n_trans);
            trans.push(tr);
            continue;
        }
        match if hot && t == 0 { 0 } else { rng.below(3) } {
            // A loop on one place (the shape of the countdown).
            // Sometimes failing: a division by zero in the condition or the expression, a
            // value of another type left in the port.
            0 => {
                tr.conns.push(format!("in a <- p{a}"));
                tr.conns.push(format!("out a -> p{a}"));
                tr.ports.push(("inout", "a", LONG));
                let c = pick(rng, &["0L", "1L", "2L", "3L"]);
                tr.cond = Some(match rng.below(5) {
                    // A local of the condition, in the slot of a local of the expression.
                    1 => format!("load a; store u; load u; const {c}; gt"),
                    0 => format!("const 12L; load a; const 1L; sub; int_div; const {c}; gt"),
                    _ => format!("load a; const {c}; gt"),
                });
                tr.expr = pick(
                    rng,
                    &[
                        "load a; const 1L; sub; store a",
                        "load a; const 1L; sub; store a",
                        "load a; const 1L; sub; store a",
                        "load a; const 1L; sub; store a; const 12L; load a; const 2L; sub; int_div; pop",
                        "load a; const 1L; sub; store a; load a; const 1L; eq; jump_if_false_else_pop -> 10; const 1; store a",
                        "load a; const 1L; sub; store a; load a; const 3L; ne; jump_if_true_else_pop -> 10; load w; pop",
                    ],
                )
                .to_string();
            }
            // A move, maybe conditional, maybe with a second token (from the same place or
            // another one), a read or a count.
            1 => {
                tr.conns.push(format!("in a <- p{a}"));
                tr.ports.push(("in", "a", LONG));
                let extra = rng.below(4);
                match extra {
                    0 => {
                        tr.conns.push(format!("in b <- p{}", rng.below(PLACES)));
                        tr.ports.push(("in", "b", LONG));
                    }
                    1 => {
                        tr.conns.push(format!("read b <- p{}", rng.below(PLACES)));
                        tr.ports.push(("in", "b", LONG));
                    }
                    2 => {
                        tr.conns
                            .push(format!("number-of-tokens n <- p{}", rng.below(PLACES)));
                        tr.ports.push(("in", "n", "unsigned long"));
                    }
                    _ => {}
                }
                tr.conns.push(format!("out o -> p{}", rng.below(PLACES)));
                tr.ports.push(("out", "o", LONG));
                if rng.below(2) == 0 {
                    let c = pick(rng, &["2L", "3L", "4L"]);
                    tr.cond = Some(if extra == 2 && rng.below(2) == 0 {
                        // Over the token and a count of tokens.
                        format!("load a; const {c}; lt; load n; const 3UL; gt; and")
                    } else {
                        format!("load a; const {c}; lt")
                    });
                }
                tr.expr =
                    pick(rng, &["load a; store o", "load a; const 1L; add; store o"]).to_string();
            }
            // A sink or a source.
            _ => {
                tr.conns.push(format!("in a <- p{a}"));
                tr.ports.push(("in", "a", LONG));
                if rng.below(2) == 0 {
                    tr.cond = Some("load a; const 5L; gt".into());
                } else {
                    tr.conns.push(format!("out o -> p{a}"));
                    tr.conns.push(format!("out q -> p{}", rng.below(PLACES)));
                    tr.ports.push(("out", "o", LONG));
                    tr.ports.push(("out", "q", LONG));
                    tr.cond = Some("load a; const 1L; lt".into());
                    tr.expr = "load a; const 2L; add; store o; load a; store q".into();
                }
            }
        }
        trans.push(tr);
    }
    let mut c = 0;
    // The child net's function follows those of the main net's transitions.
    let sub = 1 + trans.iter().filter(|t| t.function.is_none()).count();
    let (mut s, mut codes) = net_text(0, "main", "", &places, &trans, &mut c);
    if child {
        let trans = [
            Trans {
                name: "down".into(),
                conns: vec!["in v <- p0".into(), "out v -> p0".into()],
                ports: vec![("inout", "v", LONG)],
                cond: Some("load v; const 0L; gt".into()),
                expr: "load v; const 1L; sub; store v".into(),
                ..Trans::default()
            },
            Trans {
                name: "out".into(),
                conns: vec!["in v <- p0".into(), "out w -> p1".into()],
                ports: vec![("in", "v", LONG), ("out", "w", LONG)],
                expr: "load v; store w".into(),
                ..Trans::default()
            },
        ];
        let (t, cs) = net_text(
            sub,
            "sub",
            "  in x : long = p0 a\n  out y : long = p1 b\n",
            "    place p0 a : long\n    place p1 b : long\n",
            &trans,
            &mut c,
        );
        s += &t;
        codes += &cs;
    }
    format!("bundle root f0 main\n{s}{codes}")
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
        let bundle = parse_net(&text);
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
        let bundle = parse_net(&text);
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
