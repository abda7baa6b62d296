//! The single-process net engine: marking, incremental enabling, firing, child nets, tasks.
//!
//! The engine does no I/O. [`Engine::step`] fires one transition (or hands out a module call
//! as a [`Task`]); [`Engine::run_steps`] fires a batch, as that many steps would (and hands a
//! transition that loops on one token to the code runner's loop); a driver serves tasks and
//! injects their results with [`Engine::complete_task`] or fails the job with
//! [`Engine::fail_task`].
//!
//! Marking: one `Tokens` ring buffer (`tokens.rs`) per place of each net instance (32 bytes
//! a token, FIFO: unconstrained takes are from the front, puts go to the back; a
//! condition-chosen token is removed by swapping the front into its slot). Enabling: per
//! transition an `enabled` flag and a cached binding (token indices); a change of a place
//! marks only the transitions adjacent to it dirty, and only dirty transitions are
//! re-examined before the next choice
//! (the search for a token a condition accepts resumes after the tokens known to fail it).
//! Enabled transitions sit in one indexable set per priority group; the engine picks an
//! instance with enabled transitions, its highest non-empty group, and a transition in it,
//! at random from a seeded PRNG.
//!
//! Place-maps of child nets that were not inlined (`pnetc --synthesize-virtual-places`): the
//! child's virtual place *is* the real place of the parent (or, through nested maps, of an
//! outer ancestor), its home. The tokens and the in-flight count live at home; the child's
//! slot stays empty and is lent the home's tokens while the child re-examines its transitions
//! or takes a firing's tokens (`State::swap_lent`). Puts and takes on such a place go to its
//! home and mark the adjacent transitions in every instance that sees it; transitions that
//! touch such places take the general firing path. When the child ends, the tokens stay.

use std::collections::HashMap;

use crate::hook::{Loop, LoopEnd, drive_loop};
use crate::tokens::Tokens;

use num_bigint::BigInt;
use pnet_bundle::{
    Body, Bundle, ConnectKind, FunctionId, Instr, Module, Net, PlaceId, PortId, TransitionId,
};
use pnet_stdlib::{Type, Value};

use crate::ending::Ending;
use crate::error::{RunError, RunErrorKind};
use crate::hook::{CodeRunner, CodeRunnerFactory};
use crate::interp::Interpreter;
use crate::rng::{DEFAULT_SEED, Rng};
use crate::shared::{self, SharedTable};
use crate::validate::validate;

/// How to run a job.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Seed of the random choice among enabled transitions.
    pub seed: u64,
    /// Stop with an error before firing more than this many transitions.
    pub max_firings: Option<u64>,
    /// Runs expressions and conditions instead of the interpreter (the JIT); `None`: interpret.
    pub runner: Option<std::sync::Arc<dyn CodeRunnerFactory>>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: DEFAULT_SEED,
            max_firings: None,
            runner: None,
        }
    }
}

/// Counters of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Every firing: expressions, module calls handed out, child nets started.
    pub firings: u64,
    pub expressions: u64,
    pub tasks: u64,
    pub child_nets: u64,
}

/// The result of a job: the tokens on the places behind the root's out ports, by port name,
/// in port order; each port's tokens in the order they sit on the place.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    pub outputs: Vec<(String, Vec<Value>)>,
    pub stats: Stats,
    /// What the final marking says about the ending: tokens left, empty out ports.
    pub ending: Ending,
}

/// Identifies a task handed out by [`Engine::step`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u64);

/// A module call to run: the function (its body is `Module` or `Modules`) and the values of
/// its input ports.
#[derive(Clone, Debug)]
pub struct Task {
    pub id: TaskId,
    pub function: FunctionId,
    pub transition: TransitionId,
    /// The transition's name.
    pub name: String,
    /// `file:line:col` of the transition.
    pub location: String,
    pub inputs: Vec<(PortId, Value)>,
    /// The value of the module's `eureka-group` expression, if it has one.
    pub eureka_group: Option<String>,
    /// The evaluated memory buffers and transfers of the function; `None` when it has
    /// neither.
    pub memory: Option<TaskMemory>,
}

/// A module call's memory, evaluated over the function's input frame when the transition
/// fires.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskMemory {
    /// Per memory buffer, in the function's order: (size, alignment; 1 when absent).
    pub buffers: Vec<(u64, u64)>,
    /// Per memory transfer, in the function's order: the values of `global` and `local`.
    pub transfers: Vec<(Value, Value)>,
}

/// What one step did.
#[derive(Clone, Debug)]
pub enum Step {
    /// An expression transition fired or a child net started.
    Fired,
    /// A module call to serve.
    Task(Task),
    /// Nothing is enabled, but tasks are running: wait for a result.
    Waiting,
    /// The job has ended.
    Done,
}

/// Runs a job to its end with a driver that serves no module calls (the first module call
/// stops the job with an error naming the module and the transition's location).
pub fn run(
    bundle: &Bundle,
    inputs: &[(String, Vec<Value>)],
    config: &RunConfig,
) -> Result<RunResult, RunError> {
    let mut engine = Engine::new(bundle, config)?;
    engine.put_inputs(inputs)?;
    loop {
        match engine.run_steps(u64::MAX)?.1 {
            Step::Fired => {}
            Step::Task(task) => {
                let f = bundle.function(task.function);
                let (module, function) = match &f.body {
                    Body::Module(m) => module_names(m),
                    Body::Modules { modules, .. } => {
                        modules.first().map(module_names).unwrap_or_default()
                    }
                    _ => Default::default(),
                };
                let mut e = RunError::new(RunErrorKind::ModuleCall { module, function });
                e.transition = Some(task.name);
                e.transition_at = Some(task.location);
                return Err(e);
            }
            Step::Waiting => {
                return Err(RunError::new(RunErrorKind::Bundle(
                    "waiting for tasks that no one runs".into(),
                )));
            }
            Step::Done => return Ok(engine.result()),
        }
    }
}

fn module_names(m: &Module) -> (String, String) {
    (m.name.clone(), m.signature.function.clone())
}

// ---------------------------------------------------------------------------------------------
// Static information per net, computed once.

#[derive(Debug)]
struct Program<'b> {
    bundle: &'b Bundle,
    /// Per function id: the net information if its body is a net.
    nets: Vec<Option<NetInfo>>,
    /// The root function has the property `drts.wait_for_output` set to true.
    wait_for_output: bool,
}

#[derive(Debug)]
struct NetInfo {
    /// Per place: the transitions to re-examine when it changes.
    adj: Vec<Vec<Adj>>,
    /// Per place: whether its tokens hold shared references.
    tracks: Vec<bool>,
    trans: Vec<TransInfo>,
    groups: usize,
}

#[derive(Debug, Clone, Copy)]
struct Adj {
    t: u32,
    /// The transition sees the place's count (number-of-tokens), so any change matters.
    count: bool,
}

#[derive(Debug)]
enum Kind {
    Expr(usize),
    Module,
    Child(FunctionId),
}

#[derive(Debug, Clone, Copy)]
struct Take {
    port: PortId,
    place: usize,
    consume: bool,
}

#[derive(Debug, Clone, Copy)]
struct Out {
    port: PortId,
    place: usize,
    many: bool,
    /// Last use of this port's value among the outputs (so it can be moved).
    last: bool,
}

#[derive(Debug)]
struct TransInfo {
    group: usize,
    kind: Kind,
    takes: Vec<Take>,
    /// Distinct places of `takes` with the number of tokens needed.
    need: Vec<(usize, u32)>,
    /// Some place is taken from more than once.
    multi: bool,
    counts: Vec<(PortId, usize)>,
    outs: Vec<Out>,
    condition: Option<usize>,
    /// Indices into `takes` of those whose port the condition reads.
    enumerated: Vec<usize>,
    /// Some input port is connected to no place, or the transition has no input connection
    /// at all: it can never fire (as in GPI-Space).
    dead: bool,
    /// The firing plan of a plain expression transition (see [`FastPlan`]), if it is one.
    fast: Option<FastPlan>,
}

/// How to fire an expression transition without the general path's cases: it takes from no
/// place twice, reads no token counts, has no eureka or response ports, no out-many port, and
/// touches no generator place and no place whose tokens hold shared values. Its tokens go
/// straight from the places into the frame and back.
#[derive(Debug)]
struct FastPlan {
    code: usize,
    /// Frame size: the code's slots, at least one per port.
    frame: usize,
    /// The frame's slots that no take writes (emptied before a firing).
    clear: Vec<usize>,
    takes: Vec<Take>,
    /// The dirty marks after the takes, in the general path's order (per consumed place its
    /// adjacent transitions). `skip`: the transition has no condition and this firing leaves
    /// no place it needs with fewer tokens than before, so if it is enabled it stays enabled
    /// and need not be re-examined (which would not change anything).
    marks: Vec<(Adj, bool)>,
    outs: Vec<FastOut>,
    /// The condition, if the transition is a loop (see [`crate::Loop`]): one scalar port,
    /// taken from and put back to one place, that the condition reads.
    loop_cond: Option<usize>,
}

#[derive(Debug)]
struct FastOut {
    out: Out,
    ty: Type,
    /// Whether the put can mark anything: false for a place this firing takes from (all its
    /// transitions are dirty already or skipped as enabled, and a put marks neither).
    mark: bool,
}

