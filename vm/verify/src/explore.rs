//! Explicit state-space exploration of P/T nets.
//!
//! Breadth-first: state ids are handed out in BFS order, so the states of each level are a
//! contiguous id range (`levels`) and the first bad state found is one nearest to the initial
//! marking. Markings are packed (`bits` per place: 1 when the P-invariants prove the net
//! 1-bounded, otherwise as small as the bounds allow; a count that outgrows the packing
//! restarts the exploration with the next width) and stored in a [`StateStore`].
//!
//! Shortest traces need no parent pointers for bounded nets: the predecessor of a state at
//! level `d` is found by re-firing the states of level `d - 1`. Nets that the invariants do
//! not prove bounded keep a parent id per state (4 bytes) and the smallest token sum on the
//! path to it (4 bytes) for the coverability check: a new marking that strictly covers one
//! of its ancestors proves the net unbounded (the firing sequence between them can be
//! repeated forever), which ends the exploration of an infinite state space with a witness.

use pnet_bundle::{PlaceId, TransitionId};

use crate::invariants;
use crate::ptnet::PtNet;
use crate::store::{Packing, StateStore};

/// How to explore.
#[derive(Clone, Debug)]
pub struct PtOptions {
    /// Stop after this many states (the verdicts are then partial).
    pub max_states: Option<u64>,
    /// Do not expand markings with more than this many tokens on a place.
    pub max_tokens: Option<u64>,
    pub reduction: Reduction,
}

impl Default for PtOptions {
    fn default() -> Self {
        PtOptions {
            max_states: None,
            max_tokens: None,
            reduction: Reduction::None,
        }
    }
}

/// State-space reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// The full reachability graph: every verdict is exact.
    None,
    /// Stubborn sets (strong, deletion-free closure): only an enabled subset of transitions
    /// is fired per marking. Preserves every reachable dead marking (so the deadlock verdict
    /// and the set of deadlocks are exact); the other verdicts are not computed.
    Stubborn,
}

/// Why an exploration ended before exhausting the state space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `max_states` was reached.
    StateLimit,
    /// A marking strictly covering an ancestor was found: the net is unbounded.
    Unbounded,
    /// More than 2^32 - 1 tokens on a place, or more than 2^32 - 2 states.
    Capacity(String),
}

/// The net in the form the explorer fires it.
#[derive(Debug)]
pub struct Compiled {
    pub places: usize,
    pub transitions: usize,
    pre_off: Vec<u32>,
    pre: Vec<(u32, u32)>,
    eff_off: Vec<u32>,
    eff: Vec<(u32, i64)>,
    sum_delta: Vec<i64>,
    /// Per place: transitions consuming from it.
    consumers: Vec<Vec<u32>>,
    /// Per place: transitions that increase it.
    increasers: Vec<Vec<u32>>,
}

impl Compiled {
    pub fn new(net: &PtNet) -> Result<Compiled, String> {
        let places = net.places.len();
        let mut c = Compiled {
            places,
            transitions: net.transitions.len(),
            pre_off: vec![0],
            pre: Vec::new(),
            eff_off: vec![0],
            eff: Vec::new(),
            sum_delta: Vec::new(),
            consumers: vec![Vec::new(); places],
            increasers: vec![Vec::new(); places],
        };
        for (t, tr) in net.transitions.iter().enumerate() {
            let mut delta = vec![0i64; 0];
            let mut idx: Vec<u32> = Vec::new();
            for &(p, w) in &tr.pre {
                let w32 = u32::try_from(w).map_err(|_| {
                    format!(
                        "transition `{}`: arc weight {w} is too large (at most 2^32-1)",
                        tr.name
                    )
                })?;
                c.pre.push((p.0, w32));
                c.consumers[p.index()].push(t as u32);
                idx.push(p.0);
                delta.push(-(w as i64));
            }
            for &(p, w) in &tr.post {
                u32::try_from(w).map_err(|_| {
                    format!(
                        "transition `{}`: arc weight {w} is too large (at most 2^32-1)",
                        tr.name
                    )
                })?;
                match idx.iter().position(|&q| q == p.0) {
                    Some(k) => delta[k] += w as i64,
                    None => {
                        idx.push(p.0);
                        delta.push(w as i64);
                    }
                }
            }
            let mut sum = 0;
            for (k, &p) in idx.iter().enumerate() {
                if delta[k] != 0 {
                    c.eff.push((p, delta[k]));
                    sum += delta[k];
                    if delta[k] > 0 {
                        c.increasers[p as usize].push(t as u32);
                    }
                }
            }
            c.sum_delta.push(sum);
            c.pre_off.push(c.pre.len() as u32);
            c.eff_off.push(c.eff.len() as u32);
        }
        for p in &net.places {
            if p.initial > u32::MAX as u64 {
                return Err(format!(
                    "place `{}`: initial marking {} is too large (at most 2^32-1)",
                    p.name, p.initial
                ));
            }
        }
        Ok(c)
    }

