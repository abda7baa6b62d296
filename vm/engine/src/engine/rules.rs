//! The firing rules both states follow, written once: the engine's state (`State`: instances
//! by number, `Value` tokens in FIFO rings) and pnetv's coloured explorer's (an instance tree
//! addressed by paths, sorted token lists, tokens that may be unknown module outputs). Each
//! rule is generic over [`Marking`] and compiled once per state (no dynamic dispatch on the
//! engine's paths):
//! - [`take_binding`], [`after_take`]: a firing consumes its binding (the counts first, then
//!   each take's token read or removed, several takes from one place removed from the back),
//!   collects the consumed tokens' shareds and refills the generator places it took from;
//! - [`refill`]: a generator place gets its next value (after a take, at an instance's start);
//! - [`initial_tokens`], [`child_inputs`]: a child net instance starts (its places' tokens and
//!   generators, places mapped to an ancestor's left alone; then the transition's input
//!   values on the places bound to its ports);
//! - [`child_outputs`]: a child net ends (the tokens on its out ports' places go out through
//!   the parent transition's out connections);
//! - [`release_shareds`]: the shareds of consumed (or dropped) tokens are released and the
//!   wrapped values of those that die go to their `shared_sink` place, searched from the
//!   firing's instance outwards.
//!
//! What stays each state's own: where tokens live and how one is removed (the engine's FIFO
//! rings, its place-map homes and lending, its enabling caches; the explorer's canonical tree
//! of sorted lists), and the engine's specialised paths for plain expressions (`fire_fast`,
//! `fire_expr`: the same steps, straight into the frame).

use super::*;

pub use crate::shared::{SharedTable, collect as collect_shareds};

/// The state the shared firing rules act on.
pub trait Marking {
    /// A net instance: the engine's number, the explorer's path from the root.
    type Inst: Clone;
    /// A token: the engine's `Value`; the explorer's value or unknown module output.
    type Tok;
    /// The function (with a net body) instance `i` runs.
    fn function(&self, i: &Self::Inst) -> FunctionId;
    /// The instance that started `i` (none for the root).
    fn parent(&self, i: &Self::Inst) -> Option<Self::Inst>;
    /// Whether place `p` of `i` is a `place-map` view of an ancestor's place (it is that
    /// place: no tokens or generator of its own).
    fn mapped(&self, i: &Self::Inst, p: usize) -> bool;
    /// The `number-of-tokens` value of place `p` of `i` as a firing of `i` sees it: its
    /// tokens and those consumed by running tasks and child nets.
    fn count(&self, i: &Self::Inst, p: usize) -> u64;
    /// A copy of token `j` of place `p` of `i` (a read connection), as a firing of `i` sees
    /// the place.
    fn read(&self, i: &Self::Inst, p: usize, j: u32) -> Option<Self::Tok>;
    /// Removes token `j` of place `p` of `i`; `in_order`: the other tokens keep their order
    /// (several takes from one place), else the state may move one into the hole.
    fn remove(&mut self, i: &Self::Inst, p: usize, j: u32, in_order: bool) -> Option<Self::Tok>;
    /// Where the tokens of place `p` of `i` live: the ancestor's place a `place-map` makes
    /// it, or itself.
    fn home(&self, i: &Self::Inst, p: usize) -> (Self::Inst, usize);
    /// Whether the tokens of place `p` of `i` count for the shareds they hold.
    fn tracks(&self, i: &Self::Inst, p: usize) -> bool;
    /// Place `p` of `i` lost a token (the engine re-examines the transitions next to it).
    fn changed(&mut self, i: &Self::Inst, p: usize);
    /// The value of a token, if it is known.
    fn known(tok: &Self::Tok) -> Option<&Value>;
    /// Puts a token on place `p` of `i` (wherever that place's tokens live), counting the
    /// shareds it holds when the place tracks them.
    fn put(&mut self, i: &Self::Inst, p: usize, tok: Self::Tok);
    /// Puts an output port's token on place `p` of `i` (see [`output_tokens`]: out, the
    /// value; out-many, each element).
    fn output(
        &mut self,
        i: &Self::Inst,
        port: &pnet_bundle::Port,
        p: usize,
        many: bool,
        tok: Self::Tok,
    ) -> Result<(), RunError>;
    /// The index of the next value of generator place `p` of `i`.
    fn generator_index(&mut self, i: &Self::Inst, p: usize) -> &mut u128;
    /// The counts of the live shareds.
    fn shareds(&mut self) -> &mut SharedTable;
    /// A known token.
    fn token(v: Value) -> Self::Tok;
}

/// The net of function `f` (instances exist only for net bodies).
fn net_of(bundle: &Bundle, f: FunctionId) -> &Net {
    match &bundle.function(f).body {
        Body::Net(n) => n,
        _ => unreachable!("instance of a net function"),
    }
}

/// The stale-binding error (a binding names a token that is not there).
fn stale() -> RunError {
    RunError::bundle("internal: stale binding")
}

