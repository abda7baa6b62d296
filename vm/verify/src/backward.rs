//! The SCC pass's facts without a depth-first search, for the common shapes of state spaces:
//! every state can return to the initial one (a reversible net), or every state but the dead
//! ones can.
//!
//! A backward breadth-first search from state 0 over predecessors (a predecessor of `m` by
//! `t` is `m - post(t) + pre(t)`, when it is a marking of the state space) finds the states
//! that reach state 0: the component of state 0 (every state is reached from it). If the
//! other states are exactly the dead ones, the components are that one and one per dead
//! state, and every fact of [`crate::graph::analyse`] follows, its cycle state included (the
//! depth-first pass completes the dead states' trivial components first and state 0's, the
//! only one with a cycle, last, so its first cycle is at state 0); only the dead state given
//! as the witness of a transition that is not live may be another one. Otherwise (or when a transition that changes nothing fires:
//! its self-loops make the first cycle depend on the depth-first order) the caller runs the
//! depth-first pass.
//!
//! The search reads each marking of the component once, in batches whose index lookups are
//! prefetched together (as the exploration's), and keeps one bit per state and the frontier:
//! much cheaper in time and memory than a depth-first search, whose every step waits for the
//! previous one.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::explore::PtExploration;
use crate::graph::GraphFacts;
use crate::ptnet::PtNet;
use crate::store::{hash, hash_words, le_word, prefetch_read};

/// States whose predecessors are computed together, then looked up in one pipeline.
const BATCH: usize = 64;
/// How many lookups ahead the index slot of a lookup is prefetched, and (tagged index) the
/// arena entry of its tag hit (as the exploration's batches do).
const SLOT_AHEAD: usize = 32;
const ENTRY_AHEAD: usize = 16;
/// Levels of at least this many states are split between the threads.
const PAR_MIN: usize = 4096;

/// The facts of [`crate::graph::analyse`] over the complete, unreduced state space `e` of
/// `net`, if a backward search from state 0 settles them (see the module docs). The search
/// runs on up to `threads` threads.
pub fn facts(net: &PtNet, e: &PtExploration, threads: usize) -> Option<GraphFacts> {
    facts_split(net, e, threads, PAR_MIN)
}

/// [`facts`] with levels of at least `par_min` states split between the threads (tests split
/// small ones).
pub fn facts_split(
    net: &PtNet,
    e: &PtExploration,
    threads: usize,
    par_min: usize,
) -> Option<GraphFacts> {
    let n = e.store.len();
    if n == 0 {
        return None;
    }
    let arcs = arcs(net);
    // A transition that fires without changing the marking: self-loops.
    let zero_effect = arcs.iter().enumerate().any(|(t, a)| {
        e.fired.get(t).copied().unwrap_or(true) && a.iter().all(|&(_, pre, post)| pre == post)
    });
    if zero_effect {
        return None;
    }
    let home = reaching_initial(e, arcs, n, threads, par_min);
    let in_home = |s: usize| home[s / 64] >> (s % 64) & 1 != 0;
    let homes = home.iter().map(|w| w.count_ones() as u64).sum::<u64>();
    let others = n as u64 - homes;
    // Dead states never reach state 0 (unless it is the only state): the others are exactly
    // the dead states when there are as many.
    if others != e.dead_count {
        return None;
    }
    let transitions = net.transitions.len();
    let mut facts = GraphFacts {
        cycle_state: (homes > 1).then_some(0),
        sccs: 1 + others,
        bottom_sccs: others.max(1),
        live: vec![true; transitions],
        not_live_witness: vec![None; transitions],
    };
    // A bottom component where a transition does not fire: state 0's (the only one) for a
    // transition that never fires (as the depth-first pass finds), else a dead state (the
    // first one, not necessarily the one that pass reaches first).
    let witness = if others == 0 {
        Some(0)
    } else {
        (0..n).find(|&s| !in_home(s)).map(|s| s as u32)
    };
    for t in 0..transitions {
        if others > 0 || !e.fired[t] {
            facts.live[t] = false;
            facts.not_live_witness[t] = witness;
        }
    }
    Some(facts)
}