impl<'b> Program<'b> {
    fn new(bundle: &'b Bundle) -> Result<Program<'b>, RunError> {
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

    fn net(&self, f: FunctionId) -> &NetInfo {
        // Instances exist only for functions with net bodies.
        self.nets[f.index()]
            .as_ref()
            .expect("instance of a net function")
    }

    fn net_ir(&self, f: FunctionId) -> &'b Net {
        match &self.bundle.function(f).body {
            Body::Net(n) => n,
            _ => unreachable!("instance of a net function"),
        }
    }
}

/// Per function (empty for non-nets), per place: whether the place takes part in a
/// `place-map` (a child's virtual place or the parent's real place behind it), so that its
/// tokens may be seen by two net instances.
fn aliased_places(bundle: &Bundle) -> Vec<Vec<bool>> {
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
fn share_tracking(bundle: &Bundle, nets: &mut [Option<NetInfo>]) {
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

fn bundle_uses_shared(bundle: &Bundle) -> bool {
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

impl NetInfo {
    fn new(bundle: &Bundle, net: &Net, uses_shared: bool, aliased: &[bool]) -> NetInfo {
        let mut prios: Vec<u16> = net.transitions.iter().map(|t| t.priority).collect();
        prios.sort_unstable_by(|a, b| b.cmp(a));
        prios.dedup();
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
            let mut takes = Vec::new();
            let mut counts = Vec::new();
            let mut outs: Vec<Out> = Vec::new();
            for c in &t.connections {
                let place = c.place.index();
                match c.kind {
                    ConnectKind::In | ConnectKind::Read => takes.push(Take {
                        port: c.port,
                        place,
                        consume: c.kind == ConnectKind::In,
                    }),
                    ConnectKind::NumberOfTokens => counts.push((c.port, place)),
                    ConnectKind::Out | ConnectKind::OutMany => outs.push(Out {
                        port: c.port,
                        place,
                        many: c.kind == ConnectKind::OutMany,
                        last: true,
                    }),
                }
            }
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
            // A transition without input connections is never enabled either (GPI-Space).
            let dead = (takes.is_empty() && counts.is_empty())
                || f.ports.iter().enumerate().any(|(pi, port)| {
                    port.dir.is_input()
                        && !takes.iter().any(|tk| tk.port.index() == pi)
                        && !counts.iter().any(|(cp, _)| cp.index() == pi)
                });
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
            let group = prios.iter().position(|&p| p == t.priority).unwrap_or(0);
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
            groups: prios.len().max(1),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Dynamic state.

const NONE: u32 = u32::MAX;

/// How a place shared through a `place-map` changed (which of its transitions to mark).
#[derive(Clone, Copy, Debug)]
enum Change {
    Put,
    Take,
    Count,
}

/// Instances `a` and `b` (different) mutably at once.
fn two_mut(instances: &mut [Option<Instance>], a: u32, b: u32) -> (&mut Instance, &mut Instance) {
    let (a, b) = (a as usize, b as usize);
    assert_ne!(a, b, "an instance shares places only with its ancestors");
    let (x, y) = if a < b {
        let (lo, hi) = instances.split_at_mut(b);
        (&mut lo[a], &mut hi[0])
    } else {
        let (lo, hi) = instances.split_at_mut(a);
        (&mut hi[0], &mut lo[b])
    };
    (
        x.as_mut().expect("live instance"),
        y.as_mut().expect("live instance"),
    )
}

#[derive(Debug)]
struct Instance {
    func: FunctionId,
    marking: Vec<Tokens>,
    /// Per place: tokens consumed by tasks and child nets still running.
    in_flight: Vec<u64>,
    /// Per place: index of the next generator value.
    gen_next: Vec<u128>,
    enabled: Vec<bool>,
    /// Per transition: the token index of each take (valid while enabled and not dirty).
    binding: Vec<Vec<u32>>,
    /// Per transition whose condition reads one token and no counts: how many tokens at the
    /// front of that token's place are known to fail the condition, and the place's
    /// [`Tokens::removals`] then (see [`enabled`]).
    scan: Vec<(u32, u64)>,
    dirty_flag: Vec<bool>,
    dirty: Vec<u32>,
    /// Per priority group (0 = highest): enabled transitions.
    groups: Vec<Vec<u32>>,
    /// Per transition: position in its group, or `NONE`.
    pos: Vec<u32>,
    n_enabled: usize,
    /// Running tasks and child nets started here.
    pending: u32,
    parent: Option<ParentLink>,
    ready_pos: u32,
    in_dirty: bool,
    /// The places of this child net that a `place-map` makes places of an ancestor:
    /// (place here, home instance, home place). Their tokens (and in-flight counts) live at
    /// home; the slots here stay empty, except while [`State::swap_lent`] lends them here
    /// for a re-examination or the takes of a firing.
    up: Vec<(u32, u32, u32)>,
    /// The places here that are homes of places of running descendants (the `up` entries
    /// pointing here): (place here, instance, its place). A change here marks their adjacent
    /// transitions too.
    down: Vec<(u32, u32, u32)>,
    /// `up` or `down` is not empty: puts and takes here go through the homes and mark
    /// the other instances that see the place.
    shares: bool,
}

impl Instance {
    /// Queues this instance (number `i`) for re-examination, once.
    #[inline]
    fn queue(&mut self, i: u32, dirty_instances: &mut Vec<u32>) {
        if !self.in_dirty {
            self.in_dirty = true;
            dirty_instances.push(i);
        }
    }

    /// Takes enabled transition `t` (of priority group `g`) out of its group, after a
    /// re-examination found it disabled.
    fn disable(&mut self, t: usize, g: usize) {
        self.enabled[t] = false;
        let k = self.pos[t] as usize;
        self.groups[g].swap_remove(k);
        if let Some(&moved) = self.groups[g].get(k) {
            self.pos[moved as usize] = k as u32;
        }
        self.pos[t] = NONE;
        self.n_enabled -= 1;
    }

    /// Marks the transitions adjacent to a place dirty after a change of it: after a put
    /// (`put`) those that see its count or are not enabled (a put cannot disable a
    /// transition nor move its binding), after a take all. Returns whether it marked any.
    #[inline]
    fn mark(&mut self, adj: &[Adj], put: bool) -> bool {
        let mut any = false;
        for a in adj {
            let t = a.t as usize;
            if (a.count || !put || !self.enabled[t]) && !self.dirty_flag[t] {
                self.dirty_flag[t] = true;
                self.dirty.push(a.t);
                any = true;
            }
        }
        any
    }
}

#[derive(Debug)]
struct ParentLink {
    instance: u32,
    transition: TransitionId,
    consumed: Vec<usize>,
}

#[derive(Debug)]
struct TaskRecord {
    instance: u32,
    transition: TransitionId,
    consumed: Vec<usize>,
    release: Vec<Value>,
    /// `connect-response`: the response port and the id of the response it answers.
    responses: Vec<(PortId, String)>,
}

#[derive(Debug)]
struct State {
    instances: Vec<Option<Instance>>,
    free: Vec<u32>,
    ready: Vec<u32>,
    dirty_instances: Vec<u32>,
    rng: Rng,
    interp: Interpreter,
    runner: Option<Box<dyn CodeRunner>>,
    frame: Vec<Option<Value>>,
    vals: Vec<(PortId, Value)>,
    idx: Vec<u32>,
    release: Vec<Value>,
    dead: Vec<Value>,
    shared: SharedTable,
    tasks: HashMap<u64, TaskRecord>,
    next_task: u64,
    stats: Stats,
    max_firings: Option<u64>,
    /// Eureka groups named since the last `take_eurekas`.
    eurekas: Vec<String>,
    /// Workflow responses answered since the last `take_responses`.
    responses: Vec<(String, Value)>,
    next_response: u64,
    /// The instance and transition the last step fired on the fast path, if it did.
    last_fast: Option<(u32, u32)>,
}

/// A running job.
#[derive(Debug)]
pub struct Engine<'b> {
    prog: Program<'b>,
    st: State,
}

const ROOT: u32 = 0;

impl<'b> Engine<'b> {
    /// Validates the bundle and sets up the root net with its initial tokens.
    pub fn new(bundle: &'b Bundle, config: &RunConfig) -> Result<Engine<'b>, RunError> {
        let prog = Program::new(bundle)?;
        if prog.nets[bundle.root.index()].is_none() {
            return Err(RunError::bundle("the root function has no net body"));
        }
        let mut st = State {
            instances: Vec::new(),
            free: Vec::new(),
            ready: Vec::new(),
            dirty_instances: Vec::new(),
            rng: Rng::new(config.seed),
            interp: Interpreter::new(),
            runner: config.runner.as_ref().map(|f| f.runner(bundle)),
            frame: Vec::new(),
            vals: Vec::new(),
            idx: Vec::new(),
            release: Vec::new(),
            dead: Vec::new(),
            shared: SharedTable::default(),
            tasks: HashMap::new(),
            next_task: 0,
            stats: Stats::default(),
            max_firings: config.max_firings,
            eurekas: Vec::new(),
            responses: Vec::new(),
            next_response: 0,
            last_fast: None,
        };
        let root = st.new_instance(&prog, bundle.root, None, Vec::new())?;
        debug_assert_eq!(root, ROOT);
        Ok(Engine { prog, st })
    }

    /// Puts the job's inputs on the places bound to the root's in ports.
    pub fn put_inputs(&mut self, inputs: &[(String, Vec<Value>)]) -> Result<(), RunError> {
        let f = self.prog.bundle.function(self.prog.bundle.root);
        for (name, values) in inputs {
            let port = f
                .port_by_name(name)
                .map(|p| f.port(p))
                .filter(|p| p.dir.is_input())
                .ok_or_else(|| input_error(format!("the net has no in port `{name}`")))?;
            let place = port
                .place
                .ok_or_else(|| input_error(format!("in port `{name}` is bound to no place")))?;
            for v in values {
                if !fits(v, &port.ty) {
                    return Err(input_error(format!(
                        "value {v} for port `{name}` is not of type {}",
                        port.ty
                    )));
                }
                self.st.put(&self.prog, ROOT, place.index(), v.clone());
            }
        }
        Ok(())
    }

    /// Puts a token on a `put_token="true"` place of the root net (a client's `put_token`).
    pub fn put_token(&mut self, place: &str, value: Value) -> Result<(), RunError> {
        let net = self.prog.net_ir(self.prog.bundle.root);
        let p = net
            .place_by_name(place)
            .filter(|p| net.place(*p).put_token)
            .ok_or_else(|| input_error(format!("no put_token place `{place}`")))?;
        if !fits(&value, &net.place(p).ty) {
            return Err(input_error(format!(
                "value {value} for place `{place}` is not of type {}",
                net.place(p).ty
            )));
        }
        self.st.put(&self.prog, ROOT, p.index(), value);
        Ok(())
    }

    /// Fires one transition (or hands out one task).
    pub fn step(&mut self) -> Result<Step, RunError> {
        self.st.last_fast = None;
        self.st.refresh(&self.prog)?;
        let st = &mut self.st;
        let n = st.ready.len();
        if n == 0 {
            let done = st.instance(ROOT).pending == 0
                && !(self.prog.wait_for_output && self.output_missing());
            return Ok(if done { Step::Done } else { Step::Waiting });
        }
        let i = if n == 1 {
            st.ready[0]
        } else {
            st.ready[st.rng.below(n)]
        };
        let inst = st.instances[i as usize].as_ref().expect("live instance");
        let Some(group) = inst.groups.iter().find(|g| !g.is_empty()) else {
            return Err(RunError::bundle(
                "internal: ready instance without enabled transitions",
            ));
        };
        let t = if group.len() == 1 {
            group[0]
        } else {
            group[st.rng.below(group.len())]
        };
        let info = &self.prog.net(inst.func).trans[t as usize];
        let r = match &info.fast {
            Some(plan) => match st.fire_fast(&self.prog, i, t as usize, plan) {
                Ok(()) => {
                    st.last_fast = Some((i, t));
                    return Ok(Step::Fired);
                }
                Err(e) => e,
            },
            None => match st.fire(&self.prog, i, t as usize) {
                Ok(step) => return Ok(step),
                Err(e) => e,
            },
        };
        Err(self.prog.context(r, i, &st.instances, t))
    }

    /// Fires up to `max` transitions as that many calls of [`Engine::step`] would (the same
    /// choices, the same random numbers drawn, the same markings), and stops early at the
    /// first step that is not a firing (returned) or after a firing that named a eureka group
    /// or answered a response (see [`Engine::has_eurekas_or_responses`]). Returns the number
    /// of firings and the last step (`Step::Fired` if the budget or a eureka/response ended
    /// the batch).
    ///
    /// Cheaper than single steps for loops: when a plain expression transition fired and the
    /// only thing it changed for the next choice is its own enabling (it is the only dirty
    /// transition of the only ready instance and alone in its instance's highest non-empty
    /// priority group), the next step re-examines it and fires it again directly, without
    /// the general re-examination and choice (which would draw no random number and come to
    /// the same transition).
    pub fn run_steps(&mut self, max: u64) -> Result<(u64, Step), RunError> {
        let mut fired = 0u64;
        let mut hot: Option<(u32, u32)> = None;
        while fired < max {
            if let Some((i, t)) = hot.take() {
                match self.st.refire(&self.prog, i, t, max - fired) {
                    Ok(0) => {}
                    Ok(n) => {
                        fired += n;
                        hot = Some((i, t));
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            match self.step()? {
                Step::Fired => {
                    fired += 1;
                    if self.has_eurekas_or_responses() {
                        break;
                    }
                    hot = self.st.last_fast;
                }
                other => return Ok((fired, other)),
            }
        }
        Ok((fired, Step::Fired))
    }

    /// Injects the outputs of a finished task (values of its out ports).
    pub fn complete_task(
        &mut self,
        id: TaskId,
        outputs: Vec<(PortId, Value)>,
    ) -> Result<(), RunError> {
        let rec = self
            .st
            .tasks
            .remove(&id.0)
            .ok_or_else(|| RunError::bundle(format!("unknown task {}", id.0)))?;
        let (i, t) = (rec.instance, rec.transition.index() as u32);
        self.st
            .complete(&self.prog, rec, outputs)
            .map_err(|e| self.prog.context(e, i, &self.st.instances, t))
    }

    /// Fails the job because a task failed; gives the error naming the module and transition.
    pub fn fail_task(&mut self, id: TaskId, message: &str) -> RunError {
        let Some(rec) = self.st.tasks.remove(&id.0) else {
            return RunError::bundle(format!("unknown task {}", id.0));
        };
        let inst = self.st.instance(rec.instance);
        let net = self.prog.net_ir(inst.func);
        let t = net.transition(rec.transition);
        let module = match &self.prog.bundle.function(t.function).body {
            Body::Module(m) => m.name.clone(),
            Body::Modules { modules, .. } => {
                modules.first().map(|m| m.name.clone()).unwrap_or_default()
            }
            _ => String::new(),
        };
        let e = RunError::new(RunErrorKind::TaskFailed {
            module,
            message: message.to_string(),
        });
        self.prog.context(
            e,
            rec.instance,
            &self.st.instances,
            rec.transition.index() as u32,
        )
    }

    /// Whether [`Engine::take_eurekas`] or [`Engine::take_responses`] has anything (a cheap
    /// check for drivers that ask after every step).
    #[inline]
    pub fn has_eurekas_or_responses(&self) -> bool {
        !self.st.eurekas.is_empty() || !self.st.responses.is_empty()
    }

    /// The eureka groups named by `connect-eureka` ports of transitions fired (or tasks
    /// completed) since the last call. The driver removes pending and interrupts running
    /// tasks of these groups and calls [`Engine::discard_task`] for each.
    pub fn take_eurekas(&mut self) -> Vec<String> {
        std::mem::take(&mut self.st.eurekas)
    }

    /// Drops a task without outputs (cancelled by a eureka): the tokens it consumed are gone,
    /// and the number-of-tokens counters of its places go down.
    pub fn discard_task(&mut self, id: TaskId) -> Result<(), RunError> {
        let rec = self
            .st
            .tasks
            .remove(&id.0)
            .ok_or_else(|| RunError::bundle(format!("unknown task {}", id.0)))?;
        self.st.discard(&self.prog, rec)
    }

    /// A client's workflow-response request: puts `Struct [value := VALUE, response_id := ID]`
    /// on the `put_token` place and returns ID; the answer comes out of
    /// [`Engine::take_responses`] once a transition with `connect-response` fires on it.
    pub fn request_response(&mut self, place: &str, value: Value) -> Result<String, RunError> {
        let id = format!("response-{}", self.st.next_response);
        self.st.next_response += 1;
        let token = Value::Struct(vec![
            ("value".into(), value),
            ("response_id".into(), Value::String(id.as_str().into())),
        ]);
        self.put_token(place, token)?;
        Ok(id)
    }

    /// The workflow responses answered since the last call: (response id, value).
    pub fn take_responses(&mut self) -> Vec<(String, Value)> {
        std::mem::take(&mut self.st.responses)
    }

    /// Whether the root function has `drts.wait_for_output`: then [`Engine::step`] answers
    /// [`Step::Waiting`] rather than [`Step::Done`] while an out port's place is empty, so
    /// that a client can still put tokens.
    pub fn waits_for_output(&self) -> bool {
        self.prog.wait_for_output
    }

    /// Whether some out port of the root has no token on its place.
    fn output_missing(&self) -> bool {
        let f = self.prog.bundle.function(self.prog.bundle.root);
        let root = self.st.instance(ROOT);
        f.ports.iter().filter(|p| p.dir.is_output()).any(|p| {
            p.place
                .and_then(|pl| root.marking.get(pl.index()))
                .is_none_or(|m| m.is_empty())
        })
    }

    /// Number of tasks handed out and not yet completed.
    pub fn running_tasks(&self) -> usize {
        self.st.tasks.len()
    }

    pub fn stats(&self) -> &Stats {
        &self.st.stats
    }

    /// The tokens on a root place, in order (for tests and inspection).
    pub fn tokens(&self, place: PlaceId) -> Vec<Value> {
        self.st
            .instance(ROOT)
            .marking
            .get(place.index())
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The job's result: the tokens behind the root's out ports.
    pub fn result(&self) -> RunResult {
        let f = self.prog.bundle.function(self.prog.bundle.root);
        let root = self.st.instance(ROOT);
        let outputs = f
            .ports
            .iter()
            .filter(|p| p.dir.is_output())
            .map(|p| {
                let tokens = p
                    .place
                    .and_then(|pl| root.marking.get(pl.index()))
                    .map(|m| m.iter().cloned().collect())
                    .unwrap_or_default();
                (p.name.clone(), tokens)
            })
            .collect();
        RunResult {
            outputs,
            stats: self.st.stats.clone(),
            ending: self.ending(),
        }
    }

    /// What the root net's marking says about how the job ended (see [`Ending`]): the inner
    /// places still holding tokens, the empty out ports, and transitions that lacked a token
    /// on some input while others held tokens.
    pub fn ending(&self) -> Ending {
        let f = self.prog.bundle.function(self.prog.bundle.root);
        let net = self.prog.net_ir(self.prog.bundle.root);
        let info = self.prog.net(self.prog.bundle.root);
        let root = self.st.instance(ROOT);
        let count = |p: usize| root.marking.get(p).map_or(0, |m| m.len() as u64);
        let mut ending = Ending::default();
        let mut out_place = vec![false; net.places.len()];
        for port in f.ports.iter().filter(|p| p.dir.is_output()) {
            match port.place {
                Some(pl) => {
                    out_place[pl.index()] = true;
                    if count(pl.index()) == 0 {
                        ending.empty_outputs.push(port.name.clone());
                    }
                }
                None => ending.empty_outputs.push(port.name.clone()),
            }
        }
        // Places only read (constants) keep their tokens by design.
        let mut consumed = vec![false; net.places.len()];
        let mut read = vec![false; net.places.len()];
        for t in &net.transitions {
            for c in &t.connections {
                match c.kind {
                    ConnectKind::In => consumed[c.place.index()] = true,
                    ConnectKind::Read => read[c.place.index()] = true,
                    _ => {}
                }
            }
            // A child net sees the place through its virtual place and may consume there.
            for &(_, real) in &t.place_map {
                if let Some(c) = consumed.get_mut(real.index()) {
                    *c = true;
                }
            }
        }
        let mut left = vec![false; net.places.len()];
        for (p, place) in net.places.iter().enumerate() {
            let n = count(p);
            if n > 0 && !out_place[p] && !place.generator && (consumed[p] || !read[p]) {
                left[p] = true;
                ending.tokens_left.push((place.name.clone(), n));
            }
        }
        for (t, ti) in info.trans.iter().enumerate() {
            if root.enabled.get(t).copied().unwrap_or(false) {
                continue;
            }
            let has = |p: usize, n: u32| net.places[p].generator || count(p) >= u64::from(n);
            let lacking = ti.need.iter().find(|&&(p, n)| !has(p, n));
            let holding = ti.need.iter().any(|&(p, _)| left[p]);
            if let (Some(&(p, _)), true) = (lacking, holding) {
                if ending.starved.len() < crate::ending::MAX_STARVED {
                    ending
                        .starved
                        .push((net.transitions[t].name.clone(), net.places[p].name.clone()));
                } else {
                    ending.more_starved += 1;
                }
            }
        }
        ending
    }
}

fn input_error(m: String) -> RunError {
    RunError::new(RunErrorKind::Input(m))
}

impl Program<'_> {
    /// Adds the transition's name and location (and the failing instruction's location).
    fn context(&self, e: RunError, i: u32, instances: &[Option<Instance>], t: u32) -> RunError {
        match instances.get(i as usize) {
            Some(Some(inst)) => self.context_in(e, inst.func, t as usize),
            _ => e,
        }
    }

    fn context_in(&self, mut e: RunError, func: FunctionId, t: usize) -> RunError {
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

/// `Value::fits` with fast paths for scalars.
#[inline]
pub(crate) fn fits(v: &Value, ty: &Type) -> bool {
    match (v, ty) {
        (_, Type::Any)
        | (Value::Long(_), Type::Long)
        | (Value::Int(_), Type::Int)
        | (Value::ULong(_), Type::ULong)
        | (Value::UInt(_), Type::UInt)
        | (Value::Bool(_), Type::Bool)
        | (Value::Control, Type::Control)
        | (Value::Char(_), Type::Char)
        | (Value::Float(_), Type::Float)
        | (Value::Double(_), Type::Double)
        | (Value::Bigint(_), Type::Bigint)
        | (Value::String(_), Type::String) => true,
        _ => v.fits(ty),
    }
}

/// The `n`-th value of a generator place of type `ty`, or `None` when the type runs out (also
/// used by pnetv's coloured explorer, which must generate the same values).
pub fn generator_value(ty: &Type, n: u128) -> Option<Value> {
    Some(match ty {
        Type::Int => Value::Int(i32::try_from(n).ok()?),
        Type::Long => Value::Long(i64::try_from(n).ok()?),
        Type::UInt => Value::UInt(u32::try_from(n).ok()?),
        Type::ULong => Value::ULong(u64::try_from(n).ok()?),
        Type::Char => Value::Char(i8::try_from(n.checked_add(b'a' as u128)?).ok()?),
        Type::String => {
            let mut m = n.checked_add(1)?;
            let mut s = Vec::new();
            while m > 0 {
                m -= 1;
                s.push(b'a' + (m % 26) as u8);
                m /= 26;
            }
            s.reverse();
            Value::string(std::str::from_utf8(&s).ok()?)
        }
        Type::Bigint => Value::bigint(BigInt::from(n)),
        _ => return None,
    })
}

impl State {
    fn instance(&self, i: u32) -> &Instance {
        self.instances[i as usize].as_ref().expect("live instance")
    }

    fn new_instance(
        &mut self,
        prog: &Program,
        func: FunctionId,
        parent: Option<ParentLink>,
        up: Vec<(u32, u32, u32)>,
    ) -> Result<u32, RunError> {
        let info = prog.net(func);
        let net = prog.net_ir(func);
        let nt = info.trans.len();
        let inst = Instance {
            func,
            marking: vec![Tokens::new(); net.places.len()],
            in_flight: vec![0; net.places.len()],
            gen_next: vec![0; net.places.len()],
            enabled: vec![false; nt],
            binding: info.trans.iter().map(|t| vec![0; t.takes.len()]).collect(),
            scan: vec![(0, 0); nt],
            dirty_flag: vec![true; nt],
            dirty: (0..nt as u32).collect(),
            groups: vec![Vec::new(); info.groups],
            pos: vec![NONE; nt],
            n_enabled: 0,
            pending: 0,
            parent,
            ready_pos: NONE,
            in_dirty: false,
            shares: !up.is_empty(),
            up,
            down: Vec::new(),
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.instances[i as usize] = Some(inst);
                i
            }
            None => {
                self.instances.push(Some(inst));
                (self.instances.len() - 1) as u32
            }
        };
        self.touch(i);
        for k in 0..self.instance(i).up.len() {
            let (q, h, hp) = self.instance(i).up[k];
            let home = self.inst_mut(h);
            home.down.push((hp, i, q));
            home.shares = true;
        }
        for (p, place) in net.places.iter().enumerate() {
            // A place mapped to an ancestor's is that place: no initial tokens or generator
            // value of its own (as in pnetv).
            if self.instance(i).up.iter().any(|&(q, _, _)| q as usize == p) {
                continue;
            }
            for v in &place.tokens {
                self.put(prog, i, p, v.clone());
            }
            if place.generator {
                self.put_generated(prog, i, p)?;
            }
        }
        Ok(i)
    }

    fn inst_mut(&mut self, i: u32) -> &mut Instance {
        self.instances[i as usize].as_mut().expect("live instance")
    }

    /// Queues an instance for re-examination (dirty transitions, completion).
    fn touch(&mut self, i: u32) {
        let inst = self.instances[i as usize].as_mut().expect("live instance");
        inst.queue(i, &mut self.dirty_instances);
    }

    /// Puts a token, counting its shareds if the place tracks them.
    #[inline]
    fn put(&mut self, prog: &Program, i: u32, p: usize, v: Value) {
        let inst = self.instances[i as usize].as_mut().expect("live instance");
        if inst.shares {
            return self.put_shared(prog, i, p, v);
        }
        let info = prog.net(inst.func);
        if info.tracks[p] {
            self.shared.acquire(&v);
        }
        inst.marking[p].push_back(v);
        if inst.mark(&info.adj[p], true) {
            self.touch(i);
        }
    }

    /// [`State::put`] in an instance that shares places with others (`place-map`): the
    /// token goes to the place's home, and the transitions adjacent to it in every instance
    /// that sees it are marked.
    #[inline(never)]
    fn put_shared(&mut self, prog: &Program, i: u32, p: usize, v: Value) {
        let (h, hp) = self.home(i, p);
        let inst = self.inst_mut(h);
        let info = prog.net(inst.func);
        if info.tracks[hp] {
            self.shared.acquire(&v);
        }
        let inst = self.inst_mut(h);
        inst.marking[hp].push_back(v);
        if inst.mark(&info.adj[hp], true) {
            self.touch(h);
        }
        self.mark_aliases(prog, h, hp, Change::Put);
    }

    /// Where the tokens of place `p` of instance `i` live: the (instance, place) a
    /// `place-map` makes it, or itself.
    #[inline]
    fn home(&self, i: u32, p: usize) -> (u32, usize) {
        let inst = self.instance(i);
        match inst.up.iter().find(|&&(q, _, _)| q as usize == p) {
            Some(&(_, h, hp)) => (h, hp as usize),
            None => (i, p),
        }
    }

    /// Marks the transitions adjacent to the places of running descendants that are home
    /// place `hp` of instance `h`, after a change of it.
    fn mark_aliases(&mut self, prog: &Program, h: u32, hp: usize, change: Change) {
        for k in 0..self.instance(h).down.len() {
            let (q, c, cq) = self.instance(h).down[k];
            if q as usize != hp {
                continue;
            }
            let any = match change {
                Change::Put => {
                    let inst = self.inst_mut(c);
                    inst.mark(&prog.net(inst.func).adj[cq as usize], true)
                }
                Change::Take => self.mark_changed(prog, c, cq as usize, false),
                Change::Count => self.mark_changed(prog, c, cq as usize, true),
            };
            if any {
                self.touch(c);
            }
        }
    }

    /// Swaps the tokens and in-flight counts of instance `i`'s mapped places (`up`) with
    /// those of their homes: the first call lends them to `i` (whose code then reads and
    /// takes them as its own), the second gives them back.
    #[cold]
    #[inline(never)]
    fn swap_lent(&mut self, i: u32) {
        for k in 0..self.instance(i).up.len() {
            let (q, h, hp) = self.instance(i).up[k];
            let (a, b) = two_mut(&mut self.instances, i, h);
            std::mem::swap(&mut a.marking[q as usize], &mut b.marking[hp as usize]);
            std::mem::swap(&mut a.in_flight[q as usize], &mut b.in_flight[hp as usize]);
        }
    }

    /// Changes the in-flight count of place `p` of instance `i` (at its home) by one.
    #[inline]
    fn flight(&mut self, i: u32, p: usize, up: bool) {
        let (h, hp) = self.home(i, p);
        let f = &mut self.inst_mut(h).in_flight[hp];
        if up {
            *f += 1;
        } else {
            *f -= 1;
        }
    }

    /// After a take from place `p` of instance `i`: marks its transitions (in every instance
    /// that sees the place) and refills a generator place.
    #[inline]
    fn taken(&mut self, prog: &Program, i: u32, p: usize) -> Result<(), RunError> {
        self.changed(prog, i, p, false);
        let (h, hp) = self.home(i, p);
        if prog.net_ir(self.instance(h).func).places[hp].generator {
            self.put_generated(prog, h, hp)?;
        }
        Ok(())
    }

    /// Marks every transition adjacent to `p` dirty (after a take or a count change), in
    /// every instance that sees the place.
    #[inline]
    fn changed(&mut self, prog: &Program, i: u32, p: usize, only_count: bool) {
        let inst = self.instances[i as usize].as_mut().expect("live instance");
        if inst.shares {
            let (h, hp) = self.home(i, p);
            if self.mark_changed(prog, h, hp, only_count) {
                self.touch(h);
            }
            let change = if only_count {
                Change::Count
            } else {
                Change::Take
            };
            return self.mark_aliases(prog, h, hp, change);
        }
        if self.mark_changed(prog, i, p, only_count) {
            self.touch(i);
        }
    }

    /// Marks the transitions adjacent to place `p` of instance `i` dirty (all, or those that
    /// see its count); returns whether it marked any.
    #[inline]
    fn mark_changed(&mut self, prog: &Program, i: u32, p: usize, only_count: bool) -> bool {
        let inst = self.instances[i as usize].as_mut().expect("live instance");
        let info = prog.net(inst.func);
        let mut any = false;
        for a in &info.adj[p] {
            let t = a.t as usize;
            if (a.count || !only_count) && !inst.dirty_flag[t] {
                inst.dirty_flag[t] = true;
                inst.dirty.push(a.t);
                any = true;
            }
        }
        any
    }

    fn put_generated(&mut self, prog: &Program, i: u32, p: usize) -> Result<(), RunError> {
        let inst = self.inst_mut(i);
        let n = inst.gen_next[p];
        let place = prog
            .net_ir(inst.func)
            .places
            .get(p)
            .expect("validated place");
        let v = generator_value(&place.ty, n).ok_or_else(|| {
            RunError::new(RunErrorKind::GeneratorExhausted {
                place: place.name.clone(),
                ty: pnet_stdlib::type_name(&place.ty),
            })
        })?;
        inst.gen_next[p] = n + 1;
        self.put(prog, i, p, v);
        Ok(())
    }

    /// Re-examines dirty transitions and finishes child nets that are done.
    fn refresh(&mut self, prog: &Program) -> Result<(), RunError> {
        while let Some(i) = self.dirty_instances.pop() {
            let Some(inst) = self.instances[i as usize].as_mut() else {
                continue;
            };
            inst.in_dirty = false;
            // A child's mapped places' tokens are examined there as its own.
            let lent = !inst.up.is_empty();
            if lent {
                self.swap_lent(i);
            }
            let r = self.examine(prog, i);
            if lent {
                self.swap_lent(i);
            }
            r?;
            let inst = self.instances[i as usize].as_mut().expect("live instance");
            let (n_enabled, pending, is_child) =
                (inst.n_enabled, inst.pending, inst.parent.is_some());
            if n_enabled > 0 {
                if inst.ready_pos == NONE {
                    inst.ready_pos = self.ready.len() as u32;
                    self.ready.push(i);
                }
            } else {
                if inst.ready_pos != NONE {
                    let k = inst.ready_pos as usize;
                    inst.ready_pos = NONE;
                    self.ready.swap_remove(k);
                    if let Some(&moved) = self.ready.get(k) {
                        self.inst_mut(moved).ready_pos = k as u32;
                    }
                }
                if pending == 0 && is_child {
                    self.finish_child(prog, i)?;
                }
            }
        }
        Ok(())
    }

    /// Re-examines the dirty transitions of instance `i`.
    #[inline]
    fn examine(&mut self, prog: &Program, i: u32) -> Result<(), RunError> {
        let inst = self.instances[i as usize].as_mut().expect("live instance");
        let ninfo = prog.net(inst.func);
        while let Some(t) = inst.dirty.pop() {
            let t = t as usize;
            inst.dirty_flag[t] = false;
            let on = match enabled(
                prog,
                ninfo,
                inst,
                t,
                Eval {
                    interp: &mut self.interp,
                    runner: &mut self.runner,
                },
                &mut self.frame,
                &mut self.idx,
            ) {
                Ok(on) => on,
                Err(e) => return Err(prog.context_in(e, inst.func, t)),
            };
            if on != inst.enabled[t] {
                inst.enabled[t] = on;
                let g = ninfo.trans[t].group;
                if on {
                    inst.pos[t] = inst.groups[g].len() as u32;
                    inst.groups[g].push(t as u32);
                    inst.n_enabled += 1;
                } else {
                    inst.disable(t, g);
                }
            }
        }
        Ok(())
    }

    /// [`Engine::run_steps`]' shortcut after transition `t` of instance `i` fired on its fast
    /// path: if `t` is the only dirty transition of the only dirty instance, `i` is the only
    /// ready instance and `t` is alone in the instance's highest non-empty priority group,
    /// re-examines `t` as [`State::refresh`] would and, if it is still enabled, fires it as
    /// [`Engine::step`] would (its choice draws no random number there). A loop transition
    /// (see [`crate::Loop`]) on the only token of its place goes on in the code runner's
    /// [`crate::CodeRunner::run_loop`], up to `budget` firings (and the firing limit).
    /// Returns the number of firings: 0 if the shortcut does not apply (nothing changed) or
    /// the re-examination found `t` disabled. A transition found disabled leaves its group,
    /// as in `refresh`, and its instance stays queued for the rest of `refresh` (its ready
    /// list and child end).
    fn refire(&mut self, prog: &Program, i: u32, t: u32, budget: u64) -> Result<u64, RunError> {
        if self.dirty_instances[..] != [i] || self.ready[..] != [i] || budget == 0 {
            return Ok(0);
        }
        let State {
            instances,
            interp,
            runner,
            frame,
            idx,
            dirty_instances,
            stats,
            max_firings,
            ..
        } = self;
        let Some(inst) = instances.get_mut(i as usize).and_then(|x| x.as_mut()) else {
            return Ok(0);
        };
        let tu = t as usize;
        if inst.dirty[..] != [t] || !inst.enabled[tu] {
            return Ok(0);
        }
        let ninfo = prog.net(inst.func);
        let info = &ninfo.trans[tu];
        let Some(plan) = &info.fast else {
            return Ok(0);
        };
        let g = info.group;
        if inst.groups[g].len() != 1 || inst.groups[..g].iter().any(|x| !x.is_empty()) {
            return Ok(0);
        }
        // `refresh` for this one dirty transition.
        inst.dirty.clear();
        inst.dirty_flag[tu] = false;
        // A loop on the only token of its place: examinations and firings in the runner.
        let limit = max_firings.map_or(u64::MAX, |m| m.saturating_sub(stats.firings));
        if let (Some(c), [tk]) = (plan.loop_cond, plan.takes.as_slice())
            && limit > 0
            && inst.marking[tk.place].len() == 1
            && let Some(mut token) = inst.marking[tk.place].pop_front()
        {
            let l = Loop {
                cond: pnet_bundle::CodeId::from(c),
                cond_code: &prog.bundle.codes[c],
                expr: pnet_bundle::CodeId::from(plan.code),
                expr_code: &prog.bundle.codes[plan.code],
                slot: tk.port.index(),
                frame: plan.frame,
                clear: &plan.clear,
                ty: &plan.outs[0].ty,
            };
            let max = limit.min(budget);
            let (n, end) = match runner {
                Some(r) => r.run_loop(&l, &mut token, frame, max, interp),
                None => drive_loop(
                    &l,
                    &mut token,
                    frame,
                    max,
                    &mut crate::hook::Interpreted { interp, l: &l },
                ),
            };
            stats.firings += n;
            stats.expressions += n;
            #[cfg(test)]
            crate::tests::count_loop(&end);
            let func = inst.func;
            let failed = |e| Err(prog.context_in(e, func, tu));
            return match end {
                LoopEnd::Budget => {
                    // As after its last firing: it marked itself dirty (and its instance,
                    // still queued).
                    inst.marking[tk.place].push_back(token);
                    inst.dirty_flag[tu] = true;
                    inst.dirty.push(t);
                    Ok(n)
                }
                LoopEnd::Disabled => {
                    inst.marking[tk.place].push_back(token);
                    inst.disable(tu, g);
                    Ok(n)
                }
                LoopEnd::Condition(e) => {
                    inst.marking[tk.place].push_back(token);
                    failed(e)
                }
                LoopEnd::Expression(e) => failed(e),
                LoopEnd::Missing => failed(fast_missing(prog, func, tu, tk.port)),
                LoopEnd::Mismatch(v) => failed(fast_mismatch(prog, func, tu, tk.port, &v)),
            };
        }
        let on = enabled(prog, ninfo, inst, tu, Eval { interp, runner }, frame, idx)
            .map_err(|e| prog.context_in(e, inst.func, tu))?;
        if !on {
            inst.disable(tu, g);
            return Ok(0);
        }
        inst.in_dirty = false;
        dirty_instances.clear();
        self.fire_fast(prog, i, tu, plan)
            .map_err(|e| prog.context(e, i, &self.instances, t))?;
        Ok(1)
    }

    /// Fires a transition with a [`FastPlan`]: the same steps as [`State::fire`] (limit,
    /// counters, take, dirty marks, code, outputs) without its general cases. A function of
    /// its own (not inlined into the big [`Engine::step`]), so that the token moves inline
    /// the containers' methods and build no `Value` temporaries (see `with_scalar_copy`).
    #[inline(never)]
    fn fire_fast(
        &mut self,
        prog: &Program,
        i: u32,
        t: usize,
        plan: &FastPlan,
    ) -> Result<(), RunError> {
        if let Some(max) = self.max_firings
            && self.stats.firings >= max
        {
            return Err(RunError::new(RunErrorKind::MaxFirings(max)));
        }
        self.stats.firings += 1;
        self.stats.expressions += 1;
        let State {
            instances,
            frame,
            interp,
            runner,
            dirty_instances,
            ..
        } = self;
        let Some(inst) = instances.get_mut(i as usize).and_then(|x| x.as_mut()) else {
            return Err(RunError::bundle("internal: no such instance"));
        };
        let ninfo = prog.net(inst.func);
        // The frame: the take slots are overwritten below, the others emptied.
        crate::interp::firing_frame(frame, plan.frame, &plan.clear);
        // Read and consume, straight from the place into the frame slot. Without a
        // condition the binding is the front tokens (all zeros: no place is taken twice).
        let binding = &inst.binding[t];
        for (k, tk) in plan.takes.iter().enumerate() {
            let j = binding[k] as usize;
            let q = &mut inst.marking[tk.place];
            let slot = &mut frame[tk.port.index()];
            let ok = if tk.consume {
                crate::interp::take_token(slot, q, j)
            } else {
                crate::interp::set_clone(slot, q.get(j));
                slot.is_some()
            };
            if !ok {
                return Err(RunError::bundle("internal: stale binding"));
            }
        }
        // Dirty marks.
        let mut any = false;
        for &(a, skip) in &plan.marks {
            let u = a.t as usize;
            if !(inst.dirty_flag[u] || skip && inst.enabled[u]) {
                inst.dirty_flag[u] = true;
                inst.dirty.push(a.t);
                any = true;
            }
        }
        if any {
            inst.queue(i, dirty_instances);
        }
        let code = &prog.bundle.codes[plan.code];
        let id = pnet_bundle::CodeId::from(plan.code);
        match runner {
            Some(r) => r.run_effect(id, code, frame, interp)?,
            None => interp.run_effect(code, frame)?,
        }
        for FastOut { out: o, ty, mark } in &plan.outs {
            let slot = &mut frame[o.port.index()];
            match slot {
                None => return Err(fast_missing(prog, inst.func, t, o.port)),
                Some(v) if !fits(v, ty) => {
                    return Err(fast_mismatch(prog, inst.func, t, o.port, v));
                }
                Some(_) => {}
            }
            crate::interp::put_token(slot, &mut inst.marking[o.place], o.last);
            if *mark && inst.mark(&ninfo.adj[o.place], true) {
                inst.queue(i, dirty_instances);
            }
        }
        Ok(())
    }

    fn fire(&mut self, prog: &Program, i: u32, t: usize) -> Result<Step, RunError> {
        if let Some(max) = self.max_firings
            && self.stats.firings >= max
        {
            return Err(RunError::new(RunErrorKind::MaxFirings(max)));
        }
        self.stats.firings += 1;
        let inst = self.instances[i as usize].as_mut().expect("live instance");
        let func = inst.func;
        let info = &prog.net(func).trans[t];
        if let Kind::Expr(id) = info.kind
            && !info.multi
        {
            return self.fire_expr(prog, i, t, id);
        }
        let net = prog.net_ir(func);
        let tr = &net.transitions[t];
        let tf = prog.bundle.function(tr.function);
        // A child's mapped places' tokens are taken there as its own.
        let lent = !inst.up.is_empty();
        if lent {
            self.swap_lent(i);
        }
        let r = self.take_inputs(prog, i, t);
        if lent {
            self.swap_lent(i);
        }
        let n_counts = r?;
        // Shareds of consumed tokens, generator refills, dirty marks.
        self.release.clear();
        let ninfo = prog.net(func);
        for (k, tk) in info.takes.iter().enumerate() {
            if !tk.consume {
                continue;
            }
            if ninfo.tracks[tk.place] {
                shared::collect(&self.vals[n_counts + k].1, &mut self.release);
            }
        }
        let consumed: Vec<usize> = match info.kind {
            Kind::Expr(_) => Vec::new(),
            _ => info
                .takes
                .iter()
                .filter(|tk| tk.consume)
                .map(|tk| tk.place)
                .collect(),
        };
        for tk in &info.takes {
            if tk.consume {
                self.taken(prog, i, tk.place)?;
            }
        }

        match info.kind {
            Kind::Expr(id) => {
                let code = &prog.bundle.codes[id];
                let n = code.slots.len().max(tf.ports.len());
                crate::interp::reset_frame(&mut self.frame, n);
                for (port, v) in self.vals.drain(..) {
                    self.frame[port.index()] = Some(v);
                }
                self.run_expr(prog, i, t, id)
            }
            Kind::Module => {
                self.stats.tasks += 1;
                let eureka_code = match &tf.body {
                    Body::Module(m) => m.eureka_group,
                    Body::Modules { modules, .. } => modules.iter().find_map(|m| m.eureka_group),
                    _ => None,
                };
                let eureka_group = match eureka_code {
                    Some(c) => match self.eval_in_frame(prog, tf, c)? {
                        Value::String(g) => Some(g.to_string()),
                        other => {
                            return Err(RunError::new(RunErrorKind::TypeMismatch {
                                port: "eureka-group".into(),
                                value: other.to_string(),
                                ty: "string".into(),
                            }));
                        }
                    },
                    None => None,
                };
                let memory = self.eval_memory(prog, tf)?;
                let mut responses = Vec::new();
                for r in &tr.responses {
                    let v = self.vals.iter().find(|(p, _)| *p == r.to).map(|(_, v)| v);
                    responses.push((r.port, response_id(v, &tf.ports[r.to.index()].name)?));
                }
                self.inst_mut(i).pending += 1;
                for &p in &consumed {
                    self.flight(i, p, true);
                }
                for &p in &consumed {
                    self.changed(prog, i, p, true);
                }
                let id = self.next_task;
                self.next_task += 1;
                self.tasks.insert(
                    id,
                    TaskRecord {
                        instance: i,
                        transition: TransitionId(t as u32),
                        consumed,
                        release: std::mem::take(&mut self.release),
                        responses,
                    },
                );
                Ok(Step::Task(Task {
                    id: TaskId(id),
                    function: tr.function,
                    transition: TransitionId(t as u32),
                    name: tr.name.clone(),
                    location: prog.bundle.location(tr.span),
                    inputs: std::mem::take(&mut self.vals),
                    eureka_group,
                    memory,
                }))
            }
            Kind::Child(cf) => {
                self.stats.child_nets += 1;
                self.inst_mut(i).pending += 1;
                for &p in &consumed {
                    self.flight(i, p, true);
                }
                for &p in &consumed {
                    self.changed(prog, i, p, true);
                }
                // A place-map makes the child's virtual place the real place here, that is
                // wherever that place's tokens live (nested maps resolve to the outermost).
                let up: Vec<(u32, u32, u32)> = tr
                    .place_map
                    .iter()
                    .map(|&(v, r)| {
                        let (h, hp) = self.home(i, r.index());
                        (v.0, h, hp as u32)
                    })
                    .collect();
                // The tokens of a place are lent to one place of the child at a time.
                for (k, &(v, h, hp)) in up.iter().enumerate() {
                    if let Some(&(w, _, _)) = up[..k].iter().find(|&&(_, g, gp)| (g, gp) == (h, hp))
                    {
                        let cnet = prog.net_ir(cf);
                        let name = |p: u32| cnet.places[p as usize].name.clone();
                        let home = &prog.net_ir(self.instance(h).func).places[hp as usize].name;
                        return Err(RunError::bundle(format!(
                            "place-map: virtual places `{}` and `{}` of the child net are both \
                             place `{home}`; the engine maps at most one place of a child net \
                             to a place",
                            name(w),
                            name(v)
                        )));
                    }
                }
                let link = ParentLink {
                    instance: i,
                    transition: TransitionId(t as u32),
                    consumed,
                };
                let c = self.new_instance(prog, cf, Some(link), up)?;
                let vals = std::mem::take(&mut self.vals);
                for (port, v) in vals {
                    if let Some(p) = tf.ports[port.index()].place {
                        self.put(prog, c, p.index(), v);
                    }
                }
                self.release_consumed(prog, i)?;
                Ok(Step::Fired)
            }
        }
    }

    /// The counts and takes of a firing of transition `t` of instance `i` (the general path):
    /// the count values, then the taken tokens, into `self.vals` (by port); returns the
    /// number of counts.
    fn take_inputs(&mut self, prog: &Program, i: u32, t: usize) -> Result<usize, RunError> {
        let inst = self.instances[i as usize].as_mut().expect("live instance");
        let info = &prog.net(inst.func).trans[t];
        // The binding: cached for conditions, else the front tokens.
        if info.condition.is_none() {
            default_binding(info, &mut inst.binding[t], &[]);
        }
        // Counts before consuming.
        self.vals.clear();
        for &(port, p) in &info.counts {
            let n = inst.marking[p].len() as u64 + inst.in_flight[p];
            self.vals.push((port, Value::ULong(n)));
        }
        let n_counts = self.vals.len();
        // Read and consume.
        let binding = &inst.binding[t];
        for (k, tk) in info.takes.iter().enumerate() {
            let v = if tk.consume {
                if info.multi {
                    Value::Control // placeholder, filled below
                } else {
                    let q = &mut inst.marking[tk.place];
                    let j = binding[k] as usize;
                    let v = if j == 0 {
                        q.pop_front()
                    } else {
                        q.swap_remove_front(j)
                    };
                    v.ok_or_else(|| RunError::bundle("internal: stale binding"))?
                }
            } else {
                inst.marking[tk.place]
                    .get(binding[k] as usize)
                    .cloned()
                    .ok_or_else(|| RunError::bundle("internal: stale binding"))?
            };
            self.vals.push((tk.port, v));
        }
        if info.multi {
            // Remove from the back so that indices stay valid.
            let mut order: Vec<usize> = (0..info.takes.len())
                .filter(|&k| info.takes[k].consume)
                .collect();
            order.sort_by(|&a, &b| binding[b].cmp(&binding[a]));
            for k in order {
                let tk = info.takes[k];
                let v = inst.marking[tk.place]
                    .remove(binding[k] as usize)
                    .ok_or_else(|| RunError::bundle("internal: stale binding"))?;
                self.vals[n_counts + k].1 = v;
            }
        }
        Ok(n_counts)
    }

    /// Evaluates a module function's memory buffers and transfers over its input frame
    /// (`self.vals`).
    fn eval_memory(
        &mut self,
        prog: &Program,
        tf: &pnet_bundle::ir::Function,
    ) -> Result<Option<TaskMemory>, RunError> {
        if tf.memory_buffers.is_empty() && tf.memory_transfers.is_empty() {
            return Ok(None);
        }
        let mut buffers = Vec::with_capacity(tf.memory_buffers.len());
        for b in &tf.memory_buffers {
            let size = self.eval_in_frame(prog, tf, b.size)?;
            let size = memory_ulong(size, &b.name, "size", prog, b.size)?;
            let alignment = match b.alignment {
                Some(c) => {
                    let a = self.eval_in_frame(prog, tf, c)?;
                    memory_ulong(a, &b.name, "alignment", prog, c)?
                }
                None => 1,
            };
            buffers.push((size, alignment));
        }
        let mut transfers = Vec::with_capacity(tf.memory_transfers.len());
        for t in &tf.memory_transfers {
            let global = self.eval_in_frame(prog, tf, t.global)?;
            let local = self.eval_in_frame(prog, tf, t.local)?;
            transfers.push((global, local));
        }
        Ok(Some(TaskMemory { buffers, transfers }))
    }

    /// Runs code `c` (a module's eureka group, a memory buffer's size, a transfer's ranges)
    /// over a fresh frame holding the values of `self.vals`.
    fn eval_in_frame(
        &mut self,
        prog: &Program,
        tf: &pnet_bundle::ir::Function,
        c: pnet_bundle::CodeId,
    ) -> Result<Value, RunError> {
        let code = &prog.bundle.codes[c.index()];
        let n = code.slots.len().max(tf.ports.len());
        crate::interp::reset_frame(&mut self.frame, n);
        for (port, v) in &self.vals {
            self.frame[port.index()] = Some(v.clone());
        }
        Eval {
            interp: &mut self.interp,
            runner: &mut self.runner,
        }
        .run(c, code, &mut self.frame)
    }

    /// [`State::fire`] of an expression transition that takes from no place twice: the
    /// tokens go straight into the frame (no intermediate list).
    fn fire_expr(&mut self, prog: &Program, i: u32, t: usize, id: usize) -> Result<Step, RunError> {
        let inst = self.instance(i);
        let info = &prog.net(inst.func).trans[t];
        // A child's mapped places' tokens are taken there as its own.
        let lent = !inst.up.is_empty();
        if lent {
            self.swap_lent(i);
        }
        let r = self.take_into_frame(prog, i, t, id);
        if lent {
            self.swap_lent(i);
        }
        r?;
        // Generator refills, dirty marks.
        for tk in &info.takes {
            if tk.consume {
                self.taken(prog, i, tk.place)?;
            }
        }
        self.run_expr(prog, i, t, id)
    }

    /// The counts and takes of [`State::fire_expr`], into `self.frame`; the shareds of
    /// consumed tokens into `self.release`.
    #[inline]
    fn take_into_frame(
        &mut self,
        prog: &Program,
        i: u32,
        t: usize,
        id: usize,
    ) -> Result<(), RunError> {
        let inst = self.instances[i as usize].as_mut().expect("live instance");
        let ninfo = prog.net(inst.func);
        let info = &ninfo.trans[t];
        let net = prog.net_ir(inst.func);
        let tf = prog.bundle.function(net.transitions[t].function);
        let code = &prog.bundle.codes[id];
        // The binding: cached for conditions, else the front tokens.
        if info.condition.is_none() {
            default_binding(info, &mut inst.binding[t], &[]);
        }
        let n = code.slots.len().max(tf.ports.len());
        crate::interp::reset_frame(&mut self.frame, n);
        // Counts before consuming.
        for &(port, p) in &info.counts {
            let c = inst.marking[p].len() as u64 + inst.in_flight[p];
            self.frame[port.index()] = Some(Value::ULong(c));
        }
        // Read and consume; shareds of consumed tokens.
        self.release.clear();
        let binding = &inst.binding[t];
        for (k, tk) in info.takes.iter().enumerate() {
            let j = binding[k] as usize;
            let q = &mut inst.marking[tk.place];
            // Straight from the place into the frame slot (no temporaries).
            let slot = &mut self.frame[tk.port.index()];
            if tk.consume {
                *slot = if j == 0 {
                    q.pop_front()
                } else {
                    q.swap_remove_front(j)
                };
                if ninfo.tracks[tk.place]
                    && let Some(v) = slot
                {
                    shared::collect(v, &mut self.release);
                }
            } else {
                crate::interp::set_clone(slot, q.get(j));
            }
            if slot.is_none() {
                return Err(RunError::bundle("internal: stale binding"));
            }
        }
        Ok(())
    }

    /// Runs an expression transition's code over `self.frame` (which holds its inputs) and
    /// puts its outputs.
    fn run_expr(&mut self, prog: &Program, i: u32, t: usize, id: usize) -> Result<Step, RunError> {
        let func = self.instance(i).func;
        let info = &prog.net(func).trans[t];
        let tr = &prog.net_ir(func).transitions[t];
        let tf = prog.bundle.function(tr.function);
        let code = &prog.bundle.codes[id];
        self.stats.expressions += 1;
        Eval {
            interp: &mut self.interp,
            runner: &mut self.runner,
        }
        .run_effect(pnet_bundle::CodeId::from(id), code, &mut self.frame)?;
        if !tr.eureka_ports.is_empty() || !tr.responses.is_empty() {
            let frame = &self.frame;
            let get = |p: PortId| frame.get(p.index()).and_then(|v| v.as_ref());
            for r in &tr.responses {
                let id = response_id(get(r.to), &tf.ports[r.to.index()].name)?;
                let v = get(r.port)
                    .cloned()
                    .ok_or_else(|| missing(&tf.ports[r.port.index()].name))?;
                self.responses.push((id, v));
            }
            eureka_groups(tr, tf, get, &mut self.eurekas)?;
        }
        for o in &info.outs {
            let slot = &mut self.frame[o.port.index()];
            let v = if o.last { slot.take() } else { slot.clone() };
            let port = &tf.ports[o.port.index()];
            let v = v.ok_or_else(|| missing(&port.name))?;
            self.output(prog, i, o, port, v)?;
        }
        self.release_consumed(prog, i).map(|()| Step::Fired)
    }

    /// Puts an output port's value (out: the value; out-many: each list element).
    fn output(
        &mut self,
        prog: &Program,
        i: u32,
        o: &Out,
        port: &pnet_bundle::Port,
        v: Value,
    ) -> Result<(), RunError> {
        if !fits(&v, &port.ty) {
            return Err(RunError::new(RunErrorKind::TypeMismatch {
                port: port.name.clone(),
                value: v.to_string(),
                ty: port.ty.to_string(),
            }));
        }
        if o.many {
            let Value::List(xs) = v else {
                return Err(RunError::new(RunErrorKind::TypeMismatch {
                    port: port.name.clone(),
                    value: v.to_string(),
                    ty: "list".into(),
                }));
            };
            let func = self.instance(i).func;
            let pty = &prog.net_ir(func).places[o.place].ty;
            for x in xs {
                if !fits(&x, pty) {
                    return Err(RunError::new(RunErrorKind::TypeMismatch {
                        port: port.name.clone(),
                        value: x.to_string(),
                        ty: pty.to_string(),
                    }));
                }
                self.put(prog, i, o.place, x);
            }
        } else {
            self.put(prog, i, o.place, v);
        }
        Ok(())
    }

    /// Releases the shareds in `self.release` and puts the clean-up values of those that died.
    #[inline]
    fn release_consumed(&mut self, prog: &Program, i: u32) -> Result<(), RunError> {
        if self.release.is_empty() {
            return Ok(());
        }
        self.release_shareds(prog, i)
    }

    #[inline(never)]
    fn release_shareds(&mut self, prog: &Program, i: u32) -> Result<(), RunError> {
        let release = std::mem::take(&mut self.release);
        self.dead.clear();
        for v in &release {
            self.shared.release(v, &mut self.dead);
        }
        self.release = release;
        self.release.clear();
        let dead = std::mem::take(&mut self.dead);
        for d in &dead {
            let Value::Shared(s) = d else { continue };
            // The sink: a shared_sink place of that name here or in an enclosing net.
            let mut at = Some(i);
            let mut found = None;
            while let Some(k) = at {
                let inst = self.instance(k);
                let net = prog.net_ir(inst.func);
                if let Some(p) = net
                    .places
                    .iter()
                    .position(|p| p.shared_sink && *p.name == *s.place)
                {
                    found = Some((k, p));
                    break;
                }
                at = inst.parent.as_ref().map(|l| l.instance);
            }
            let (k, p) = found.ok_or_else(|| {
                RunError::new(RunErrorKind::NoSharedSink {
                    place: s.place.to_string(),
                })
            })?;
            self.put(prog, k, p, s.value.clone());
        }
        self.dead = dead;
        self.dead.clear();
        Ok(())
    }

    fn complete(
        &mut self,
        prog: &Program,
        rec: TaskRecord,
        mut outputs: Vec<(PortId, Value)>,
    ) -> Result<(), RunError> {
        let i = rec.instance;
        let func = self.instance(i).func;
        let net = prog.net_ir(func);
        let tr = &net.transitions[rec.transition.index()];
        let tf = prog.bundle.function(tr.function);
        let info = &prog.net(func).trans[rec.transition.index()];
        self.returned(prog, i, &rec.consumed);
        for (port, id) in rec.responses {
            let v = outputs
                .iter()
                .find(|(p, _)| *p == port)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| missing(&tf.ports[port.index()].name))?;
            self.responses.push((id, v));
        }
        let get = |p: PortId| outputs.iter().find(|(q, _)| *q == p).map(|(_, v)| v);
        eureka_groups(tr, tf, get, &mut self.eurekas)?;
        for o in &info.outs {
            let port = tf.ports.get(o.port.index()).ok_or_else(|| missing("?"))?;
            let k = outputs
                .iter()
                .position(|(p, _)| *p == o.port)
                .ok_or_else(|| missing(&port.name))?;
            let v = if o.last {
                outputs.swap_remove(k).1
            } else {
                outputs[k].1.clone()
            };
            self.output(prog, i, o, port, v)?;
        }
        self.release = rec.release;
        self.release_consumed(prog, i)
    }

    /// A task or child net of instance `i` came back (or was dropped): the tokens it consumed
    /// from `consumed` are no longer in flight.
    fn returned(&mut self, prog: &Program, i: u32, consumed: &[usize]) {
        self.inst_mut(i).pending -= 1;
        for &p in consumed {
            self.flight(i, p, false);
        }
        for &p in consumed {
            self.changed(prog, i, p, true);
        }
        self.touch(i);
    }

    /// A task dropped without outputs.
    fn discard(&mut self, prog: &Program, rec: TaskRecord) -> Result<(), RunError> {
        let i = rec.instance;
        self.returned(prog, i, &rec.consumed);
        self.release = rec.release;
        self.release_consumed(prog, i)
    }

    /// A child net is done: its out ports' tokens go out through the parent's connections.
    fn finish_child(&mut self, prog: &Program, c: u32) -> Result<(), RunError> {
        let Some(mut child) = self.instances[c as usize].take() else {
            return Ok(());
        };
        self.free.push(c);
        // Its mapped places were only views of its ancestors' places, which keep their
        // tokens (the slots here are empty).
        for &(_, h, _) in &child.up {
            if let Some(home) = self.instances[h as usize].as_mut() {
                home.down.retain(|&(_, d, _)| d != c);
                home.shares = !home.up.is_empty() || !home.down.is_empty();
            }
        }
        let Some(link) = child.parent.take() else {
            return Ok(());
        };
        let i = link.instance;
        let cinfo = prog.net(child.func);
        // Every token of the child held its shareds; release them after the outputs are put.
        let mut release = Vec::new();
        for (p, m) in child.marking.iter().enumerate() {
            if cinfo.tracks[p] {
                m.iter().for_each(|v| shared::collect(v, &mut release));
            }
        }
        let func = self.instance(i).func;
        let net = prog.net_ir(func);
        let t = link.transition.index();
        let tf = prog.bundle.function(net.transitions[t].function);
        let info = &prog.net(func).trans[t];
        self.returned(prog, i, &link.consumed);
        let ctx = |e: RunError| prog.context_in(e, func, t);
        for o in &info.outs {
            let port = &tf.ports[o.port.index()];
            let cp = port.place.ok_or_else(|| ctx(missing(&port.name)))?;
            if child.up.iter().any(|&(q, _, _)| q as usize == cp.index()) {
                // An out port on a mapped place: its tokens already live in an ancestor (as
                // in pnetv).
                continue;
            }
            let tokens: Vec<Value> = if o.last {
                child.marking[cp.index()].take_all()
            } else {
                child.marking[cp.index()].iter().cloned().collect()
            };
            for v in tokens {
                self.output(prog, i, o, port, v).map_err(ctx)?;
            }
        }
        self.release = release;
        self.release_consumed(prog, i)
    }
}

/// The error of a fast-path output port without a value.
#[cold]
#[inline(never)]
fn fast_missing(prog: &Program, func: FunctionId, t: usize, port: PortId) -> RunError {
    let tf = prog
        .bundle
        .function(prog.net_ir(func).transitions[t].function);
    missing(&tf.ports[port.index()].name)
}

/// The error of a fast-path output value that does not fit its port.
#[cold]
#[inline(never)]
fn fast_mismatch(prog: &Program, func: FunctionId, t: usize, port: PortId, v: &Value) -> RunError {
    let tf = prog
        .bundle
        .function(prog.net_ir(func).transitions[t].function);
    let port = &tf.ports[port.index()];
    RunError::new(RunErrorKind::TypeMismatch {
        port: port.name.clone(),
        value: v.to_string(),
        ty: port.ty.to_string(),
    })
}

fn missing(port: &str) -> RunError {
    RunError::new(RunErrorKind::MissingBinding {
        port: port.to_string(),
    })
}

/// Whether a transition is enabled; for conditions, also finds and caches the binding.
#[inline]
fn enabled(
    prog: &Program,
    ninfo: &NetInfo,
    inst: &mut Instance,
    t: usize,
    mut eval: Eval,
    frame: &mut Vec<Option<Value>>,
    idx: &mut Vec<u32>,
) -> Result<bool, RunError> {
    let info = &ninfo.trans[t];
    if info.dead {
        return Ok(false);
    }
    for &(p, n) in &info.need {
        if (inst.marking[p].len() as u64) < n as u64 {
            return Ok(false);
        }
    }
    let Some(c) = info.condition else {
        return Ok(true);
    };
    let code = &prog.bundle.codes[c];
    let id = pnet_bundle::CodeId::from(c);
    crate::interp::reset_frame(frame, code.slots.len());
    for &(port, p) in &info.counts {
        let n = inst.marking[p].len() as u64 + inst.in_flight[p];
        if let Some(s) = frame.get_mut(port.index()) {
            *s = Some(Value::ULong(n));
        }
    }
    let e = &info.enumerated;
    if !info.multi && e.len() <= 1 {
        // The usual case: one token varies (or none); every other take binds the front token.
        let binding = &mut inst.binding[t];
        let Some(&ti) = e.first() else {
            if eval.run_bool(id, code, frame)? {
                for b in binding.iter_mut() {
                    *b = 0;
                }
                return Ok(true);
            }
            return Ok(false);
        };
        let tk = info.takes[ti];
        let q = &inst.marking[tk.place];
        // The condition is a function of the token alone (and fails or holds the same way
        // each time): the tokens at the front that failed it last time still fail it, less
        // one for each removal since (a removal moves a token at most one place to the
        // front; puts go to the back). The search resumes after them: the same first token
        // holds, without a search over the whole place each time it changes.
        let cache = info.counts.is_empty() && scan_cache_on();
        let (known, then) = inst.scan[t];
        let start = if cache {
            (u64::from(known).saturating_sub(q.removals() - then) as usize).min(q.len())
        } else {
            0
        };
        for j in start..q.len() {
            crate::interp::set_clone(&mut frame[tk.port.index()], q.get(j));
            if eval.run_bool(id, code, frame)? {
                // (A loop, not `fill`: a call of memset for one or two words.)
                for (k, b) in binding.iter_mut().enumerate() {
                    *b = if k == ti { j as u32 } else { 0 };
                }
                if cache {
                    inst.scan[t] = (j as u32, q.removals());
                }
                return Ok(true);
            }
        }
        if cache {
            inst.scan[t] = (q.len() as u32, q.removals());
        }
        return Ok(false);
    }
    idx.clear();
    idx.resize(e.len(), 0);
    loop {
        // Distinct tokens for takes from the same place.
        let distinct = !info.multi
            || (0..e.len()).all(|a| {
                (0..a).all(|b| info.takes[e[a]].place != info.takes[e[b]].place || idx[a] != idx[b])
            });
        if distinct {
            for (k, &ti) in e.iter().enumerate() {
                let tk = info.takes[ti];
                crate::interp::set_clone(
                    &mut frame[tk.port.index()],
                    inst.marking[tk.place].get(idx[k] as usize),
                );
            }
            if eval.run_bool(id, code, frame)? {
                let binding = &mut inst.binding[t];
                for (k, &ti) in e.iter().enumerate() {
                    binding[ti] = idx[k];
                }
                let fixed: Vec<(usize, u32)> = if info.multi {
                    e.iter().map(|&ti| (ti, binding[ti])).collect()
                } else {
                    Vec::new()
                };
                default_binding(info, binding, &fixed);
                return Ok(true);
            }
        }
        // Next combination (the last enumerated take varies fastest).
        let mut k = e.len();
        loop {
            if k == 0 {
                return Ok(false);
            }
            k -= 1;
            idx[k] += 1;
            if (idx[k] as usize) < inst.marking[info.takes[e[k]].place].len() {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Whether [`enabled`] resumes its search after the tokens known to fail (tests compare
/// with and without).
#[inline(always)]
fn scan_cache_on() -> bool {
    #[cfg(test)]
    {
        crate::tests::scan_cache_on()
    }
    #[cfg(not(test))]
    {
        true
    }
}

/// Gives every take not in `fixed` (take index, token index) the lowest token index of its
/// place that no other take uses.
fn default_binding(info: &TransInfo, binding: &mut [u32], fixed: &[(usize, u32)]) {
    if !info.multi {
        for (k, b) in binding.iter_mut().enumerate() {
            if !info.enumerated.contains(&k) {
                *b = 0;
            }
        }
        return;
    }
    for k in 0..info.takes.len() {
        if fixed.iter().any(|&(f, _)| f == k) {
            continue;
        }
        let p = info.takes[k].place;
        let mut j = 0u32;
        while (0..k).any(|o| info.takes[o].place == p && binding[o] == j)
            || fixed
                .iter()
                .any(|&(f, b)| info.takes[f].place == p && b == j)
        {
            j += 1;
        }
        binding[k] = j;
    }
}

/// The evaluator of codes: the runner (JIT) if there is one, else the interpreter.
/// The id of the response a `connect-response` answers: the `response_id` field of the
/// value on its `to` port.
fn response_id(v: Option<&Value>, port: &str) -> Result<String, RunError> {
    match v {
        Some(Value::Struct(fields)) => fields
            .iter()
            .find(|(n, _)| &**n == "response_id")
            .and_then(|(_, v)| match v {
                Value::String(s) => Some(s.to_string()),
                _ => None,
            })
            .ok_or_else(|| {
                RunError::bundle(format!(
                    "connect-response: port `{port}` holds no string field `response_id`"
                ))
            }),
        Some(other) => Err(RunError::bundle(format!(
            "connect-response: port `{port}` holds {other}, not a struct with a `response_id`"
        ))),
        None => Err(missing(port)),
    }
}

/// The group names on the `connect-eureka` ports of transition `tr` (each value a set of
/// strings), the port values read through `get`.
fn eureka_groups<'v>(
    tr: &pnet_bundle::Transition,
    tf: &pnet_bundle::Function,
    get: impl Fn(PortId) -> Option<&'v Value>,
    out: &mut Vec<String>,
) -> Result<(), RunError> {
    for &p in &tr.eureka_ports {
        let port = &tf.ports[p.index()].name;
        let v = get(p).ok_or_else(|| missing(port))?;
        let bad = || {
            RunError::new(RunErrorKind::TypeMismatch {
                port: port.to_string(),
                value: v.to_string(),
                ty: "set of strings (eureka groups)".into(),
            })
        };
        let Value::Set(groups) = v else {
            return Err(bad());
        };
        for g in groups {
            match g {
                Value::String(s) => out.push(s.to_string()),
                _ => return Err(bad()),
            }
        }
    }
    Ok(())
}

struct Eval<'a> {
    interp: &'a mut Interpreter,
    runner: &'a mut Option<Box<dyn CodeRunner>>,
}

impl Eval<'_> {
    #[inline]
    fn run(
        &mut self,
        id: pnet_bundle::CodeId,
        code: &pnet_bundle::Code,
        frame: &mut [Option<Value>],
    ) -> Result<Value, RunError> {
        match self.runner {
            Some(r) => r.run(id, code, frame, self.interp),
            None => self.interp.run(code, frame),
        }
    }

    #[inline]
    fn run_bool(
        &mut self,
        id: pnet_bundle::CodeId,
        code: &pnet_bundle::Code,
        frame: &mut [Option<Value>],
    ) -> Result<bool, RunError> {
        match self.runner {
            Some(r) => r.run_bool(id, code, frame, self.interp),
            None => self.interp.run_bool(code, frame),
        }
    }

    /// Runs code whose value is not used (an expression: only its effect on the frame).
    #[inline]
    fn run_effect(
        &mut self,
        id: pnet_bundle::CodeId,
        code: &pnet_bundle::Code,
        frame: &mut [Option<Value>],
    ) -> Result<(), RunError> {
        match self.runner {
            Some(r) => r.run_effect(id, code, frame, self.interp),
            None => self.interp.run_effect(code, frame),
        }
    }
}

/// A memory buffer's size or alignment as a `u64` (`unsigned long`; other unsigned and
/// non-negative integers are accepted too).
fn memory_ulong(
    v: Value,
    buffer: &str,
    what: &str,
    prog: &Program,
    c: pnet_bundle::CodeId,
) -> Result<u64, RunError> {
    let n = match &v {
        Value::ULong(n) => Some(*n),
        Value::UInt(n) => Some(u64::from(*n)),
        Value::Long(n) => u64::try_from(*n).ok(),
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    };
    n.ok_or_else(|| {
        RunError::with_span(
            RunErrorKind::Memory(format!(
                "the {what} of memory buffer `{buffer}` is {v}, not an unsigned long"
            )),
            prog.bundle.codes[c.index()].span,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_values() {
        let s: Vec<String> = [0u128, 1, 25, 26, 27, 51, 52, 701, 702]
            .iter()
            .map(|&n| match generator_value(&Type::String, n) {
                Some(Value::String(s)) => s.to_string(),
                _ => "?".into(),
            })
            .collect();
        expect_test::expect![[r#"["a", "b", "z", "aa", "ab", "az", "ba", "zz", "aaa"]"#]]
            .assert_eq(&format!("{s:?}"));
        assert!(matches!(
            generator_value(&Type::Char, 0),
            Some(Value::Char(97))
        ));
        assert!(matches!(
            generator_value(&Type::Char, 30),
            Some(Value::Char(127))
        ));
        assert!(generator_value(&Type::Char, 31).is_none());
        assert!(matches!(
            generator_value(&Type::Int, i32::MAX as u128),
            Some(Value::Int(i32::MAX))
        ));
        assert!(generator_value(&Type::Int, i32::MAX as u128 + 1).is_none());
        assert!(generator_value(&Type::Bool, 0).is_none());
    }
}
