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
use crate::store::{Arena, BatchEnd, Packing, StateStore};

mod par;
use par::{Par, Pool};

/// How to explore.
#[derive(Clone, Debug)]
pub struct PtOptions {
    /// Stop after this many states (the verdicts are then partial).
    pub max_states: Option<u64>,
    /// Do not expand markings with more than this many tokens on a place.
    pub max_tokens: Option<u64>,
    pub reduction: Reduction,
    /// Keep the state index compact: 8-byte slots (hash tag and id, the marking compared in
    /// the arena) even for markings short enough to be kept in 16-byte slots. Less memory
    /// per state, slower lookups; the results are the same.
    pub compact_index: bool,
    /// Stop when the states kept (arena, index, parents) take more than this many bytes
    /// (the verdicts are then partial). `pnetv` sets it from `--max-memory`.
    pub max_memory: Option<u64>,
    /// Threads exploring (1: one, the calling thread). Used by the one-bit-per-place
    /// explorer with an inline index (markings of at most 12 bytes, not `compact_index`) on
    /// levels of at least 8192 states; the results are the same.
    pub threads: usize,
}

impl Default for PtOptions {
    fn default() -> Self {
        PtOptions {
            max_memory: None,
            max_states: None,
            max_tokens: None,
            reduction: Reduction::None,
            compact_index: false,
            threads: 1,
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
    /// The states kept took more than `max_memory` bytes.
    MemoryLimit(u64),
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

    /// Bytes held by the states kept: the store's arena and index, and the parents.
    pub fn memory_bytes(&self) -> u64 {
        let parents = self.parents.as_ref().map_or(0, |p| p.capacity() * 4);
        (self.store.memory_bytes() + parents) as u64
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

/// Whether an exploration on `threads` threads leaves a core free for the store's writes of
/// fresh pages ahead of need ([`StateStore::write_ahead`]).
fn spare_core(threads: usize) -> bool {
    std::thread::available_parallelism().map_or(1, |n| n.get()) > threads.max(1)
}

/// `Some(limit)` when the exploration holds more than `opts.max_memory` bytes.
fn over_memory(e: &PtExploration, opts: &PtOptions) -> Option<u64> {
    opts.max_memory.filter(|&limit| e.memory_bytes() > limit)
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
    // Without a proof of 1-safety (no invariants, or over their budget), a net whose initial
    // marking fits one bit per place is first explored at one bit per place all the same: a
    // complete exploration then proves it 1-safe (and bounded), and the first marking with a
    // second token on a place ends the attempt, which is then made again as before (one bit
    // per place, coverability check), not counted as a restart.
    let mut optimistic = !structurally_bounded;
    loop {
        let fast = packing.bits == 1
            && (structurally_bounded || optimistic)
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
            Err(Restart::Widen) if fast && optimistic => optimistic = false,
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
    let mut store = StateStore::with_layout(stride, opts.compact_index);
    store.write_ahead(spare_core(1));
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
    let (mut keys, mut hashes): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
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
        // First every successor (up to one with too many tokens for the packing), hashed and
        // its index slot prefetched; then the lookups, in order.
        keys.clear();
        hashes.clear();
        let mut overflow = None;
        for (k, &t) in set.iter().enumerate() {
            buf.copy_from_slice(&parent_buf);
            for &(p, d) in c.eff(t as usize) {
                let v = (cur[p as usize] as i64 + d) as u64;
                if v > pmax {
                    overflow = Some(k);
                    break;
                }
                pk.set(&mut buf, p as usize, v as u32);
            }
            if overflow.is_some() {
                break;
            }
            let h = crate::store::hash(&buf);
            e.store.prefetch(h);
            hashes.push(h);
            keys.extend(buf.chunks(8).map(crate::store::le_word));
        }
        let words = e.store.words();
        for (k, &t) in set.iter().enumerate() {
            let t = t as usize;
            e.edges += 1;
            if overflow == Some(k) {
                if pk.bits == 32 {
                    e.stop = Some(Stop::Capacity(format!(
                        "more than {pmax} tokens on a place"
                    )));
                    break 'outer;
                }
                return Err(Restart::Widen);
            }
            let key = &keys[k * words..(k + 1) * words];
            let Some((id, new)) = e.store.insert_words(key, hashes[k]) else {
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
            if let Some(limit) = over_memory(&e, opts) {
                e.stop = Some(Stop::MemoryLimit(limit));
                break 'outer;
            }
        }
    }
    e.levels.push(e.store.len() as u32);
    Ok(e)
}

/// States expanded together (within one BFS level) before their successors are looked up.
const BATCH_STATES: usize = 64;
/// Largest size of the enabledness tables of [`BitNet`] (bytes).
const BYTE_TABLES_MAX: usize = 2 << 20;

/// A net whose markings fit one bit per place, compiled to word masks.
struct BitNet {
    /// Words per marking.
    w: usize,
    /// Per transition that can fire at one bit per place (an input weight above 1 cannot),
    /// in transition order: its id and whether firing it always puts a second token
    /// somewhere.
    firable: Vec<(u32, bool)>,
    /// Per firable transition: its masks `pre`, `clear`, `set` (`w` words each).
    masks: Vec<u64>,
    /// Words of a set of firable transitions.
    tw: usize,
    /// Enabledness by marking byte: for byte `b` of a marking with value `v`, the firable
    /// transitions none of whose input places in that byte is empty, at
    /// `((b * 256) + v) * tw`. The enabled set of a marking is the intersection over its
    /// bytes. Empty when the tables would pass [`BYTE_TABLES_MAX`] (then each transition's
    /// `pre` mask is tested).
    bytes: Vec<u64>,
    /// Per firable transition (read without byte tables, in large nets), the words of its `pre`
    /// mask that are not zero (word index, mask), at `pre_words[pre_at[j]..pre_at[j + 1]]`:
    /// a transition reads the words of its input places, not all `w` words of the marking.
    pre_at: Vec<u32>,
    pre_words: Vec<(u32, u64)>,
}

impl BitNet {
    fn new(c: &Compiled, stride: usize) -> BitNet {
        let w = c.places.div_ceil(64).max(1);
        let mut firable: Vec<(u32, bool)> = Vec::with_capacity(c.transitions);
        let mut masks: Vec<u64> = Vec::with_capacity(c.transitions * 3 * w);
        for t in 0..c.transitions {
            let mut never = false;
            let mut overflow = false;
            let (mut pre, mut clear, mut set) = (vec![0u64; w], vec![0u64; w], vec![0u64; w]);
            for &(p, wt) in c.pre(t) {
                never |= wt > 1;
                pre[p as usize / 64] |= 1 << (p % 64);
            }
            for &(p, d) in c.eff(t) {
                let in_pre = pre[p as usize / 64] & (1 << (p % 64)) != 0;
                match d {
                    -1 => clear[p as usize / 64] |= 1 << (p % 64),
                    1 if !in_pre => set[p as usize / 64] |= 1 << (p % 64),
                    _ => overflow = true,
                }
            }
            if !never {
                firable.push((t as u32, overflow));
                masks.extend(pre.iter().chain(&clear).chain(&set));
            }
        }
        let tw = firable.len().div_ceil(64).max(1);
        let mut bytes = Vec::new();
        if stride.saturating_mul(256 * tw * 8) <= BYTE_TABLES_MAX {
            let mut all = vec![0u64; tw];
            for j in 0..firable.len() {
                all[j / 64] |= 1 << (j % 64);
            }
            bytes = all.repeat(stride * 256);
            for (j, m) in masks.chunks_exact(3 * w).enumerate() {
                for p in 0..c.places {
                    if m[p / 64] & (1 << (p % 64)) == 0 {
                        continue;
                    }
                    // Transition j is disabled by every value of p's byte without p.
                    let (b, bit) = (p / 8, p % 8);
                    for v in (0..256).filter(|v| v & (1 << bit) == 0) {
                        bytes[(b * 256 + v) * tw + j / 64] &= !(1 << (j % 64));
                    }
                }
            }
        }
        let (mut pre_at, mut pre_words) = (vec![0], Vec::new());
        for m in masks.chunks_exact(3 * w) {
            pre_words.extend(
                m[..w]
                    .iter()
                    .enumerate()
                    .filter(|&(_, &x)| x != 0)
                    .map(|(k, &x)| (k as u32, x)),
            );
            pre_at.push(pre_words.len() as u32);
        }
        BitNet {
            w,
            firable,
            masks,
            tw,
            bytes,
            pre_at,
            pre_words,
        }
    }
}

impl BitNet {
    /// The set of firable transitions enabled in marking `sw` (`stride` bytes) into `en`
    /// (`tw` words): by the byte tables, or without them by the words of each transition's
    /// input places. Inlined into callers with constant `tw`.
    #[inline(always)]
    fn enabled(&self, tw: usize, stride: usize, sw: &[u64], en: &mut [u64]) {
        if !self.bytes.is_empty() {
            en.fill(u64::MAX);
            for b in 0..stride {
                let v = (sw[b / 8] >> (8 * (b % 8))) as u8 as usize;
                let row = &self.bytes[(b * 256 + v) * tw..(b * 256 + v + 1) * tw];
                for (x, &r) in en.iter_mut().zip(row) {
                    *x &= r;
                }
            }
        } else {
            en.fill(0);
            for (j, at) in self.pre_at.windows(2).enumerate() {
                let words = &self.pre_words[at[0] as usize..at[1] as usize];
                let enabled = words.iter().all(|&(k, m)| sw[k as usize] & m == m);
                en[j / 64] |= (enabled as u64) << (j % 64);
            }
        }
    }
}

/// The exploration of nets whose markings fit one bit per place (1-safe by their invariants):
/// enabledness and firing are word-wide mask operations. The states of a level are expanded
/// in batches: the successors of up to [`BATCH_STATES`] states are computed and hashed first,
/// then looked up and inserted in order by [`StateStore::insert_batch`], which keeps many
/// cache misses in flight. Ids, counts and verdicts are those of a one-by-one exploration.
/// With `opts.threads` above 1 (and an inline index), the slices of large levels are
/// expanded by every thread (module `par`), with the same ids, counts and verdicts again.
fn explore_bits(
    c: &Compiled,
    m0: &[u64],
    opts: &PtOptions,
    pk: Packing,
    traces: usize,
) -> Result<PtExploration, Restart> {
    explore_bits_sliced(c, m0, opts, pk, traces, PAR_MIN, PAR_SLICE, PAR_CHUNK)
}

/// [`explore_bits`] with levels of at least `par_min` states left expanded by the threads
/// in slices of `par_slice` states (a multiple of [`BATCH_STATES`]), each thread taking
/// `par_chunk` batches at a time.
#[allow(clippy::too_many_arguments)]
fn explore_bits_sliced(
    c: &Compiled,
    m0: &[u64],
    opts: &PtOptions,
    pk: Packing,
    traces: usize,
    par_min: usize,
    par_slice: usize,
    par_chunk: usize,
) -> Result<PtExploration, Restart> {
    debug_assert_eq!(par_slice % BATCH_STATES, 0);
    let stride = pk.stride();
    let net = BitNet::new(c, stride);
    let w = net.w;
    let mut store = StateStore::with_layout(stride, opts.compact_index);
    // The threads explore with an inline index only.
    store.write_ahead(spare_core(if store.is_inline() { opts.threads } else { 1 }));
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
    let lim = Limits {
        stop_len: usize::try_from(max_states).unwrap_or(usize::MAX),
        max_memory: opts.max_memory,
        traces,
    };
    let mut seen = Seen {
        places: vec![0u64; w],
        words: vec![0u64; w],
    };
    let mut batch = BitBatch::new(w, net.tw);
    // The threads (with `--threads`) live for the whole exploration.
    let pool = (opts.threads > 1 && e.store.is_inline())
        .then(|| Pool::new(opts.threads, &net, c.transitions));
    std::thread::scope(|sc| -> Result<(), Restart> {
        let mut par = pool
            .as_ref()
            .and_then(|pool| Par::new(sc, pool, par_chunk, &net));
        let mut head = 0usize;
        let mut level_end = 1usize;
        'levels: while head < e.store.len() {
            if head == level_end {
                e.levels.push(head as u32);
                level_end = e.store.len();
            }
            // Expanded one batch at a time up to `seq_end`: the next batch, or a slice of a large
            // level that the threads left (a limit reached in it, a second token on a place).
            let mut seq_end = head + 1;
            if let Some(par) = &mut par
                && level_end - head >= par_min
            {
                let slice_end = (head + par_slice).min(level_end);
                if par.slice(&net, &mut e, head..slice_end, &lim, &mut seen) {
                    head = slice_end;
                    continue;
                }
                seq_end = slice_end;
            }
            // Arena chunks reserved for the threads are given back first: the store is then as
            // the one-thread code left it (its memory checked against the limit).
            e.store.trim_arena();
            while head < seq_end {
                let batch_end = (head + BATCH_STATES).min(level_end);
                if bits_batch(&net, &mut e, &mut batch, head..batch_end, &lim, &mut seen)? {
                    break 'levels;
                }
                if let Some(limit) = over_memory(&e, opts) {
                    e.stop = Some(Stop::MemoryLimit(limit));
                    break 'levels;
                }
                head = batch_end;
            }
        }
        Ok(())
    })?;
    e.store.trim_arena();
    for p in 0..c.places {
        if seen.places[p / 64] & (1 << (p % 64)) != 0 {
            e.place_max[p] = 1;
        }
    }
    e.levels.push(e.store.len() as u32);
    Ok(e)
}

/// The limits of a one-bit exploration: states, memory, dead states remembered.
struct Limits {
    stop_len: usize,
    max_memory: Option<u64>,
    traces: usize,
}

/// The places marked in some state so far and scratch words.
struct Seen {
    places: Vec<u64>,
    words: Vec<u64>,
}

impl Seen {
    /// Takes in the states from `from` on: their places and token counts.
    fn add(&mut self, e: &mut PtExploration, from: usize) {
        for id in from..e.store.len() {
            e.store.get_words(id as u32, &mut self.words);
            let mut ones = 0u64;
            for (s, &x) in self.places.iter_mut().zip(&self.words) {
                ones += x.count_ones() as u64;
                *s |= x;
            }
            e.marking_max = e.marking_max.max(ones);
        }
    }
}

/// Expands one batch of states (`states`, within a level) and inserts their successors;
/// `Ok(true)` when a limit stopped the exploration.
fn bits_batch(
    net: &BitNet,
    e: &mut PtExploration,
    batch: &mut BitBatch,
    states: std::ops::Range<usize>,
    lim: &Limits,
    seen: &mut Seen,
) -> Result<bool, Restart> {
    let (head, w) = (states.start, net.w);
    batch.n = 0;
    batch.ends.clear();
    expand_any(net, &e.store.arena(), states, batch)?;
    let old_len = e.store.len();
    let n = batch.n;
    let end = e
        .store
        .insert_batch(&batch.keys[..n * w], &batch.hashes[..n], lim.stop_len, None);
    // The edges handled: all, or up to the one that hit the state limit (included) or the
    // store's capacity (included: it counts as fired); the exploration stops there, as a
    // one-by-one one would.
    let (edges_seen, stopped) = match end {
        BatchEnd::All => (n, false),
        BatchEnd::Stopped(n) => {
            e.stop = Some(Stop::StateLimit);
            (n, true)
        }
        BatchEnd::Full(n) => {
            e.stop = Some(Stop::Capacity("more than 2^32-2 states".into()));
            (n + 1, true)
        }
    };
    e.edges += edges_seen as u64;
    let mut from = 0;
    for (j, &to) in batch.ends.iter().enumerate() {
        if stopped && from >= edges_seen {
            break; // states after the one whose edge stopped the exploration
        }
        if to == from {
            e.dead_count += 1;
            if e.dead.len() < lim.traces {
                e.dead.push((head + j) as u32);
            }
        }
        for &t in &batch.ts[from..to] {
            e.fired[t as usize] = true;
        }
        from = to;
    }
    seen.add(e, old_len);
    Ok(stopped)
}

/// [`expand_bits`] with constant word counts for the common sizes (the compiler then unrolls
/// the mask loops).
fn expand_any(
    net: &BitNet,
    st: &Arena<'_>,
    states: std::ops::Range<usize>,
    batch: &mut BitBatch,
) -> Result<(), Restart> {
    match (net.w, net.tw) {
        (1, 1) => expand_bits(1, 1, net, st, states, batch),
        (1, 2) => expand_bits(1, 2, net, st, states, batch),
        (2, 1) => expand_bits(2, 1, net, st, states, batch),
        (2, 2) => expand_bits(2, 2, net, st, states, batch),
        (w, tw) => expand_bits(w, tw, net, st, states, batch),
    }
}

/// Levels with at least this many states left are expanded by every thread.
const PAR_MIN: usize = 8192;
/// States per slice expanded by the threads together (a multiple of [`BATCH_STATES`], so a
/// slice left to one thread is cut into the batches of a one-thread exploration).
const PAR_SLICE: usize = 1 << 14;
/// Batches a thread takes at a time from a slice: neighbouring states share many
/// successors, whose index buckets are then in the cache of the same core.
const PAR_CHUNK: usize = 8;

/// Scratch space of [`expand_bits`] and the successors of a batch of states: `n` keys of
/// `w` words, their hashes and transitions (in buffers that grow as needed and may be longer
/// than `n`), and per expanded state the end of its successors in these lists.
struct BitBatch {
    sw: Vec<u64>,
    next: Vec<u64>,
    en: Vec<u64>,
    n: usize,
    keys: Vec<u64>,
    hashes: Vec<u64>,
    ts: Vec<u32>,
    ends: Vec<usize>,
}

impl BitBatch {
    /// Room for 16 successors per state of a batch to start with; grown as needed.
    fn new(w: usize, tw: usize) -> BitBatch {
        let room = BATCH_STATES * 16;
        BitBatch {
            sw: vec![0; w],
            next: vec![0; w],
            en: vec![0; tw],
            n: 0,
            keys: vec![0; room * w],
            hashes: vec![0; room],
            ts: vec![0; room],
            ends: Vec::with_capacity(BATCH_STATES),
        }
    }
}

/// Fires every enabled transition in each of `states` (markings of one bit per place, `w`
/// words; `tw` words per transition set) into `out`. Inlined into calls with constant `w`
/// and `tw`.
#[inline(always)]
fn expand_bits(
    w: usize,
    tw: usize,
    net: &BitNet,
    store: &Arena<'_>,
    states: std::ops::Range<usize>,
    out: &mut BitBatch,
) -> Result<(), Restart> {
    let stride = store.stride();
    let (firable, masks) = (&net.firable[..], &net.masks[..]);
    let mut n = out.n;
    for s in states {
        store.get_words(s as u32, &mut out.sw[..w]);
        net.enabled(tw, stride, &out.sw[..w], &mut out.en[..tw]);
        // Room for every successor of this state.
        let need = n + out.en[..tw]
            .iter()
            .map(|x| x.count_ones() as usize)
            .sum::<usize>();
        if need > out.hashes.len() {
            let len = need.max(2 * out.hashes.len());
            out.keys.resize(len * w, 0);
            out.hashes.resize(len, 0);
            out.ts.resize(len, 0);
        }
        // Plain slices and a local count: the loop keeps its bases in registers.
        let (sw, next) = (&out.sw[..w], &mut out.next[..w]);
        let (keys, hashes, ts) = (&mut out.keys[..], &mut out.hashes[..], &mut out.ts[..]);
        for (x, &word) in out.en[..tw].iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let j = x * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (t, overflow) = firable[j];
                let m = &masks[j * 3 * w..(j + 1) * 3 * w];
                let (clear, set) = (&m[w..2 * w], &m[2 * w..]);
                let mut clash = overflow;
                let key = &mut keys[n * w..(n + 1) * w];
                for k in 0..w {
                    clash |= sw[k] & set[k] != 0;
                    next[k] = (sw[k] & !clear[k]) | set[k];
                    key[k] = next[k];
                }
                if clash {
                    return Err(Restart::Widen);
                }
                hashes[n] = crate::store::hash_words(next, stride);
                ts[n] = t;
                n += 1;
            }
        }
        out.n = n;
        out.ends.push(n);
    }
    Ok(())
}

/// A shortest firing sequence from the initial marking to state `target`.
pub fn trace_to(c: &Compiled, e: &PtExploration, target: u32) -> Vec<TransitionId> {
    let mut path = Vec::new();
    let mut cur_state = target;
    let mut m = Vec::new();
    let mut en = Vec::new();
    let mut buf = vec![0u8; e.store.stride()];
    while cur_state != 0 {
        let found = match &e.parents {
            Some(p) => {
                let s = p[cur_state as usize];
                let want = e.store.get(cur_state).to_vec();
                e.packing.unpack(e.store.get(s), &mut m);
                c.enabled(&m, &mut en);
                en.iter().find_map(|&t| {
                    let next = c.fire(&m, t as usize);
                    if next.iter().any(|&v| v > e.packing.max_value()) {
                        return None;
                    }
                    let next32: Vec<u32> = next.iter().map(|&v| v as u32).collect();
                    e.packing.pack(&next32, &mut buf);
                    (buf == want).then_some((s, t))
                })
            }
            None => bfs_predecessor(c, e, cur_state, &mut m, &mut buf),
        };
        let Some((s, t)) = found else {
            break; // cannot happen for a state of the exploration
        };
        path.push(TransitionId(t));
        cur_state = s;
    }
    path.reverse();
    path
}

/// For a state at BFS depth `d >= 1`: the predecessor at depth `d - 1` with the smallest id,
/// and the smallest transition leading from it to the state (the first pair a scan of level
/// `d - 1` in id and transition order would meet). Found by firing every transition backwards
/// from the state and looking the result up: a few lookups instead of a scan of the level.
fn bfs_predecessor(
    c: &Compiled,
    e: &PtExploration,
    target: u32,
    m: &mut Vec<u32>,
    buf: &mut [u8],
) -> Option<(u32, u32)> {
    let d = e.depth(target);
    let level = *e.levels.get(d.checked_sub(1)?)?..*e.levels.get(d)?;
    let want = e.marking(target);
    let max = e.packing.max_value();
    let mut best: Option<(u32, u32)> = None;
    for t in 0..c.transitions {
        m.clear();
        m.extend_from_slice(&want);
        let fits = c.eff(t).iter().all(|&(p, delta)| {
            let v = m[p as usize] as i64 - delta;
            let ok = v >= 0 && v as u64 <= max;
            if ok {
                m[p as usize] = v as u32;
            }
            ok
        });
        if !fits || !c.is_enabled(m, t) {
            continue;
        }
        e.packing.pack(m, buf);
        if let Some(s) = e.store.find(buf)
            && level.contains(&s)
            && best.is_none_or(|(b, _)| s < b)
        {
            best = Some((s, t as u32));
        }
    }
    best
}

/// Scratch space of [`successors`], reused from call to call.
#[derive(Default)]
pub struct SuccScratch {
    m: Vec<u32>,
    en: Vec<u32>,
    buf: Vec<u8>,
    keys: Vec<u64>,
    hashes: Vec<u64>,
    ts: Vec<u32>,
    /// For one bit per place: the net as masks (built on first use), the marking's words,
    /// the successor's and the enabled set.
    bits: Option<BitNet>,
    sw: Vec<u64>,
    next: Vec<u64>,
    set: Vec<u64>,
}

impl std::fmt::Debug for SuccScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SuccScratch")
    }
}