/// The states that reach state 0, as a bit set. With `threads` above 1, large levels are
/// split between that many threads (the bit set is the same).
fn reaching_initial(
    e: &PtExploration,
    arcs: Vec<Vec<(usize, u64, u64)>>,
    n: usize,
    threads: usize,
    par_min: usize,
) -> Vec<u64> {
    let home: Vec<AtomicU64> = (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
    home[0].store(1, Ordering::Relaxed);
    let threads = threads.max(1);
    let first = Predecessors::new(arcs, e);
    let mut preds: Vec<Predecessors> = (1..threads).map(|_| first.clone()).collect();
    preds.insert(0, first);
    let mut frontier: Vec<u32> = vec![0];
    let mut nexts: Vec<Vec<u32>> = vec![Vec::new(); threads];
    while !frontier.is_empty() {
        if threads == 1 || frontier.len() < par_min.max(1) {
            nexts[0].clear();
            expand(e, &mut preds[0], &frontier, &home, false, &mut nexts[0]);
            std::mem::swap(&mut frontier, &mut nexts[0]);
            continue;
        }
        let part = frontier.len().div_ceil(threads);
        // Every list is emptied, also those of threads the level has no part for (fewer
        // parts than threads): a list left from an earlier level would come back forever.
        for next in &mut nexts {
            next.clear();
        }
        std::thread::scope(|scope| {
            for ((p, next), states) in preds.iter_mut().zip(&mut nexts).zip(frontier.chunks(part)) {
                let home = &home;
                scope.spawn(move || expand(e, p, states, home, true, next));
            }
        });
        frontier.clear();
        for next in &nexts {
            frontier.extend_from_slice(next);
        }
    }
    home.into_iter().map(AtomicU64::into_inner).collect()
}

/// Looks the predecessors of `states` up; those not in `home` yet are added to it and to
/// `next`. `shared`: other threads update `home` at the same time.
fn expand(
    e: &PtExploration,
    preds: &mut Predecessors,
    states: &[u32],
    home: &[AtomicU64],
    shared: bool,
    next: &mut Vec<u32>,
) {
    let words = e.store.words();
    for (b, batch) in states.chunks(BATCH).enumerate() {
        // The markings of the next batch, while this one is computed.
        for &s in states.iter().skip((b + 1) * BATCH).take(BATCH) {
            prefetch_read(&e.store.get(s)[0]);
        }
        preds.keys.clear();
        preds.hashes.clear();
        for &s in batch {
            preds.of(e, s);
        }
        let hashes = &preds.hashes;
        for &h in hashes.iter().take(SLOT_AHEAD) {
            e.store.prefetch(h);
        }
        for k in 0..hashes.len() {
            if let Some(&h) = hashes.get(k + SLOT_AHEAD) {
                e.store.prefetch(h);
            }
            if let Some(&h) = hashes.get(k + ENTRY_AHEAD) {
                e.store.prefetch_entry(h);
            }
            let key = &preds.keys[k * words..(k + 1) * words];
            if let Some(id) = e.store.find_words(key, hashes[k]) {
                let (w, bit) = (&home[id as usize / 64], 1u64 << (id % 64));
                let old = w.load(Ordering::Relaxed);
                if old & bit != 0 {
                    continue;
                }
                let new = if shared {
                    w.fetch_or(bit, Ordering::Relaxed) & bit == 0
                } else {
                    w.store(old | bit, Ordering::Relaxed);
                    true
                };
                if new {
                    next.push(id);
                }
            }
        }
    }
}

/// Per transition, its arcs as (place, pre weight, post weight), one per place.
fn arcs(net: &PtNet) -> Vec<Vec<(usize, u64, u64)>> {
    net.transitions
        .iter()
        .map(|tr| {
            let mut a: Vec<(usize, u64, u64)> = Vec::new();
            for &(p, w) in &tr.pre {
                match a.iter_mut().find(|x| x.0 == p.index()) {
                    Some(x) => x.1 += w,
                    None => a.push((p.index(), w, 0)),
                }
            }
            for &(p, w) in &tr.post {
                match a.iter_mut().find(|x| x.0 == p.index()) {
                    Some(x) => x.2 += w,
                    None => a.push((p.index(), 0, w)),
                }
            }
            a
        })
        .collect()
}

/// Computes the candidate predecessors of states (the markings `m - post(t) + pre(t)` that
/// are valid at the exploration's packing) as lookup keys and their hashes.
#[derive(Clone)]
struct Predecessors {
    /// One bit per place: the tables of word-wide operations.
    bits: Option<BitPreds>,
    /// Otherwise: per transition, its arcs (place, pre weight, post weight).
    arcs: Vec<Vec<(usize, u64, u64)>>,
    m: Vec<u32>,
    sw: Vec<u64>,
    set: Vec<u64>,
    next: Vec<u64>,
    buf: Vec<u8>,
    keys: Vec<u64>,
    hashes: Vec<u64>,
}

impl Predecessors {
    fn new(arcs: Vec<Vec<(usize, u64, u64)>>, e: &PtExploration) -> Predecessors {
        let words = e.store.words();
        let stride = e.store.stride();
        let tw = arcs.len().div_ceil(64);
        // The byte tables (and their copy per thread) only where they stay small: a large
        // net (thousands of places and transitions) takes the unpacked path.
        let tables = stride.saturating_mul(256 * tw * 8);
        let bits =
            (e.packing.bits == 1 && tables <= PRED_TABLES_MAX).then(|| BitPreds::new(&arcs, e));
        Predecessors {
            bits,
            arcs,
            m: Vec::new(),
            sw: vec![0; words],
            set: vec![0; tw],
            next: vec![0; words],
            buf: vec![0; stride],
            keys: Vec::new(),
            hashes: Vec::new(),
        }
    }

    /// Appends the candidate predecessors of `s` to `keys` and `hashes`.
    fn of(&mut self, e: &PtExploration, s: u32) {
        let stride = e.store.stride();
        if let Some(b) = &self.bits {
            e.store.get_words(s, &mut self.sw);
            b.candidates(stride, &self.sw, &mut self.set);
            let w = self.sw.len();
            for (xw, &word) in self.set.iter().enumerate() {
                let mut rest = word;
                while rest != 0 {
                    let t = xw * 64 + rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    let (pre, post) = (&b.pre[t * w..(t + 1) * w], &b.post[t * w..(t + 1) * w]);
                    for k in 0..w {
                        self.next[k] = (self.sw[k] & !post[k]) | pre[k];
                    }
                    self.hashes.push(hash_words(&self.next, stride));
                    self.keys.extend_from_slice(&self.next);
                }
            }
        } else {
            let bytes = e.store.get(s);
            e.packing.unpack(bytes, &mut self.m);
            let max = e.packing.max_value();
            for a in &self.arcs {
                let fits = a.iter().all(|&(p, pre, post)| {
                    let v = self.m[p] as u64;
                    v >= post && v - post + pre <= max
                });
                if !fits {
                    continue;
                }
                self.buf.copy_from_slice(bytes);
                for &(p, pre, post) in a {
                    let v = self.m[p] as u64 - post + pre;
                    e.packing.set(&mut self.buf, p, v as u32);
                }
                self.hashes.push(hash(&self.buf));
                self.keys.extend(self.buf.chunks(8).map(le_word));
            }
        }
    }
}

/// Predecessors at one bit per place. `t` leads to a marking `m` from `(m & !post) | pre`
/// when `post` is marked in `m` and the places of `pre` outside `post` are not (a transition
/// with an arc of weight 2 or more never does: its markings would not fit). The candidate
/// transitions of a marking are found a byte at a time, as the exploration finds the enabled
/// ones: per byte of the marking and value of that byte, the transitions it allows.
/// The largest byte tables of [`BitPreds`] (bytes), per thread.
const PRED_TABLES_MAX: usize = 16 << 20;

#[derive(Clone)]
struct BitPreds {
    /// Per transition, its `pre` and `post` masks (`words` words each).
    pre: Vec<u64>,
    post: Vec<u64>,
    /// `(byte * 256 + value) * tw ..`: the transitions allowed by that byte value.
    table: Vec<u64>,
    tw: usize,
}

impl BitPreds {
    fn new(arcs: &[Vec<(usize, u64, u64)>], e: &PtExploration) -> BitPreds {
        let words = e.store.words();
        let stride = e.store.stride();
        let tw = arcs.len().div_ceil(64);
        // A place's bit (in the little-endian words), as the packing lays it out.
        let bit = |p: usize| {
            let mut m = vec![0u32; e.packing.places];
            m[p] = 1;
            let mut buf = vec![0u8; stride];
            e.packing.pack(&m, &mut buf);
            buf.iter()
                .enumerate()
                .find(|(_, b)| **b != 0)
                .map_or(0, |(i, b)| 8 * i + b.trailing_zeros() as usize)
        };
        let mut pre = vec![0u64; arcs.len() * words];
        let mut post = vec![0u64; arcs.len() * words];
        let mut table = vec![u64::MAX; stride * 256 * tw];
        let mut forbid = |t: usize, byte: usize, v: usize| {
            table[(byte * 256 + v) * tw + t / 64] &= !(1u64 << (t % 64));
        };
        for t in arcs.len()..tw * 64 {
            for v in 0..256 {
                forbid(t, 0, v); // no such transition
            }
        }
        for (t, a) in arcs.iter().enumerate() {
            if a.iter().any(|&(_, wpre, wpost)| wpre > 1 || wpost > 1) {
                for v in 0..256 {
                    forbid(t, 0, v);
                }
                continue;
            }
            for &(p, wpre, wpost) in a {
                let at = bit(p);
                if wpre == 1 {
                    pre[t * words + at / 64] |= 1 << (at % 64);
                }
                if wpost == 1 {
                    post[t * words + at / 64] |= 1 << (at % 64);
                }
                // The value this place must have in `m`, if any.
                let need = if wpost == 1 {
                    1
                } else if wpre == 1 {
                    0
                } else {
                    continue;
                };
                for v in 0..256 {
                    if (v >> (at % 8)) & 1 != need {
                        forbid(t, at / 8, v);
                    }
                }
            }
        }
        BitPreds {
            pre,
            post,
            table,
            tw,
        }
    }

    /// The transitions by which `sw` (`stride` bytes) has a predecessor, into `set`.
    #[inline]
    fn candidates(&self, stride: usize, sw: &[u64], set: &mut [u64]) {
        let tw = self.tw;
        set.fill(u64::MAX);
        for b in 0..stride {
            let v = (sw[b / 8] >> (8 * (b % 8))) as u8 as usize;
            let row = &self.table[(b * 256 + v) * tw..(b * 256 + v + 1) * tw];
            for (x, &r) in set.iter_mut().zip(row) {
                *x &= r;
            }
        }
    }
}