    #[inline]
    fn pre(&self, t: usize) -> &[(u32, u32)] {
        &self.pre[self.pre_off[t] as usize..self.pre_off[t + 1] as usize]
    }

    #[inline]
    fn eff(&self, t: usize) -> &[(u32, i64)] {
        &self.eff[self.eff_off[t] as usize..self.eff_off[t + 1] as usize]
    }

    #[inline]
    pub fn is_enabled(&self, m: &[u32], t: usize) -> bool {
        self.pre(t).iter().all(|&(p, w)| m[p as usize] >= w)
    }

    pub fn enabled(&self, m: &[u32], out: &mut Vec<u32>) {
        out.clear();
        for t in 0..self.transitions {
            if self.is_enabled(m, t) {
                out.push(t as u32);
            }
        }
    }

    /// The marking after firing `t` (enabled) in `m`.
    pub fn fire(&self, m: &[u32], t: usize) -> Vec<u64> {
        let mut out: Vec<u64> = m.iter().map(|&v| v as u64).collect();
        for &(p, d) in self.eff(t) {
            out[p as usize] = (out[p as usize] as i64 + d) as u64;
        }
        out
    }

    /// A stubborn set's enabled transitions for marking `m` with enabled transitions
    /// `enabled` (non-empty): the closure of the first enabled transition under
    /// "enabled t: add every transition consuming from a place t consumes from" and
    /// "disabled t: add every transition that increases a place that lacks tokens for t
    /// (the one with the fewest such transitions)".
    pub fn stubborn(
        &self,
        m: &[u32],
        enabled: &[u32],
        in_set: &mut Vec<bool>,
        work: &mut Vec<u32>,
        out: &mut Vec<u32>,
    ) {
        out.clear();
        in_set.clear();
        in_set.resize(self.transitions, false);
        // Start from the enabled transition with the fewest conflicts.
        let start = enabled
            .iter()
            .copied()
            .min_by_key(|&t| {
                self.pre(t as usize)
                    .iter()
                    .map(|&(p, _)| self.consumers[p as usize].len())
                    .sum::<usize>()
            })
            .unwrap_or(enabled[0]);
        work.clear();
        work.push(start);
        in_set[start as usize] = true;
        while let Some(t) = work.pop() {
            let t = t as usize;
            if self.is_enabled(m, t) {
                out.push(t as u32);
                for &(p, _) in self.pre(t) {
                    for &u in &self.consumers[p as usize] {
                        if !in_set[u as usize] {
                            in_set[u as usize] = true;
                            work.push(u);
                        }
                    }
                }
            } else {
                let scapegoat = self
                    .pre(t)
                    .iter()
                    .filter(|&&(p, w)| m[p as usize] < w)
                    .min_by_key(|&&(p, _)| self.increasers[p as usize].len())
                    .map(|&(p, _)| p);
                if let Some(p) = scapegoat {
                    for &u in &self.increasers[p as usize] {
                        if !in_set[u as usize] {
                            in_set[u as usize] = true;
                            work.push(u);
                        }
                    }
                }
            }
        }
        out.sort_unstable();
    }
}