/// Takes binding `binding` (per take, its token's index on its place) of a transition with
/// `number-of-tokens` connections `counts` and takes `takes` (port, place, consumes) in
/// instance `i`: into `vals` (cleared first) go the counts (before anything is consumed),
/// then per take its token, read or removed. `multi`: some place is taken from twice; its
/// tokens are then removed from the highest index down, keeping the others' order. Returns
/// the number of counts (`vals[n..]` are the takes' tokens).
pub fn take_binding<M: Marking, T: Copy + Into<(PortId, usize, bool)>>(
    m: &mut M,
    i: &M::Inst,
    counts: &[(PortId, usize)],
    takes: &[T],
    binding: &[u32],
    multi: bool,
    vals: &mut Vec<(PortId, M::Tok)>,
) -> Result<usize, RunError> {
    vals.clear();
    for &(port, p) in counts {
        vals.push((port, M::token(Value::ULong(m.count(i, p)))));
    }
    let n = vals.len();
    for (k, tk) in takes.iter().enumerate() {
        let (port, p, consume) = (*tk).into();
        let v = match (consume, multi) {
            (false, _) => m.read(i, p, binding[k]),
            // A placeholder, filled below.
            (true, true) => Some(M::token(Value::Control)),
            (true, false) => m.remove(i, p, binding[k], false),
        };
        vals.push((port, v.ok_or_else(stale)?));
    }
    if multi {
        let mut order: Vec<usize> = (0..takes.len()).filter(|&k| takes[k].into().2).collect();
        order.sort_by(|&a, &b| binding[b].cmp(&binding[a]));
        for k in order {
            let p = takes[k].into().1;
            vals[n + k].1 = m.remove(i, p, binding[k], true).ok_or_else(stale)?;
        }
    }
    Ok(n)
}

/// After [`take_binding`] (`taken`: the takes' tokens, `vals[n..]`): the shareds of the
/// consumed known tokens on places that track them go to `release`; then each place consumed
/// from is marked changed and, a generator at its home, refilled.
pub fn after_take<M: Marking, T: Copy + Into<(PortId, usize, bool)>>(
    m: &mut M,
    bundle: &Bundle,
    i: &M::Inst,
    takes: &[T],
    taken: &[(PortId, M::Tok)],
    release: &mut Vec<Value>,
) -> Result<(), RunError> {
    for (tk, (_, v)) in takes.iter().zip(taken) {
        let (_, p, consume) = (*tk).into();
        if consume
            && m.tracks(i, p)
            && let Some(v) = M::known(v)
        {
            collect_shareds(v, release);
        }
    }
    for tk in takes {
        let (_, p, consume) = (*tk).into();
        if consume {
            m.changed(i, p);
            let (h, hp) = m.home(i, p);
            if net_of(bundle, m.function(&h)).places[hp].generator {
                refill(m, bundle, &h, hp)?;
            }
        }
    }
    Ok(())
}

/// Puts the next value of generator place `p` of `i` (the place must be a generator), or
/// fails with the run-time error when its type runs out.
pub fn refill<M: Marking>(
    m: &mut M,
    bundle: &Bundle,
    i: &M::Inst,
    p: usize,
) -> Result<(), RunError> {
    let place = &net_of(bundle, m.function(i)).places[p];
    let n = *m.generator_index(i, p);
    let v = generated(place, n)?;
    *m.generator_index(i, p) = n + 1;
    m.put(i, p, M::token(v));
    Ok(())
}

/// A new instance's own tokens: per place its initial tokens, then a generator's first
/// value. A place mapped to an ancestor's place is that place and gets none.
pub fn initial_tokens<M: Marking>(m: &mut M, bundle: &Bundle, i: &M::Inst) -> Result<(), RunError> {
    let net = net_of(bundle, m.function(i));
    for (p, place) in net.places.iter().enumerate() {
        if m.mapped(i, p) {
            continue;
        }
        for v in &place.tokens {
            m.put(i, p, M::token(v.clone()));
        }
        if place.generator {
            refill(m, bundle, i, p)?;
        }
    }
    Ok(())
}

/// A child net instance `c` (started by a transition of function `tf`) receives the
/// transition's input values: each on the place its port is bound to (a port bound to no
/// place drops its value).
pub fn child_inputs<M: Marking>(
    m: &mut M,
    tf: &pnet_bundle::Function,
    c: &M::Inst,
    inputs: impl IntoIterator<Item = (PortId, M::Tok)>,
) {
    for (port, v) in inputs {
        if let Some(p) = tf.ports[port.index()].place {
            m.put(c, p.index(), v);
        }
    }
}

/// A child net of transition `t` of instance `parent` ended: for each out connection of the
/// transition (`outs`: port, place, out-many, last use of the port), the tokens on the
/// place of the child's out port (`tokens(place, last)`) go out on the parent's place. An
/// out port on a place mapped to an ancestor's (`mapped`) has nothing to give: its tokens
/// already live there.
pub fn child_outputs<M: Marking>(
    m: &mut M,
    bundle: &Bundle,
    parent: &M::Inst,
    t: usize,
    outs: impl IntoIterator<Item = (PortId, usize, bool, bool)>,
    mapped: impl Fn(usize) -> bool,
    mut tokens: impl FnMut(usize, bool) -> Vec<M::Tok>,
) -> Result<(), RunError> {
    let net = net_of(bundle, m.function(parent));
    let tf = bundle.function(net.transitions[t].function);
    for (port, place, many, last) in outs {
        let port = &tf.ports[port.index()];
        let cp = child_out_place(port)?.index();
        if mapped(cp) {
            continue;
        }
        for v in tokens(cp, last) {
            m.output(parent, port, place, many, v)?;
        }
    }
    Ok(())
}

