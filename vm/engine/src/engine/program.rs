//! Static net data, computed once per bundle: per net the places, the transitions with their
//! takes, outputs and fast-path plans, adjacency and priority groups.

use super::*;

#[derive(Debug)]
pub(super) struct Program<'b> {
    pub(super) bundle: &'b Bundle,
    /// Per function id: the net information if its body is a net.
    pub(super) nets: Vec<Option<NetInfo>>,
    /// The root function has the property `drts.wait_for_output` set to true.
    pub(super) wait_for_output: bool,
}

#[derive(Debug)]
pub(super) struct NetInfo {
    /// Per place: the transitions to re-examine when it changes.
    pub(super) adj: Vec<Vec<Adj>>,
    /// Per place: whether its tokens hold shared references.
    pub(super) tracks: Vec<bool>,
    pub(super) trans: Vec<TransInfo>,
    pub(super) groups: usize,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Adj {
    pub(super) t: u32,
    /// The transition sees the place's count (number-of-tokens), so any change matters.
    pub(super) count: bool,
}

#[derive(Debug)]
pub(super) enum Kind {
    Expr(usize),
    Module,
    Child(FunctionId),
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Take {
    pub(super) port: PortId,
    pub(super) place: usize,
    pub(super) consume: bool,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Out {
    pub(super) port: PortId,
    pub(super) place: usize,
    pub(super) many: bool,
    /// Last use of this port's value among the outputs (so it can be moved).
    pub(super) last: bool,
}

#[derive(Debug)]
pub(super) struct TransInfo {
    pub(super) group: usize,
    pub(super) kind: Kind,
    pub(super) takes: Vec<Take>,
    /// Distinct places of `takes` with the number of tokens needed.
    pub(super) need: Vec<(usize, u32)>,
    /// Some place is taken from more than once.
    pub(super) multi: bool,
    pub(super) counts: Vec<(PortId, usize)>,
    pub(super) outs: Vec<Out>,
    pub(super) condition: Option<usize>,
    /// Indices into `takes` of those whose port the condition reads.
    pub(super) enumerated: Vec<usize>,
    /// Some input port is connected to no place, or the transition has no input connection
    /// at all: it can never fire (as in GPI-Space).
    pub(super) dead: bool,
    /// The firing plan of a plain expression transition (see [`FastPlan`]), if it is one.
    pub(super) fast: Option<FastPlan>,
}

/// How to fire an expression transition without the general path's cases: it takes from no
/// place twice, reads no token counts, has no eureka or response ports, no out-many port, and
/// touches no generator place and no place whose tokens hold shared values. Its tokens go
/// straight from the places into the frame and back.
#[derive(Debug)]
pub(super) struct FastPlan {
    pub(super) code: usize,
    /// Frame size: the code's slots, at least one per port.
    pub(super) frame: usize,
    /// The frame's slots that no take writes (emptied before a firing).
    pub(super) clear: Vec<usize>,
    pub(super) takes: Vec<Take>,
    /// The dirty marks after the takes, in the general path's order (per consumed place its
    /// adjacent transitions). `skip`: the transition has no condition and this firing leaves
    /// no place it needs with fewer tokens than before, so if it is enabled it stays enabled
    /// and need not be re-examined (which would not change anything).
    pub(super) marks: Vec<(Adj, bool)>,
    pub(super) outs: Vec<FastOut>,
    /// The condition, if the transition is a loop (see [`crate::Loop`]): one scalar port,
    /// taken from and put back to one place, that the condition reads.
    pub(super) loop_cond: Option<usize>,
}

#[derive(Debug)]
pub(super) struct FastOut {
    pub(super) out: Out,
    pub(super) ty: Type,
    /// Whether the put can mark anything: false for a place this firing takes from (all its
    /// transitions are dirty already or skipped as enabled, and a put marks neither).
    pub(super) mark: bool,
}

impl<'b> Program<'b> {
    pub(super) fn new(bundle: &'b Bundle) -> Result<Program<'b>, RunError> {
        validate(bundle).map_err(RunError::bundle)?;
        let uses_shared = bundle_uses_shared(bundle);
        let aliased = aliased_places(bundle);
        let mut nets: Vec<Option<NetInfo>> = bundle
            .functions
            .iter()
            .zip(&aliased)
            .map(|(f, aliased)| match &f.body {
                Body::Net(net) => Some(NetInfo::new(bundle, net, uses_shared, aliased)),
                _ => None,
            })
            .collect();
        share_tracking(bundle, &mut nets);
        let wait_for_output = bundle
            .function(bundle.root)
            .properties
            .iter()
            .any(|p| p.key == "drts.wait_for_output" && p.value.trim() == "true");
        Ok(Program {
            bundle,
            nets,
            wait_for_output,
        })
    }

    pub(super) fn net(&self, f: FunctionId) -> &NetInfo {
        // Instances exist only for functions with net bodies.
        self.nets[f.index()]
            .as_ref()
            .expect("instance of a net function")
    }

    pub(super) fn net_ir(&self, f: FunctionId) -> &'b Net {
        match &self.bundle.function(f).body {
            Body::Net(n) => n,
            _ => unreachable!("instance of a net function"),
        }
    }
}

/// Per function (empty for non-nets), per place: whether the place takes part in a
/// `place-map` (a child's virtual place or the parent's real place behind it), so that its
/// tokens may be seen by two net instances.
pub(super) fn aliased_places(bundle: &Bundle) -> Vec<Vec<bool>> {
    let mut aliased: Vec<Vec<bool>> = bundle
        .functions
        .iter()
        .map(|f| match &f.body {
            Body::Net(net) => vec![false; net.places.len()],
            _ => Vec::new(),
        })
        .collect();
    for (fi, f) in bundle.functions.iter().enumerate() {
        let Body::Net(net) = &f.body else { continue };
        for t in &net.transitions {
            for &(v, r) in &t.place_map {
                if let Some(a) = aliased[fi].get_mut(r.index()) {
                    *a = true;
                }
                if let Some(a) = aliased[t.function.index()].get_mut(v.index()) {
                    *a = true;
                }
            }
        }
    }
    aliased
}

/// A child's virtual place and the parent's real place behind it hold the same tokens: if
/// either counts the shareds its tokens hold, both must (else a token put on one and taken
/// from the other would leak or release a shared).
pub(super) fn share_tracking(bundle: &Bundle, nets: &mut [Option<NetInfo>]) {
    let mut pairs = Vec::new();
    for (fi, f) in bundle.functions.iter().enumerate() {
        let Body::Net(net) = &f.body else { continue };
        for t in &net.transitions {
            if matches!(bundle.function(t.function).body, Body::Net(_)) {
                for &(v, r) in &t.place_map {
                    pairs.push(((t.function.index(), v.index()), (fi, r.index())));
                }
            }
        }
    }
    let get = |nets: &[Option<NetInfo>], (f, p): (usize, usize)| {
        nets[f]
            .as_ref()
            .and_then(|n| n.tracks.get(p).copied())
            .unwrap_or(false)
    };
    loop {
        let mut changed = false;
        for &(a, b) in &pairs {
            let on = get(nets, a) || get(nets, b);
            for (f, p) in [a, b] {
                if let Some(t) = nets[f].as_mut().and_then(|n| n.tracks.get_mut(p))
                    && !*t
                    && on
                {
                    *t = true;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
}

/// Whether the bundle can make or carry shared values at all (else no place tracks them).
/// The engine's reading, also the coloured explorer's.
pub fn bundle_uses_shared(bundle: &Bundle) -> bool {
    let code = bundle.codes.iter().any(|c| {
        c.instrs.iter().any(|i| matches!(i, Instr::MakeShared(_)))
            || c.consts.iter().any(shared::holds_shared)
    });
    let types = bundle.functions.iter().any(|f| {
        f.ports.iter().any(|p| shared::mentions_shared(&p.ty))
            || match &f.body {
                Body::Net(n) => {
                    n.places.iter().any(|p| {
                        p.shared_sink
                            || shared::mentions_shared(&p.ty)
                            || p.tokens.iter().any(shared::holds_shared)
                    }) || n.transitions.iter().any(|t| {
                        // A module may return shared values inside a plain `list`: the
                        // transition's attributes say so where no type does.
                        t.produce_shared || t.consume_shared || t.passthrough_shared
                    })
                }
                _ => false,
            }
    });
    code || types
}

/// A transition's connections by role, and whether it can ever fire: the static reading of
/// a transition the engine and the coloured explorer (`pnet-verify`) share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connections {
    /// `(port, place, consumes)`: the in (consuming) and read connections, in order.
    pub takes: Vec<(PortId, usize, bool)>,
    /// `(port, place)`: the `number-of-tokens` connections.
    pub counts: Vec<(PortId, usize)>,
    /// `(port, place, out-many)`: the out connections, in order.
    pub outs: Vec<(PortId, usize, bool)>,
    /// Some input port is connected to no place, or the transition has no input connection
    /// at all: it never fires (as in GPI-Space).
    pub dead: bool,
}

/// The [`Connections`] of transition `t`.
pub fn connections(bundle: &Bundle, t: &pnet_bundle::Transition) -> Connections {
    let f = bundle.function(t.function);
    let mut c = Connections {
        takes: Vec::new(),
        counts: Vec::new(),
        outs: Vec::new(),
        dead: false,
    };
    for k in &t.connections {
        let place = k.place.index();
        match k.kind {
            ConnectKind::In => c.takes.push((k.port, place, true)),
            ConnectKind::Read => c.takes.push((k.port, place, false)),
            ConnectKind::NumberOfTokens => c.counts.push((k.port, place)),
            ConnectKind::Out => c.outs.push((k.port, place, false)),
            ConnectKind::OutMany => c.outs.push((k.port, place, true)),
        }
    }
    c.dead = (c.takes.is_empty() && c.counts.is_empty())
        || f.ports.iter().enumerate().any(|(pi, port)| {
            port.dir.is_input()
                && !c.takes.iter().any(|tk| tk.0.index() == pi)
                && !c.counts.iter().any(|(cp, _)| cp.index() == pi)
        });
    c
}

/// The priority groups of a net, highest priority first: the indices of its transitions.
/// The engine chooses from the highest group with an enabled transition; so does the
/// explorer.
pub fn priority_groups(net: &Net) -> Vec<Vec<usize>> {
    let mut prios: Vec<u16> = net.transitions.iter().map(|t| t.priority).collect();
    prios.sort_unstable_by(|a, b| b.cmp(a));
    prios.dedup();
    prios
        .iter()
        .map(|&p| {
            (0..net.transitions.len())
                .filter(|&t| net.transitions[t].priority == p)
                .collect()
        })
        .collect()
}

impl NetInfo {
    pub(super) fn new(bundle: &Bundle, net: &Net, uses_shared: bool, aliased: &[bool]) -> NetInfo {
        let groups = priority_groups(net);
        let mut group_of = vec![0; net.transitions.len()];
        for (g, ts) in groups.iter().enumerate() {
            for &t in ts {
                group_of[t] = g;
            }
        }
        let mut adj = vec![Vec::new(); net.places.len()];
        let tracks: Vec<bool> = net
            .places
            .iter()
            .map(|p| uses_shared && !p.shared_sink && shared::may_hold_shared(&p.ty))
            .collect();
        let mut trans = Vec::with_capacity(net.transitions.len());
        for (ti, t) in net.transitions.iter().enumerate() {
            let f = bundle.function(t.function);
            let kind = match &f.body {
                Body::Expression(c) => Kind::Expr(c.index()),
                Body::Module(_) | Body::Modules { .. } => Kind::Module,
                Body::Net(_) => Kind::Child(t.function),
            };
            let shape = connections(bundle, t);
            let dead = shape.dead;
            let counts = shape.counts;
            let takes: Vec<Take> = shape
                .takes
                .iter()
                .map(|&(port, place, consume)| Take {
                    port,
                    place,
                    consume,
                })
                .collect();
            let mut outs: Vec<Out> = shape
                .outs
                .iter()
                .map(|&(port, place, many)| Out {
                    port,
                    place,
                    many,
                    last: true,
                })
                .collect();
            for i in 0..outs.len() {
                let p = outs[i].port;
                outs[i].last = !outs[i + 1..].iter().any(|o| o.port == p);
            }
            let mut need: Vec<(usize, u32)> = Vec::new();
            for tk in &takes {
                match need.iter_mut().find(|(p, _)| *p == tk.place) {
                    Some((_, n)) => *n += 1,
                    None => need.push((tk.place, 1)),
                }
            }
            let multi = need.iter().any(|&(_, n)| n > 1);
            let condition = t.condition.map(|c| c.index());
            let enumerated = match condition {
                Some(c) => {
                    let reads = &bundle.codes[c].reads;
                    (0..takes.len())
                        .filter(|&i| reads.contains(&(takes[i].port.0 as u16)))
                        .collect()
                }
                None => Vec::new(),
            };
            for &(p, _) in &need {
                adj[p].push(Adj {
                    t: ti as u32,
                    count: false,
                });
            }
            for &(_, p) in &counts {
                match adj[p].iter_mut().find(|a: &&mut Adj| a.t == ti as u32) {
                    Some(a) => a.count = true,
                    None => adj[p].push(Adj {
                        t: ti as u32,
                        count: true,
                    }),
                }
            }
            let group = group_of[ti];
            let plain = !multi
                && counts.is_empty()
                && t.eureka_ports.is_empty()
                && t.responses.is_empty()
                && outs.iter().all(|o| !o.many)
                && takes
                    .iter()
                    .all(|tk| !tracks[tk.place] && !net.places[tk.place].generator)
                && outs.iter().all(|o| !tracks[o.place])
                // Tokens of a place shared with another instance (place-map) are moved and
                // its transitions marked by the general path.
                && takes.iter().all(|tk| !aliased[tk.place])
                && outs.iter().all(|o| !aliased[o.place])
                && takes.iter().all(|tk| tk.port.index() < f.ports.len())
                && outs.iter().all(|o| o.port.index() < f.ports.len());
            let fast = match kind {
                Kind::Expr(code) if plain => {
                    let frame = bundle.codes[code].slots.len().max(f.ports.len());
                    Some(FastPlan {
                        code,
                        frame,
                        clear: (0..frame)
                            .filter(|&s| !takes.iter().any(|tk| tk.port.index() == s))
                            .collect(),
                        takes: takes.clone(),
                        marks: Vec::new(),
                        outs: outs
                            .iter()
                            .map(|o| FastOut {
                                out: *o,
                                ty: f.ports[o.port.index()].ty.clone(),
                                mark: !takes.iter().any(|tk| tk.consume && tk.place == o.place),
                            })
                            .collect(),
                        loop_cond: None,
                    })
                }
                _ => None,
            };
            trans.push(TransInfo {
                group,
                kind,
                takes,
                need,
                multi,
                counts,
                outs,
                condition,
                enumerated,
                dead,
                fast,
            });
        }
        // The dirty marks of the fast plans (they need every transition's adjacency).
        for ti in 0..trans.len() {
            let Some(plan) = &trans[ti].fast else {
                continue;
            };
            // Tokens this firing adds to (or removes from) each place.
            let net_change = |p: usize| {
                let puts = plan.outs.iter().filter(|o| o.out.place == p).count() as i64;
                let takes = plan
                    .takes
                    .iter()
                    .filter(|tk| tk.consume && tk.place == p)
                    .count();
                puts - takes as i64
            };
            let mut marks = Vec::new();
            for tk in plan.takes.iter().filter(|tk| tk.consume) {
                for a in &adj[tk.place] {
                    let other = &trans[a.t as usize];
                    let skip = !a.count
                        && other.condition.is_none()
                        && other.counts.is_empty()
                        && other.need.iter().all(|&(q, _)| net_change(q) >= 0);
                    marks.push((*a, skip));
                }
            }
            let info = &trans[ti];
            let loop_cond = match (plan.takes.as_slice(), plan.outs.as_slice(), info.condition) {
                ([tk], [o], Some(c))
                    if tk.consume
                        && o.out.port == tk.port
                        && o.out.place == tk.place
                        && info.enumerated == [0]
                        && info.counts.is_empty()
                        && matches!(
                            o.ty,
                            Type::Control
                                | Type::Bool
                                | Type::Int
                                | Type::Long
                                | Type::UInt
                                | Type::ULong
                                | Type::Float
                                | Type::Double
                                | Type::Char
                        ) =>
                {
                    Some(c)
                }
                _ => None,
            };
            if let Some(plan) = &mut trans[ti].fast {
                plan.marks = marks;
                plan.loop_cond = loop_cond;
            }
        }
        NetInfo {
            adj,
            tracks,
            trans,
            groups: groups.len().max(1),
        }
    }
}

impl Program<'_> {
    /// Adds the transition's name and location (and the failing instruction's location).
    pub(super) fn context(
        &self,
        e: RunError,
        i: u32,
        instances: &[Option<Instance>],
        t: u32,
    ) -> RunError {
        match instances.get(i as usize) {
            Some(Some(inst)) => self.context_in(e, inst.func, t as usize),
            _ => e,
        }
    }

    pub(super) fn context_in(&self, mut e: RunError, func: FunctionId, t: usize) -> RunError {
        if let Some(span) = e.span
            && e.at.is_none()
        {
            e.at = Some(self.bundle.location(span));
        }
        if e.transition.is_none()
            && let Some(tr) = self.net_ir(func).transitions.get(t)
        {
            e.transition = Some(tr.name.clone());
            e.transition_at = Some(self.bundle.location(tr.span));
        }
        e
    }
}