/// The explored state space and what was observed on the way.
#[derive(Debug)]
pub struct PtExploration {
    pub packing: Packing,
    pub store: StateStore,
    /// First state id of each BFS level, then the number of states.
    pub levels: Vec<u32>,
    /// Parent of each state (`u32::MAX` for the initial one), kept for nets not proven bounded.
    pub parents: Option<Vec<u32>>,
    pub edges: u64,
    pub stop: Option<Stop>,
    /// Number of dead markings and the first (nearest) ones, up to the requested number.
    pub dead_count: u64,
    pub dead: Vec<u32>,
    /// Per transition: fired somewhere (exact only without reduction).
    pub fired: Vec<bool>,
    pub place_max: Vec<u64>,
    pub marking_max: u64,
    /// First marking (nearest) with more than one token on a place.
    pub first_unsafe: Option<(u32, PlaceId)>,
    /// Coverability witness: the ancestor, the covering state, the places that grow.
    pub unbounded: Option<(u32, u32, Vec<PlaceId>)>,
    /// States not expanded because of `max_tokens`.
    pub cut: u64,
    pub first_cut: Option<u32>,
    pub reduction: Reduction,
    /// Exploration restarts for a wider packing.
    pub restarts: u32,
    /// Whether the P-invariants prove every place bounded.
    pub structurally_bounded: bool,
}

impl PtExploration {
    pub fn states(&self) -> u64 {
        self.store.len() as u64
    }

    pub fn complete(&self) -> bool {
        self.stop.is_none() && self.cut == 0
    }

    /// Bytes per stored state: the packed marking, its share of the hash index, and (nets not
    /// proven bounded) parent and path-minimum (8 bytes). Arena chunks are allocated 65536
    /// states at a time, so small state spaces hold more than this.
    pub fn bytes_per_state(&self) -> f64 {
        let n = self.store.len().max(1) as f64;
        let extra = if self.parents.is_some() { 8.0 } else { 0.0 };
        self.store.stride() as f64 + self.store.index_bytes() as f64 / n + extra
    }

    pub fn marking(&self, s: u32) -> Vec<u32> {
        let mut m = Vec::new();
        self.packing.unpack(self.store.get(s), &mut m);
        m
    }

    /// BFS depth of a state.
    pub fn depth(&self, s: u32) -> usize {
        self.levels
            .partition_point(|&start| start <= s)
            .saturating_sub(1)
    }
}

enum Restart {
    Widen,
}

/// Explores the state space of `net`. `traces` bounds the number of dead states remembered.
pub fn explore(
    net: &PtNet,
    c: &Compiled,
    opts: &PtOptions,
    p_invariants: Option<&[Vec<u64>]>,
    traces: usize,
) -> PtExploration {
    let m0 = net.initial_marking();
    let bounds = p_invariants.map(|inv| invariants::place_bounds(inv, &m0));
    let structurally_bounded = bounds
        .as_ref()
        .is_some_and(|b| b.iter().all(Option::is_some));
    let start_max = match (&bounds, structurally_bounded) {
        (Some(b), true) => b.iter().map(|x| x.unwrap_or(0)).max().unwrap_or(0),
        _ => m0.iter().copied().max().unwrap_or(0).max(1),
    };
    let mut packing = Packing::for_max(c.places, start_max.min(u32::MAX as u64));
    let mut restarts = 0;
    loop {
        let fast = packing.bits == 1
            && structurally_bounded
            && opts.reduction == Reduction::None
            && opts.max_tokens.is_none();
        let r = if fast {
            explore_bits(c, &m0, opts, packing, traces)
        } else {
            explore_with(c, &m0, opts, packing, !structurally_bounded, traces)
        };
        match r {
            Ok(mut e) => {
                e.restarts = restarts;
                e.structurally_bounded = structurally_bounded;
                return e;
            }
            Err(Restart::Widen) => {
                restarts += 1;
                match packing.wider() {
                    Some(p) => packing = p,
                    None => unreachable!("32-bit packing never asks to widen"),
                }
            }
        }
    }
}