/// The successors (state id, transition) of a state among the explored ones, full firing rule.
/// The successor markings are computed (with word masks at one bit per place) and their index
/// slots prefetched before the lookups.
pub fn successors(
    c: &Compiled,
    e: &PtExploration,
    s: u32,
    x: &mut SuccScratch,
    out: &mut Vec<(u32, u32)>,
) {
    x.keys.clear();
    x.hashes.clear();
    x.ts.clear();
    let stride = e.store.stride();
    if e.packing.bits == 1 {
        let net = x.bits.get_or_insert_with(|| BitNet::new(c, stride));
        let (w, tw) = (net.w, net.tw);
        x.sw.resize(w, 0);
        x.next.resize(w, 0);
        x.set.resize(tw, 0);
        e.store.get_words(s, &mut x.sw);
        net.enabled(tw, stride, &x.sw, &mut x.set);
        for (xw, &word) in x.set.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let j = xw * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (t, overflow) = net.firable[j];
                let m = &net.masks[j * 3 * w..(j + 1) * 3 * w];
                let (clear, set) = (&m[w..2 * w], &m[2 * w..]);
                let mut clash = overflow;
                for k in 0..w {
                    clash |= x.sw[k] & set[k] != 0;
                    x.next[k] = (x.sw[k] & !clear[k]) | set[k];
                }
                if clash {
                    continue; // two tokens on a place: not a marking of the exploration
                }
                let h = crate::store::hash_words(&x.next, stride);
                e.store.prefetch(h);
                x.hashes.push(h);
                x.keys.extend_from_slice(&x.next);
                x.ts.push(t);
            }
        }
    } else {
        e.packing.unpack(e.store.get(s), &mut x.m);
        c.enabled(&x.m, &mut x.en);
        x.buf.resize(stride, 0);
        for &t in x.en.iter() {
            x.buf.copy_from_slice(e.store.get(s));
            let mut fits = true;
            for &(p, d) in c.eff(t as usize) {
                let v = (x.m[p as usize] as i64 + d) as u64;
                if v > e.packing.max_value() {
                    fits = false;
                    break;
                }
                e.packing.set(&mut x.buf, p as usize, v as u32);
            }
            if fits {
                let h = crate::store::hash(&x.buf);
                e.store.prefetch(h);
                x.hashes.push(h);
                x.keys.extend(x.buf.chunks(8).map(crate::store::le_word));
                x.ts.push(t);
            }
        }
    }
    let words = e.store.words();
    for (k, (&h, &t)) in x.hashes.iter().zip(&x.ts).enumerate() {
        if let Some(id) = e.store.find_words(&x.keys[k * words..(k + 1) * words], h) {
            out.push((id, t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptnet::{Pos, PtPlace, PtTransition};
    use std::sync::atomic::Ordering;

    fn place(net: &mut PtNet, name: &str, initial: u64) -> PlaceId {
        net.places.push(PtPlace {
            id: name.into(),
            name: name.into(),
            initial,
            pos: Pos::default(),
        });
        PlaceId::from(net.places.len() - 1)
    }

    fn transition(net: &mut PtNet, name: &str, pre: &[PlaceId], post: &[PlaceId]) {
        let mut t = PtTransition {
            id: name.into(),
            name: name.into(),
            pre: Vec::new(),
            post: Vec::new(),
            pos: Pos::default(),
        };
        for &p in pre {
            PtNet::add_arc(&mut t.pre, p, 1);
        }
        for &p in post {
            PtNet::add_arc(&mut t.post, p, 1);
        }
        net.transitions.push(t);
    }

    /// The MCC's Philosophers-N (3^N states, two deadlocks), plus `idle` places with a token
    /// and no arcs (longer markings) and `blocked` transitions that never fire (more
    /// transition words).
    fn philosophers(n: usize, idle: usize, blocked: usize) -> PtNet {
        let mut net = PtNet::default();
        let think: Vec<_> = (0..n)
            .map(|i| place(&mut net, &format!("think{i}"), 1))
            .collect();
        let fork: Vec<_> = (0..n)
            .map(|i| place(&mut net, &format!("fork{i}"), 1))
            .collect();
        let c1: Vec<_> = (0..n)
            .map(|i| place(&mut net, &format!("c1_{i}"), 0))
            .collect();
        let c2: Vec<_> = (0..n)
            .map(|i| place(&mut net, &format!("c2_{i}"), 0))
            .collect();
        let eat: Vec<_> = (0..n)
            .map(|i| place(&mut net, &format!("eat{i}"), 0))
            .collect();
        for i in 0..n {
            let left = fork[(i + n - 1) % n];
            transition(&mut net, &format!("ff1a{i}"), &[left, think[i]], &[c1[i]]);
            transition(
                &mut net,
                &format!("ff1b{i}"),
                &[think[i], fork[i]],
                &[c2[i]],
            );
            transition(&mut net, &format!("ff2a{i}"), &[c1[i], fork[i]], &[eat[i]]);
            transition(&mut net, &format!("ff2b{i}"), &[left, c2[i]], &[eat[i]]);
            transition(
                &mut net,
                &format!("end{i}"),
                &[eat[i]],
                &[fork[i], think[i], left],
            );
        }
        for k in 0..idle {
            place(&mut net, &format!("idle{k}"), 1);
        }
        let empty = place(&mut net, "empty", 0);
        for k in 0..blocked {
            transition(&mut net, &format!("blocked{k}"), &[empty], &[eat[0]]);
        }
        net
    }

    /// The same exploration through the batched one-bit explorer and the one-by-one
    /// explorer: same ids, markings, edges, levels, deadlocks, fired transitions and bounds,
    /// also when a state limit stops it midway; for several marking lengths and both index
    /// layouts.
    #[test]
    fn batched_bit_exploration_equals_one_by_one() {
        for (n, idle, blocked) in [(5, 0, 0), (4, 70, 0), (4, 70, 70), (4, 130, 3)] {
            let net = philosophers(n, idle, blocked);
            let c = Compiled::new(&net).unwrap();
            let m0 = net.initial_marking();
            let pk = Packing::for_max(c.places, 1);
            for compact in [false, true] {
                for max_states in [None, Some(1), Some(2), Some(40), Some(77)] {
                    let opts = PtOptions {
                        max_states,
                        compact_index: compact,
                        ..PtOptions::default()
                    };
                    let Ok(a) = explore_bits(&c, &m0, &opts, pk, 3) else {
                        panic!("a 1-safe net")
                    };
                    let Ok(b) = explore_with(&c, &m0, &opts, pk, false, 3) else {
                        panic!("a 1-safe net")
                    };
                    let what = format!("{n}/{idle}/{blocked} compact {compact} {max_states:?}");
                    assert_eq!(a.states(), b.states(), "{what}");
                    assert_eq!(a.edges, b.edges, "{what}");
                    assert_eq!(a.levels, b.levels, "{what}");
                    assert_eq!(a.stop, b.stop, "{what}");
                    assert_eq!((a.dead_count, &a.dead), (b.dead_count, &b.dead), "{what}");
                    assert_eq!(a.fired, b.fired, "{what}");
                    assert_eq!(a.place_max, b.place_max, "{what}");
                    assert_eq!(a.marking_max, b.marking_max, "{what}");
                    for id in 0..a.states() as u32 {
                        assert_eq!(a.store.get(id), b.store.get(id), "{what}: state {id}");
                    }
                    if max_states.is_none() {
                        assert_eq!(a.states(), 3u64.pow(n as u32));
                        assert_eq!(a.dead_count, 2);
                    }
                }
            }
        }
    }

    /// The enabledness tables give the same enabled sets as testing each transition's mask.
    #[test]
    fn byte_tables_agree_with_masks() {
        for (n, idle, blocked) in [(5, 0, 0), (4, 70, 70), (3, 130, 3)] {
            let net = philosophers(n, idle, blocked);
            let c = Compiled::new(&net).unwrap();
            let pk = Packing::for_max(c.places, 1);
            let stride = pk.stride();
            let tables = BitNet::new(&c, stride);
            assert!(!tables.bytes.is_empty());
            let masks = BitNet {
                bytes: Vec::new(),
                ..BitNet::new(&c, stride)
            };
            let Ok(e) = explore_bits(&c, &net.initial_marking(), &PtOptions::default(), pk, 1)
            else {
                panic!("a 1-safe net")
            };
            let (w, tw) = (tables.w, tables.tw);
            let (mut sw, mut x, mut y) = (vec![0; w], vec![0; tw], vec![0; tw]);
            let mut m = Vec::new();
            let mut en = Vec::new();
            for s in 0..e.states() as u32 {
                e.store.get_words(s, &mut sw);
                tables.enabled(tw, stride, &sw, &mut x);
                masks.enabled(tw, stride, &sw, &mut y);
                assert_eq!(x, y, "state {s}");
                // And both agree with the firing rule on unpacked markings.
                pk.unpack(e.store.get(s), &mut m);
                c.enabled(&m, &mut en);
                let from_bits: Vec<u32> = (0..tables.firable.len())
                    .filter(|&j| x[j / 64] & (1 << (j % 64)) != 0)
                    .map(|j| tables.firable[j].0)
                    .collect();
                assert_eq!(from_bits, en, "state {s}");
            }
        }
    }

    /// The predecessor found by firing backwards is the one a scan of the previous level
    /// finds first (smallest id, then smallest transition), for every state.
    #[test]
    fn backward_predecessor_equals_level_scan() {
        let net = philosophers(5, 0, 0);
        let c = Compiled::new(&net).unwrap();
        let pk = Packing::for_max(c.places, 1);
        for bits in [true, false] {
            let e = if bits {
                explore_bits(&c, &net.initial_marking(), &PtOptions::default(), pk, 1)
            } else {
                let pk = Packing::for_max(c.places, 3);
                explore_with(
                    &c,
                    &net.initial_marking(),
                    &PtOptions::default(),
                    pk,
                    false,
                    1,
                )
            };
            let Ok(e) = e else { panic!("a bounded net") };
            let (mut m, mut en) = (Vec::new(), Vec::new());
            let mut buf = vec![0u8; e.store.stride()];
            for target in 1..e.states() as u32 {
                let d = e.depth(target);
                let want = e.store.get(target).to_vec();
                let mut scan = None;
                'scan: for s in e.levels[d - 1]..e.levels[d] {
                    e.packing.unpack(e.store.get(s), &mut m);
                    c.enabled(&m, &mut en);
                    for &t in &en {
                        let next: Vec<u32> =
                            c.fire(&m, t as usize).iter().map(|&v| v as u32).collect();
                        e.packing.pack(&next, &mut buf);
                        if buf == want {
                            scan = Some((s, t));
                            break 'scan;
                        }
                    }
                }
                assert!(scan.is_some());
                let back = bfs_predecessor(&c, &e, target, &mut m, &mut buf);
                assert_eq!(back, scan, "state {target}");
            }
            // A trace replays to its state.
            let last = e.states() as u32 - 1;
            let mut m: Vec<u64> = net.initial_marking();
            for t in trace_to(&c, &e, last) {
                let cur: Vec<u32> = m.iter().map(|&v| v as u32).collect();
                assert!(c.is_enabled(&cur, t.index()));
                m = c.fire(&cur, t.index());
            }
            let m: Vec<u32> = m.iter().map(|&v| v as u32).collect();
            assert_eq!(m, e.marking(last));
        }
    }

    /// Slices explored by the threads and slices given back to one thread, by
    /// `threads_explore_like_one` (the only test exploring with threads here).
    pub(super) static PAR_SLICES: [std::sync::atomic::AtomicUsize; 2] =
        [const { std::sync::atomic::AtomicUsize::new(0) }; 2];

    /// Whole explorations through the threads equal the one-thread one: same ids and
    /// markings, levels, edges, deadlocks, fired transitions, bounds and stop, with slices
    /// small enough for many of them per level; also when a state or memory limit, or a
    /// second token on a place, leaves a slice to the one-thread code.
    #[test]
    fn threads_explore_like_one() {
        let same = |a: &PtExploration, b: &PtExploration, what: &str| {
            assert_eq!(a.states(), b.states(), "{what}");
            assert_eq!(a.edges, b.edges, "{what}");
            assert_eq!(a.levels, b.levels, "{what}");
            assert_eq!(a.stop, b.stop, "{what}");
            assert_eq!((a.dead_count, &a.dead), (b.dead_count, &b.dead), "{what}");
            assert_eq!(a.fired, b.fired, "{what}");
            assert_eq!(a.place_max, b.place_max, "{what}");
            assert_eq!(a.marking_max, b.marking_max, "{what}");
            assert_eq!(a.memory_bytes(), b.memory_bytes(), "{what}");
            for id in 0..a.states() as u32 {
                assert_eq!(a.store.get(id), b.store.get(id), "{what}: state {id}");
            }
            let mut w = vec![0u64; a.store.words()];
            for id in 0..a.states() as u32 {
                a.store.get_words(id, &mut w);
                let h = crate::store::hash_words(&w, a.store.stride());
                assert_eq!(b.store.find_words(&w, h), Some(id), "{what}: state {id}");
            }
        };
        // Markings of one word, two words (both with an inline index unless `compact`), and
        // longer (a tagged index: one thread).
        for (n, idle, blocked) in [(7, 0, 0), (6, 60, 3), (6, 70, 3), (6, 130, 70)] {
            let net = philosophers(n, idle, blocked);
            let c = Compiled::new(&net).unwrap();
            let m0 = net.initial_marking();
            let pk = Packing::for_max(c.places, 1);
            for compact in [false, true] {
                for (max_states, max_memory) in [
                    (None, None),
                    (Some(300), None),
                    (Some(1000), None),
                    (None, Some(0)),
                ] {
                    // Some(0): a byte less than the whole state space takes.
                    let max_memory = max_memory.map(|_| {
                        let opts = PtOptions {
                            compact_index: compact,
                            ..PtOptions::default()
                        };
                        let Ok(all) = explore_bits(&c, &m0, &opts, pk, 3) else {
                            panic!("a 1-safe net")
                        };
                        all.memory_bytes() - 1
                    });
                    let opts = |threads| PtOptions {
                        max_states,
                        max_memory,
                        compact_index: compact,
                        threads,
                        ..PtOptions::default()
                    };
                    let Ok(one) = explore_bits(&c, &m0, &opts(1), pk, 3) else {
                        panic!("a 1-safe net")
                    };
                    for threads in [2, 3] {
                        let what = format!(
                            "{n}/{idle}/{blocked} compact {compact} {max_states:?} \
                             {max_memory:?} threads {threads}"
                        );
                        let Ok(par) =
                            explore_bits_sliced(&c, &m0, &opts(threads), pk, 3, 64, 128, 1)
                        else {
                            panic!("a 1-safe net")
                        };
                        same(&one, &par, &what);
                    }
                    let all = 3u64.pow(n as u32);
                    let cut = max_memory.is_some() || max_states.is_some_and(|m| m < all);
                    assert_eq!(one.stop.is_some(), cut);
                    if !cut {
                        assert_eq!(one.states(), all);
                    }
                }
            }
        }
        // Two tokens on a place deep in the state space: both ask to widen the packing,
        // or both stop at a state limit reached first.
        let mut net = philosophers(7, 0, 0);
        let eat = PlaceId::from(4 * 7 + 6);
        let think = PlaceId::from(0);
        transition(&mut net, "twice", &[eat], &[think]);
        let c = Compiled::new(&net).unwrap();
        let m0 = net.initial_marking();
        let pk = Packing::for_max(c.places, 1);
        for max_states in [None, Some(50), Some(500)] {
            let opts = |threads| PtOptions {
                max_states,
                threads,
                ..PtOptions::default()
            };
            let one = explore_bits(&c, &m0, &opts(1), pk, 1);
            let par = explore_bits_sliced(&c, &m0, &opts(2), pk, 1, 64, 128, 1);
            match (one, par) {
                (Err(Restart::Widen), Err(Restart::Widen)) => assert!(max_states != Some(50)),
                (Ok(a), Ok(b)) => same(&a, &b, &format!("{max_states:?}")),
                _ => panic!("{max_states:?}: one thread and two differ"),
            }
        }
        // Both ways through a slice were taken.
        let [done, given_back] = PAR_SLICES.each_ref().map(|n| n.load(Ordering::Relaxed));
        assert!(done > 0 && given_back > 0, "{done} {given_back}");
    }

    /// The SCC pass's successors (word masks at one bit per place) equal the firing rule's.
    #[test]
    fn successors_equal_the_firing_rule() {
        let net = philosophers(4, 70, 70);
        let c = Compiled::new(&net).unwrap();
        let pk = Packing::for_max(c.places, 1);
        let Ok(e) = explore_bits(&c, &net.initial_marking(), &PtOptions::default(), pk, 1) else {
            panic!("a 1-safe net")
        };
        let mut x = SuccScratch::default();
        let (mut m, mut en) = (Vec::new(), Vec::new());
        let mut buf = vec![0u8; e.store.stride()];
        for s in 0..e.states() as u32 {
            let mut got = Vec::new();
            successors(&c, &e, s, &mut x, &mut got);
            pk.unpack(e.store.get(s), &mut m);
            c.enabled(&m, &mut en);
            let want: Vec<(u32, u32)> = en
                .iter()
                .map(|&t| {
                    let next: Vec<u32> = c.fire(&m, t as usize).iter().map(|&v| v as u32).collect();
                    pk.pack(&next, &mut buf);
                    (e.store.find(&buf).unwrap(), t)
                })
                .collect();
            assert_eq!(got, want, "state {s}");
        }
    }
}