/// Releases the shareds in `release` (those of the tokens a firing consumed or a child net
/// dropped, after the firing's outputs were put); each shared that dies (appended to
/// `dead`) puts its wrapped value on the `shared_sink` place of its name in instance `i` or
/// the nearest enclosing one (none: an error).
pub fn release_shareds<M: Marking>(
    m: &mut M,
    bundle: &Bundle,
    i: &M::Inst,
    release: &[Value],
    dead: &mut Vec<Value>,
) -> Result<(), RunError> {
    dead.clear();
    for v in release {
        m.shareds().release(v, dead);
    }
    for d in dead.iter() {
        let Value::Shared(s) = d else { continue };
        let mut at = Some(i.clone());
        let mut found = None;
        while let Some(k) = at {
            let net = net_of(bundle, m.function(&k));
            if let Some(p) = net
                .places
                .iter()
                .position(|p| p.shared_sink && *p.name == *s.place)
            {
                found = Some((k, p));
                break;
            }
            at = m.parent(&k);
        }
        let (k, p) = found.ok_or_else(|| {
            RunError::new(RunErrorKind::NoSharedSink {
                place: s.place.to_string(),
            })
        })?;
        m.put(&k, p, M::token(s.value.clone()));
    }
    Ok(())
}

/// The engine's state as a [`Marking`] (with the static data its puts need).
pub(super) struct Fire<'s, 'p, 'b> {
    pub(super) st: &'s mut State,
    pub(super) prog: &'p Program<'b>,
}

impl Marking for Fire<'_, '_, '_> {
    type Inst = u32;
    type Tok = Value;

    #[inline]
    fn function(&self, i: &u32) -> FunctionId {
        self.st.instance(*i).func
    }

    #[inline]
    fn parent(&self, i: &u32) -> Option<u32> {
        self.st.instance(*i).parent.as_ref().map(|l| l.instance)
    }

    #[inline]
    fn mapped(&self, i: &u32, p: usize) -> bool {
        self.st
            .instance(*i)
            .up
            .iter()
            .any(|&(q, _, _)| q as usize == p)
    }

    #[inline]
    fn count(&self, i: &u32, p: usize) -> u64 {
        let inst = self.st.instance(*i);
        inst.marking[p].len() as u64 + inst.in_flight[p]
    }

    #[inline]
    fn read(&self, i: &u32, p: usize, j: u32) -> Option<Value> {
        self.st.instance(*i).marking[p].get(j as usize).cloned()
    }

    #[inline]
    fn remove(&mut self, i: &u32, p: usize, j: u32, in_order: bool) -> Option<Value> {
        let q = &mut self.st.inst_mut(*i).marking[p];
        match (in_order, j) {
            (true, _) => q.remove(j as usize),
            (false, 0) => q.pop_front(),
            (false, _) => q.swap_remove_front(j as usize),
        }
    }

    #[inline]
    fn home(&self, i: &u32, p: usize) -> (u32, usize) {
        self.st.home(*i, p)
    }

    #[inline]
    fn tracks(&self, i: &u32, p: usize) -> bool {
        self.prog.net(self.st.instance(*i).func).tracks[p]
    }

    #[inline]
    fn changed(&mut self, i: &u32, p: usize) {
        self.st.changed(self.prog, *i, p, false)
    }

    #[inline]
    fn known(tok: &Value) -> Option<&Value> {
        Some(tok)
    }

    #[inline]
    fn put(&mut self, i: &u32, p: usize, tok: Value) {
        self.st.put(self.prog, *i, p, tok)
    }

    #[inline]
    fn output(
        &mut self,
        i: &u32,
        port: &pnet_bundle::Port,
        p: usize,
        many: bool,
        tok: Value,
    ) -> Result<(), RunError> {
        let (prog, st) = (self.prog, &mut *self.st);
        let pty = &prog.net_ir(st.instance(*i).func).places[p].ty;
        output_tokens(port, pty, many, tok, |x| st.put(prog, *i, p, x))
    }

    #[inline]
    fn generator_index(&mut self, i: &u32, p: usize) -> &mut u128 {
        &mut self.st.inst_mut(*i).gen_next[p]
    }

    #[inline]
    fn shareds(&mut self) -> &mut SharedTable {
        &mut self.st.shared
    }

    #[inline]
    fn token(v: Value) -> Value {
        v
    }
}

impl From<Take> for (PortId, usize, bool) {
    #[inline]
    fn from(t: Take) -> Self {
        (t.port, t.place, t.consume)
    }
}