fn explore_with(
    c: &Compiled,
    m0: &[u64],
    opts: &PtOptions,
    pk: Packing,
    coverability: bool,
    traces: usize,
) -> Result<PtExploration, Restart> {
    let stride = pk.stride();
    let mut store = StateStore::new(stride);
    let init: Vec<u32> = m0.iter().map(|&v| v as u32).collect();
    if init.iter().any(|&v| v as u64 > pk.max_value()) {
        return Err(Restart::Widen);
    }
    let mut buf = vec![0u8; stride];
    pk.pack(&init, &mut buf);
    store.insert(&buf);
    let mut e = PtExploration {
        packing: pk,
        store,
        levels: vec![0],
        parents: coverability.then(|| vec![u32::MAX]),
        edges: 0,
        stop: None,
        dead_count: 0,
        dead: Vec::new(),
        fired: vec![false; c.transitions],
        place_max: m0.to_vec(),
        marking_max: m0.iter().sum(),
        first_unsafe: None,
        unbounded: None,
        cut: 0,
        first_cut: None,
        reduction: opts.reduction,
        restarts: 0,
        structurally_bounded: false,
    };
    if let Some(p) = init.iter().position(|&v| v > 1) {
        e.first_unsafe = Some((0, PlaceId::from(p)));
    }
    let mut min_sum: Vec<u64> = if coverability {
        vec![e.marking_max]
    } else {
        Vec::new()
    };
    let max_states = opts.max_states.unwrap_or(u64::MAX).max(1);
    let max_tokens = opts.max_tokens.unwrap_or(u64::MAX);
    let pmax = pk.max_value();
    let mut cur: Vec<u32> = Vec::with_capacity(c.places);
    let mut parent_buf = vec![0u8; stride];
    let mut enabled: Vec<u32> = Vec::new();
    let mut fire_set: Vec<u32> = Vec::new();
    let (mut in_set, mut work) = (Vec::new(), Vec::new());
    let mut anc: Vec<u32> = Vec::new();
    let mut head = 0usize;
    let mut level_end = 1usize;
    'outer: while head < e.store.len() {
        if head == level_end {
            e.levels.push(head as u32);
            level_end = e.store.len();
        }
        let s = head as u32;
        head += 1;
        parent_buf.copy_from_slice(e.store.get(s));
        pk.unpack(&parent_buf, &mut cur);
        if cur.iter().any(|&v| v as u64 > max_tokens) {
            e.cut += 1;
            e.first_cut.get_or_insert(s);
            continue;
        }
        c.enabled(&cur, &mut enabled);
        if enabled.is_empty() {
            e.dead_count += 1;
            if e.dead.len() < traces {
                e.dead.push(s);
            }
            continue;
        }
        for &t in &enabled {
            e.fired[t as usize] = true;
        }
        let set: &[u32] = if opts.reduction == Reduction::Stubborn && enabled.len() > 1 {
            c.stubborn(&cur, &enabled, &mut in_set, &mut work, &mut fire_set);
            &fire_set
        } else {
            &enabled
        };
        let psum: u64 = cur.iter().map(|&v| v as u64).sum();
        for &t in set {
            let t = t as usize;
            e.edges += 1;
            buf.copy_from_slice(&parent_buf);
            for &(p, d) in c.eff(t) {
                let v = (cur[p as usize] as i64 + d) as u64;
                if v > pmax {
                    if pk.bits == 32 {
                        e.stop = Some(Stop::Capacity(format!(
                            "more than {pmax} tokens on a place"
                        )));
                        break 'outer;
                    }
                    return Err(Restart::Widen);
                }
                pk.set(&mut buf, p as usize, v as u32);
            }
            let Some((id, new)) = e.store.insert(&buf) else {
                e.stop = Some(Stop::Capacity("more than 2^32-2 states".into()));
                break 'outer;
            };
            if !new {
                continue;
            }
            // New marking: bounds, safety, marking size.
            let new_sum = (psum as i64 + c.sum_delta[t]) as u64;
            e.marking_max = e.marking_max.max(new_sum);
            for &(p, d) in c.eff(t) {
                if d > 0 {
                    let v = (cur[p as usize] as i64 + d) as u64;
                    let pm = &mut e.place_max[p as usize];
                    *pm = (*pm).max(v);
                    if v > 1 && e.first_unsafe.is_none() {
                        e.first_unsafe = Some((id, PlaceId(p)));
                    }
                }
            }
            if let Some(parents) = &mut e.parents {
                parents.push(s);
                let ms = min_sum[s as usize].min(new_sum);
                min_sum.push(ms);
                if new_sum > min_sum[s as usize] {
                    // Does the new marking strictly cover an ancestor?
                    let next: Vec<u64> = c.fire(&cur, t);
                    let mut a = s;
                    loop {
                        pk.unpack(e.store.get(a), &mut anc);
                        if anc.iter().zip(&next).all(|(&x, &y)| x as u64 <= y) {
                            let grow = anc
                                .iter()
                                .zip(&next)
                                .enumerate()
                                .filter(|(_, (x, y))| (**x as u64) < **y)
                                .map(|(p, _)| PlaceId::from(p))
                                .collect();
                            e.unbounded = Some((a, id, grow));
                            e.stop = Some(Stop::Unbounded);
                            break 'outer;
                        }
                        let pa = parents[a as usize];
                        if pa == u32::MAX {
                            break;
                        }
                        a = pa;
                    }
                }
            }
            if e.store.len() as u64 >= max_states && head < e.store.len() {
                e.stop = Some(Stop::StateLimit);
                break 'outer;
            }
        }
    }
    e.levels.push(e.store.len() as u32);
    Ok(e)
}

/// Bit masks of a transition for markings of one bit per place.
struct BitTrans {
    /// Can never fire at one bit per place (an input weight above 1).
    never: bool,
    /// Firing always puts a second token somewhere.
    overflow: bool,
    pre: Vec<u64>,
    clear: Vec<u64>,
    set: Vec<u64>,
}

/// The exploration of nets whose markings fit one bit per place (1-safe by their invariants):
/// enabledness and firing are word-wide mask operations, and the successors of a state are
/// hashed and prefetched together before they are looked up.
fn explore_bits(
    c: &Compiled,
    m0: &[u64],
    opts: &PtOptions,
    pk: Packing,
    traces: usize,
) -> Result<PtExploration, Restart> {
    let w = c.places.div_ceil(64).max(1);
    let stride = pk.stride();
    let mut bt: Vec<BitTrans> = Vec::with_capacity(c.transitions);
    for t in 0..c.transitions {
        let mut b = BitTrans {
            never: false,
            overflow: false,
            pre: vec![0; w],
            clear: vec![0; w],
            set: vec![0; w],
        };
        for &(p, wt) in c.pre(t) {
            b.never |= wt > 1;
            b.pre[p as usize / 64] |= 1 << (p % 64);
        }
        for &(p, d) in c.eff(t) {
            let in_pre = b.pre[p as usize / 64] & (1 << (p % 64)) != 0;
            match d {
                -1 => b.clear[p as usize / 64] |= 1 << (p % 64),
                1 if !in_pre => b.set[p as usize / 64] |= 1 << (p % 64),
                _ => b.overflow = true,
            }
        }
        bt.push(b);
    }
    // Flat masks: per transition `pre`, `clear`, `set`, `w` words each.
    let masks: Vec<u64> = bt
        .iter()
        .flat_map(|b| b.pre.iter().chain(&b.clear).chain(&b.set).copied())
        .collect();
    let mut store = StateStore::new(stride);
    let init: Vec<u32> = m0.iter().map(|&v| v as u32).collect();
    if init.iter().any(|&v| v > 1) {
        return Err(Restart::Widen);
    }
    let mut buf = vec![0u8; stride];
    pk.pack(&init, &mut buf);
    store.insert(&buf);
    let mut e = PtExploration {
        packing: pk,
        store,
        levels: vec![0],
        parents: None,
        edges: 0,
        stop: None,
        dead_count: 0,
        dead: Vec::new(),
        fired: vec![false; c.transitions],
        place_max: m0.to_vec(),
        marking_max: m0.iter().sum(),
        first_unsafe: None,
        unbounded: None,
        cut: 0,
        first_cut: None,
        reduction: Reduction::None,
        restarts: 0,
        structurally_bounded: true,
    };
    let max_states = opts.max_states.unwrap_or(u64::MAX).max(1);
    let mut sw = vec![0u64; w];
    let mut seen = vec![0u64; w];
    let mut bytes = vec![0u8; w * 8];
    let mut batch: Vec<u8> = Vec::new();
    let mut hashes: Vec<u64> = Vec::new();
    let mut ts: Vec<u32> = Vec::new();
    let mut head = 0usize;
    let mut level_end = 1usize;
    'outer: while head < e.store.len() {
        if head == level_end {
            e.levels.push(head as u32);
            level_end = e.store.len();
        }
        let s = head as u32;
        head += 1;
        bytes.fill(0);
        bytes[..stride].copy_from_slice(e.store.get(s));
        for (k, x) in sw.iter_mut().enumerate() {
            *x = u64::from_le_bytes(bytes[k * 8..k * 8 + 8].try_into().unwrap_or_default());
        }
        batch.clear();
        hashes.clear();
        ts.clear();
        for t in 0..bt.len() {
            let m = &masks[t * 3 * w..(t + 1) * 3 * w];
            let (pre, rest) = m.split_at(w);
            let (clear, set) = rest.split_at(w);
            if !sw.iter().zip(pre).all(|(x, m)| x & m == *m) || bt[t].never {
                continue;
            }
            if bt[t].overflow || sw.iter().zip(set).any(|(x, m)| x & m != 0) {
                return Err(Restart::Widen);
            }
            for k in 0..w {
                let nx = (sw[k] & !clear[k]) | set[k];
                bytes[k * 8..k * 8 + 8].copy_from_slice(&nx.to_le_bytes());
            }
            let start = batch.len();
            batch.extend_from_slice(&bytes[..stride]);
            let h = crate::store::hash(&batch[start..]);
            e.store.prefetch(h);
            hashes.push(h);
            ts.push(t as u32);
        }
        if ts.is_empty() {
            e.dead_count += 1;
            if e.dead.len() < traces {
                e.dead.push(s);
            }
            continue;
        }
        for (k, &t) in ts.iter().enumerate() {
            e.fired[t as usize] = true;
            e.edges += 1;
            let key = &batch[k * stride..(k + 1) * stride];
            let Some((_, new)) = e.store.insert_hashed(key, hashes[k]) else {
                e.stop = Some(Stop::Capacity("more than 2^32-2 states".into()));
                break 'outer;
            };
            if new {
                let mut ones = 0u64;
                for (j, chunk) in key.chunks(8).enumerate() {
                    let mut b8 = [0u8; 8];
                    b8[..chunk.len()].copy_from_slice(chunk);
                    let x = u64::from_le_bytes(b8);
                    ones += x.count_ones() as u64;
                    seen[j] |= x;
                }
                e.marking_max = e.marking_max.max(ones);
                if e.store.len() as u64 >= max_states && head < e.store.len() {
                    e.stop = Some(Stop::StateLimit);
                    break 'outer;
                }
            }
        }
    }
    for p in 0..c.places {
        if seen[p / 64] & (1 << (p % 64)) != 0 {
            e.place_max[p] = 1;
        }
    }
    e.levels.push(e.store.len() as u32);
    Ok(e)
}

/// A shortest firing sequence from the initial marking to state `target`.
pub fn trace_to(c: &Compiled, e: &PtExploration, target: u32) -> Vec<TransitionId> {
    let mut path = Vec::new();
    let mut cur_state = target;
    let mut m = Vec::new();
    let mut en = Vec::new();
    let mut buf = vec![0u8; e.store.stride()];
    while cur_state != 0 {
        let pred_range = match &e.parents {
            Some(p) => {
                let a = p[cur_state as usize];
                a..a + 1
            }
            None => {
                let d = e.depth(cur_state);
                e.levels[d - 1]..e.levels[d]
            }
        };
        let want = e.store.get(cur_state).to_vec();
        let mut found = None;
        'scan: for s in pred_range {
            e.packing.unpack(e.store.get(s), &mut m);
            c.enabled(&m, &mut en);
            for &t in &en {
                let next = c.fire(&m, t as usize);
                if next.iter().any(|&v| v > e.packing.max_value()) {
                    continue;
                }
                let next32: Vec<u32> = next.iter().map(|&v| v as u32).collect();
                e.packing.pack(&next32, &mut buf);
                if buf == want {
                    found = Some((s, t));
                    break 'scan;
                }
            }
        }
        let Some((s, t)) = found else {
            break; // cannot happen for a state of the exploration
        };
        path.push(TransitionId(t));
        cur_state = s;
    }
    path.reverse();
    path
}

/// The successors (state id, transition) of a state among the explored ones, full firing rule.
pub fn successors(
    c: &Compiled,
    e: &PtExploration,
    s: u32,
    m: &mut Vec<u32>,
    en: &mut Vec<u32>,
    buf: &mut Vec<u8>,
    out: &mut Vec<(u32, u32)>,
) {
    e.packing.unpack(e.store.get(s), m);
    c.enabled(m, en);
    buf.resize(e.store.stride(), 0);
    for &t in en.iter() {
        buf.copy_from_slice(e.store.get(s));
        let mut fits = true;
        for &(p, d) in c.eff(t as usize) {
            let v = (m[p as usize] as i64 + d) as u64;
            if v > e.packing.max_value() {
                fits = false;
                break;
            }
            e.packing.set(buf, p as usize, v as u32);
        }
        if fits && let Some(id) = e.store.find(buf) {
            out.push((id, t));
        }
    }
}
