//! State-space exploration of coloured nets (bundles): tokens carry values; conditions and
//! expressions run in the VM's interpreter.
//!
//! # What is modelled
//!
//! Semantics explored (the engine, `vm/engine`, is the reference). The rules themselves are
//! the engine's code: the static reading of transitions (`pnet_engine::connections`,
//! `priority_groups`), the enumeration of bindings (`for_each_combination`: distinct tokens
//! per place, token order), input frames (`input_frame`), out values and their type checks
//! (`out_value`, `output_tokens`), eureka ports (`eureka_groups`), and the firing rules
//! written once for both states, generic over `pnet_engine::Marking` (the explorer's state is
//! one, see `Tree`): a generator's refill (`refill`), a child net's start
//! (`initial_tokens`, `child_inputs`) and end (`child_outputs`), and the release of shareds
//! with the clean-up to the `shared_sink` place (`release_shareds`, over the engine's
//! `SharedTable`); the differential test `tests/tests/explorer_vs_engine.rs` checks that
//! engine runs are runs of the explorer. What is the explorer's own: the state (a canonical
//! instance tree of sorted token lists, with unknown module outputs; removing a binding's
//! tokens from it), following every binding instead of the first, and the shared counts
//! rebuilt from the marking before each firing (a state keeps none).
//!
//! - **Firing**: every binding of every enabled transition of the highest priority group
//!   that has one, per net instance (the engine picks an instance with enabled transitions
//!   at random, then a transition of its highest non-empty group, and takes the first
//!   satisfying combination in token order; exploring all of them covers every schedule and
//!   every token order). A transition with an input port connected to no place never fires.
//!   Expression transitions fire inside the state space; a module call is one atomic firing
//!   (consume, then produce its outputs; a task's in-flight time changes no verdict since
//!   `number-of-tokens` counts in-flight tokens as present).
//! - **Generator places** hold exactly one token: consuming it puts the next value at once
//!   (int/long/uint/ulong from 0, char from 'a', string "a".."z","aa"..., bigint). The index
//!   of the next value is part of the state; running out of a finite type is an evaluation
//!   error of the firing (reported like the engine's run-time error).
//! - **Shared values** (`shared_P`): a shared lives while a token on a place that is not a
//!   `shared_sink` holds it (also nested in lists, sets, maps, structs, and inside the wrapped
//!   value of a live shared), anywhere in the net instance tree. When a firing (or the end of
//!   a child net) makes one disappear, its wrapped value goes to the `shared_sink` place `P`
//!   of the firing's net or the nearest enclosing one (no such place: an error, as in the
//!   engine). The counts are rebuilt from the marking before each firing, so they are exact
//!   whenever the tokens are known.
//! - **Child nets** that were not inlined (a transition whose function body is a net): firing
//!   the transition consumes its inputs and starts a child instance (its initial tokens, its
//!   generators, and the input values on the places bound to the ports); the child's
//!   transitions interleave with everything else (priorities are per instance, as in the
//!   engine); the child ends as soon as nothing in it is enabled and no grandchild runs, and
//!   its out ports' tokens go out through the parent transition's connections (other tokens
//!   are dropped, releasing their shareds). While it runs, the tokens it consumed count for
//!   `number-of-tokens` of the parent's places. A `place-map virtual real` makes the child's
//!   virtual place *be* the parent's real place (the tokens live there). The marking is a
//!   tree, kept canonical (children sorted) so equal states compare equal. Transitions of a
//!   child are named `parent_transition/child_transition` in reports and traces.
//! - **External tokens** (`put_token` places of the root): `external` lists the values a
//!   client puts, in that order (one sequence, as one client program calls `put_token`);
//!   each can arrive at any moment while the job runs (an edge "external put of V on P");
//!   once the job has ended (nothing enabled and, with `drts.wait_for_output`, every out
//!   port has a token) nothing more arrives. Without values, no token ever arrives.
//! - **Eureka**: module calls are atomic, so no task is ever pending when a
//!   `connect-eureka` fires. To stay an over-approximation, a module call that has an
//!   `eureka-group` (in a bundle where some transition has `connect-eureka` ports) may also
//!   be *cancelled*: it consumes its inputs and produces nothing (a maybe edge). A
//!   `connect-eureka` port of an expression must hold a set of strings (else an error);
//!   which groups it names is not tracked further.
//! - Not modelled: memory buffers and transfers (not evaluated), `connect-response`
//!   (no answers are tracked), plugins.
//!
//! # Unknown values
//!
//! Module outputs are unknown before running. Each output port of a module call produces
//! the values the user assumes for it (`--assume TRANSITION.PORT=V1,V2,...`, one successor
//! per combination; `TRANSITION` is the transition's name, or its `parent/child` name), and
//! otherwise an *unknown* token. An unknown token is moved and counted like any token; a
//! condition or expression that reads it cannot be evaluated:
//! - a condition that reads an unknown value is *maybe* true: the binding fires (a *maybe*
//!   edge) and the marking may also stay as it is (the group below is tried as well; a child
//!   net whose only enabled bindings are maybes may also end);
//! - an expression that reads an unknown value gives unknown outputs;
//! - `connect-out-many` of an unknown list puts one unknown token (the count is then not
//!   exact: bounds and safety are reported as approximations, see the report's notes);
//! - an unknown token on a place whose type may hold a shared may hold one: a clean-up
//!   computed while such tokens exist is a maybe edge.
//!
//! The abstract state space then over-approximates every run: "no deadlock", "bounded by
//! k", "1-safe", "transition t is dead", "terminates" proven on it hold for every real run
//! (exact); a deadlock, an unsafe marking or a cycle found on it is real when its trace uses
//! no maybe edge (reported `exact`) and possibly spurious otherwise. Without unknown tokens
//! (no module calls, or every module output assumed) every verdict is exact (relative to the
//! assumptions), and liveness is computed (per transition: from every reachable state a
//! state where it fires is reachable, i.e. it fires in every bottom strongly connected
//! component).
//!
//! # Dead markings
//!
//! A reachable state with no successor is a *proper end* when no token is left on a place
//! some transition consumes from and (with `drts.wait_for_output`) every out port of the
//! root has a token; it is *waiting for an external token on P* when a `put_token` place `P`
//! could still enable a transition (every other input place of the transition holds a
//! token): a client's `put_token` would continue the job, so it is not counted as a
//! deadlock; otherwise it is a *deadlock*.

use std::collections::{BTreeMap, BTreeSet};

use pnet_bundle::{Body, Bundle, FunctionId, Net, PortId};
use pnet_engine::{Interpreter, Marking, RunError, RunErrorKind, SharedTable, may_hold_shared};
use pnet_stdlib::Value;

use crate::report::{Report, Trace, TransitionInfo, Verdict};

/// A token: a value or an abstracted module output.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tok {
    Val(Value),
    Unknown,
}

impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Val(v) => write!(f, "{v}"),
            Tok::Unknown => f.write_str("?"),
        }
    }
}

/// One net instance of a state: the root net or a running child net.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Node {
    /// The static net ([`Desc`]) this is an instance of.
    desc: u32,
    /// Per place: sorted tokens (a place mapped to a parent's place stays empty).
    places: Vec<Vec<Tok>>,
    /// Per generator place (in place order): the index of the next value.
    gens: Vec<u128>,
    /// The parent's places the starting firing consumed from (counted by the parent's
    /// `number-of-tokens` while the child runs), sorted.
    flight: Vec<u32>,
    /// Running child nets, sorted.
    children: Vec<Node>,
}

/// A state: the instance tree and how many external tokens arrived.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct State {
    root: Node,
    ext: u32,
}

/// Options of a coloured exploration.
#[derive(Clone, Debug)]
pub struct ColouredOptions {
    pub max_states: u64,
    pub max_tokens: Option<u64>,
    pub traces: usize,
    /// `(transition name, output port, values)`: the values a module output may take.
    pub assume: Vec<(String, String, Vec<Value>)>,
    /// `(put_token place of the root, value)`, in arrival order: the tokens a client puts.
    pub external: Vec<(String, Value)>,
    /// Compute termination and liveness (the SCC pass).
    pub scc: bool,
    /// Keep at most this many distinct out-port contents of proper ends in
    /// [`ColouredResult::end_outputs`].
    pub max_end_outputs: usize,
    /// Stop when the states kept take more than this many bytes (estimated per state: its
    /// instance tree, tokens and their values, kept twice: in the list and the index).
    pub max_memory: Option<u64>,
}

impl Default for ColouredOptions {
    fn default() -> Self {
        ColouredOptions {
            max_states: 1_000_000,
            max_tokens: None,
            traces: 1,
            assume: Vec::new(),
            external: Vec::new(),
            scc: true,
            max_end_outputs: 1000,
            max_memory: None,
        }
    }
}

/// The out ports' tokens at one proper end: per out port of the root (in port order), its
/// name and sorted tokens.
pub type EndOutputs = Vec<(String, Vec<Tok>)>;

/// Extra results besides the [`Report`].
#[derive(Clone, Debug, Default)]
pub struct ColouredResult {
    /// Distinct out-port contents of the proper ends (at most `max_end_outputs`), sorted.
    pub end_outputs: Vec<EndOutputs>,
    /// Whether `end_outputs` holds every distinct content found.
    pub end_outputs_complete: bool,
    /// The same at the deadlocks (dead markings with tokens left on consumed places, where
    /// the engine ends the job too), at most `max_end_outputs`.
    pub deadlock_outputs: Vec<EndOutputs>,
    /// Dead markings that wait for an external token (not deadlocks, not proper ends).
    pub waiting: u64,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Expr(usize),
    /// A module call; `eureka`: it may be cancelled by a eureka.
    Module {
        eureka: bool,
    },
    /// Starts an instance of this desc.
    Child(u32),
}

#[derive(Debug)]
struct TInfo {
    /// Index in the report's transitions.
    gid: usize,
    kind: Kind,
    function: FunctionId,
    /// `(port, place, consumes)`.
    takes: Vec<(PortId, usize, bool)>,
    counts: Vec<(PortId, usize)>,
    /// `(port, place, out-many)`.
    outs: Vec<(PortId, usize, bool)>,
    condition: Option<usize>,
    /// Per output port of a module: the assumed values (`None`: unknown).
    assumed: Vec<(PortId, Option<Vec<Value>>)>,
    /// Some input port is connected to no place, or no input connection at all: never fires.
    dead: bool,
}

/// A static net: the root, or the net of a child-net transition (one per path of
/// transitions from the root).
#[derive(Debug)]
struct Desc {
    func: FunctionId,
    /// `""` for the root, `"t/"` for the child of root transition `t`, `"t/u/"` below.
    prefix: String,
    /// The parent desc and the transition (index in it) that starts this net.
    parent: Option<(u32, usize)>,
    /// Index of place 0 in the report's places.
    place_base: usize,
    /// Per place: where its tokens live: (levels up the instance tree, place there).
    loc: Vec<(u32, usize)>,
    /// Per place: its slot in [`Node::gens`] if it is a generator.
    gen_slot: Vec<Option<usize>>,
    trans: Vec<TInfo>,
    /// Priority groups, highest first: transition indices.
    groups: Vec<Vec<usize>>,
    /// Per place: some transition consumes from it.
    consumed: Vec<bool>,
    /// Per place: its tokens count for the shareds they hold (the engine's rule: not a
    /// `shared_sink`, a type that may hold one, in a bundle that uses shareds).
    tracks: Vec<bool>,
}

struct Model<'b> {
    bundle: &'b Bundle,
    descs: Vec<Desc>,
    /// Number of real transitions (the report's transitions after them are external puts).
    n_real: usize,
    /// The external tokens: (root place, value).
    external: Vec<(usize, Value)>,
    uses_shared: bool,
    wait_for_output: bool,
    /// Root out ports: (name, place).
    out_ports: Vec<(String, usize)>,
}

impl Model<'_> {
    fn net(&self, d: u32) -> &Net {
        match &self.bundle.function(self.descs[d as usize].func).body {
            Body::Net(n) => n,
            // Descs are made for net bodies only.
            _ => unreachable!("desc of a net function"),
        }
    }

    fn desc(&self, d: u32) -> &Desc {
        &self.descs[d as usize]
    }
}

fn node<'a>(root: &'a Node, path: &[usize]) -> &'a Node {
    path.iter().fold(root, |n, &i| &n.children[i])
}

fn node_mut<'a>(root: &'a mut Node, path: &[usize]) -> &'a mut Node {
    path.iter().fold(root, |n, &i| &mut n.children[i])
}

/// Every instance path, parents before children.
fn paths(n: &Node, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(cur.clone());
    for i in 0..n.children.len() {
        cur.push(i);
        paths(&n.children[i], cur, out);
        cur.pop();
    }
}

fn for_each_node<'a>(n: &'a Node, f: &mut dyn FnMut(&'a Node)) {
    f(n);
    for c in &n.children {
        for_each_node(c, f);
    }
}

fn canonicalize(n: &mut Node) {
    for p in &mut n.places {
        p.sort();
    }
    for c in &mut n.children {
        canonicalize(c);
    }
    n.children.sort();
}

struct Succ {
    /// Label: index into the report's transitions.
    t: usize,
    state: State,
    exact: bool,
}

enum Outcome {
    /// Successors; whether the state may be dead (no firing is sure); whether the job may
    /// have ended here (nothing fires surely).
    Fired(Vec<Succ>, bool),
    Error(usize, String),
}

/// A binding of a transition: per take, the resolved place (owner path, place) and the
/// token index; the values; whether the condition surely holds.
struct Binding {
    at: Vec<(Vec<usize>, usize, usize)>,
    vals: Vec<Tok>,
    exact: bool,
}

enum Enabled {
    Surely,
    Maybe,
    No,
}

struct Explorer<'m, 'b> {
    m: &'m Model<'b>,
    interp: Interpreter,
    frame: Vec<Option<Value>>,
    unknown_many: bool,
    produced_unknown: bool,
    cleanup_maybe: bool,
    cancelled: bool,
    child_end_maybe: bool,
}

/// Analyses the root net of a bundle with the given job inputs (`port -> tokens`).
pub fn analyse_bundle(
    bundle: &Bundle,
    file: &str,
    inputs: &[(String, Vec<Value>)],
    opts: &ColouredOptions,
) -> Result<Report, String> {
    explore_bundle(bundle, file, inputs, opts).map(|(r, _)| r)
}

#[allow(clippy::too_many_arguments)]
fn build_desc(
    bundle: &Bundle,
    func: FunctionId,
    prefix: String,
    parent: Option<(u32, usize)>,
    parent_loc: &[(u32, usize)],
    descs: &mut Vec<Desc>,
    r: &mut Report,
    any_eureka: bool,
) -> Result<u32, String> {
    if descs.len() > 10_000 || prefix.matches('/').count() > 32 {
        return Err(format!(
            "child nets nest too deep at `{}` (a recursive net?)",
            prefix.trim_end_matches('/')
        ));
    }
    let f = bundle.function(func);
    let Body::Net(net) = &f.body else {
        return Err("a child net function has no net body".into());
    };
    let me = descs.len() as u32;
    let place_base = r.places.len();
    r.places
        .extend(net.places.iter().map(|p| format!("{prefix}{}", p.name)));
    let mut loc: Vec<(u32, usize)> = (0..net.places.len()).map(|p| (0, p)).collect();
    if let Some((pd, pt)) = parent {
        let pnet = match &bundle.function(descs[pd as usize].func).body {
            Body::Net(n) => n,
            _ => return Err("internal: parent desc without a net".into()),
        };
        for &(v, real) in &pnet.transitions[pt].place_map {
            let (up, q) = parent_loc
                .get(real.index())
                .copied()
                .ok_or("place-map names an unknown place")?;
            if let Some(l) = loc.get_mut(v.index()) {
                *l = (up + 1, q);
            }
        }
    }
    let mut gen_slot = vec![None; net.places.len()];
    let mut k = 0;
    for (p, place) in net.places.iter().enumerate() {
        if place.generator && loc[p].0 == 0 {
            gen_slot[p] = Some(k);
            k += 1;
        }
    }
    let mut trans = Vec::new();
    let mut children = Vec::new();
    for (ti, t) in net.transitions.iter().enumerate() {
        let tf = bundle.function(t.function);
        let kind = match &tf.body {
            Body::Expression(c) => Kind::Expr(c.index()),
            Body::Module(m) => Kind::Module {
                eureka: any_eureka && m.eureka_group.is_some(),
            },
            Body::Modules { modules, .. } => Kind::Module {
                eureka: any_eureka && modules.iter().any(|m| m.eureka_group.is_some()),
            },
            Body::Net(_) => {
                children.push(ti);
                Kind::Child(u32::MAX)
            }
        };
        let gid = r.transitions.len();
        r.transitions.push(TransitionInfo {
            id: format!("{prefix}{}", t.name),
            name: format!("{prefix}{}", t.name),
            location: bundle.location(t.span),
        });
        let shape = pnet_engine::connections(bundle, t);
        trans.push(TInfo {
            gid,
            kind,
            function: t.function,
            takes: shape.takes,
            counts: shape.counts,
            outs: shape.outs,
            condition: t.condition.map(|c| c.index()),
            assumed: Vec::new(),
            dead: shape.dead,
        });
    }
    let groups = pnet_engine::priority_groups(net);
    let consumed = (0..net.places.len())
        .map(|p| {
            trans
                .iter()
                .any(|i| i.takes.iter().any(|tk| tk.1 == p && tk.2))
        })
        .collect();
    descs.push(Desc {
        func,
        prefix: prefix.clone(),
        parent,
        place_base,
        loc: loc.clone(),
        gen_slot,
        trans,
        groups,
        consumed,
        tracks: Vec::new(),
    });
    for ti in children {
        let t = &net.transitions[ti];
        let c = build_desc(
            bundle,
            t.function,
            format!("{prefix}{}/", t.name),
            Some((me, ti)),
            &loc,
            descs,
            r,
            any_eureka,
        )?;
        descs[me as usize].trans[ti].kind = Kind::Child(c);
    }
    Ok(me)
}

/// Analyses the root net of a bundle with the given job inputs (`port -> tokens`); also
/// returns the out-port contents of the proper ends.
pub fn explore_bundle(
    bundle: &Bundle,
    file: &str,
    inputs: &[(String, Vec<Value>)],
    opts: &ColouredOptions,
) -> Result<(Report, ColouredResult), String> {
    with_explorer(bundle, file, inputs, opts, |x, s0, r| x.run(s0, r, opts))
}

/// Follows a run through the explorer's graph without building it (for state spaces too
/// large to explore): `markings[0]` is the root net's marking at the start (per place of the
/// root, its tokens), `markings[k]` the one after the run's `k`-th firing (a firing inside a
/// child net leaves it as it was). Checks that each is the root marking of a successor of a
/// state matched before (a firing of the run is an edge of the graph), and that the run ends
/// in a dead marking of the explorer. `Err` names the first firing that is no edge.
pub fn follow_run(
    bundle: &Bundle,
    inputs: &[(String, Vec<Value>)],
    markings: &[Vec<Vec<Value>>],
) -> Result<(), String> {
    let opts = ColouredOptions::default();
    with_explorer(bundle, "run", inputs, &opts, |x, s0, _| {
        x.follow(s0, markings)
    })
}

/// Sets up the static model and the initial state of a bundle with its job inputs, and hands
/// them to `go`.
fn with_explorer<T>(
    bundle: &Bundle,
    file: &str,
    inputs: &[(String, Vec<Value>)],
    opts: &ColouredOptions,
    go: impl FnOnce(&mut Explorer, State, Report) -> Result<T, String>,
) -> Result<T, String> {
    pnet_engine::validate(bundle)?;
    let root = bundle.function(bundle.root);
    let Body::Net(net) = &root.body else {
        return Err("the root function has no net body".into());
    };
    let mut r = Report::new(file, "coloured net");
    let any_eureka = bundle.functions.iter().any(|f| match &f.body {
        Body::Net(n) => n.transitions.iter().any(|t| !t.eureka_ports.is_empty()),
        _ => false,
    });
    let mut descs = Vec::new();
    build_desc(
        bundle,
        bundle.root,
        String::new(),
        None,
        &[],
        &mut descs,
        &mut r,
        any_eureka,
    )?;
    let n_real = r.transitions.len();

    // Assumptions: by full name (`a/b`) or by the transition's own name.
    for d in &mut descs {
        let dnet = match &bundle.function(d.func).body {
            Body::Net(n) => n,
            _ => continue,
        };
        for (ti, info) in d.trans.iter_mut().enumerate() {
            if !matches!(info.kind, Kind::Module { .. }) {
                continue;
            }
            let t = &dnet.transitions[ti];
            let full = format!("{}{}", d.prefix, t.name);
            let f = bundle.function(t.function);
            let mut ports: Vec<PortId> = info.outs.iter().map(|o| o.0).collect();
            ports.sort();
            ports.dedup();
            for port in ports {
                let pname = &f.port(port).name;
                let vals = opts
                    .assume
                    .iter()
                    .find(|(tn, pn, _)| (*tn == full || *tn == t.name) && pn == pname)
                    .map(|a| a.2.clone());
                info.assumed.push((port, vals));
            }
        }
    }
    for (tn, pn, _) in &opts.assume {
        let ok = descs.iter().any(|d| {
            let Body::Net(dnet) = &bundle.function(d.func).body else {
                return false;
            };
            d.trans.iter().enumerate().any(|(ti, i)| {
                let t = &dnet.transitions[ti];
                (t.name == *tn || format!("{}{}", d.prefix, t.name) == *tn)
                    && matches!(i.kind, Kind::Module { .. })
                    && bundle.function(t.function).port_by_name(pn).is_some()
            })
        });
        if !ok {
            return Err(format!(
                "--assume {tn}.{pn}: no module call `{tn}` with an output port `{pn}`"
            ));
        }
    }

    // External tokens.
    let mut external = Vec::new();
    for (k, (place, v)) in opts.external.iter().enumerate() {
        let p = net
            .place_by_name(place)
            .ok_or_else(|| format!("--external {place}: the root net has no place `{place}`"))?;
        let pl = net.place(p);
        if !pl.put_token {
            return Err(format!(
                "--external {place}: place `{place}` ({}) is not a put_token place",
                bundle.location(pl.span)
            ));
        }
        if !v.fits(&pl.ty) {
            return Err(format!(
                "--external {place}: value {v} is not of type {}",
                pl.ty
            ));
        }
        external.push((p.index(), v.clone()));
        r.transitions.push(TransitionInfo {
            id: format!("external#{k}"),
            name: format!("external put of {v} on {place}"),
            location: bundle.location(pl.span),
        });
    }

    let uses_shared = pnet_engine::bundle_uses_shared(bundle);
    for d in &mut descs {
        if let Body::Net(dnet) = &bundle.function(d.func).body {
            d.tracks = dnet
                .places
                .iter()
                .map(|p| uses_shared && !p.shared_sink && may_hold_shared(&p.ty))
                .collect();
        }
    }
    let out_ports = root
        .ports
        .iter()
        .filter(|p| p.dir.is_output())
        .filter_map(|p| p.place.map(|pl| (p.name.clone(), pl.index())))
        .collect();
    let model = Model {
        bundle,
        descs,
        n_real,
        external,
        uses_shared,
        wait_for_output: root
            .properties
            .iter()
            .any(|p| p.key == "drts.wait_for_output" && p.value.trim() == "true"),
        out_ports,
    };
    let mut x = Explorer {
        m: &model,
        interp: Interpreter::new(),
        frame: Vec::new(),
        unknown_many: false,
        produced_unknown: false,
        cleanup_maybe: false,
        cancelled: false,
        child_end_maybe: false,
    };

    // The initial state: place tokens, generators and job inputs.
    let mut root_node = x.new_node(0, Vec::new());
    let mut tree = Tree::new(&model, &mut root_node, SharedTable::default());
    pnet_engine::initial_tokens(&mut tree, bundle, &Vec::new()).map_err(|e| e.to_string())?;
    for (name, values) in inputs {
        let port = pnet_bundle::inputs::in_port(root, name)?;
        let place = port
            .place
            .ok_or_else(|| format!("in port `{name}` is bound to no place"))?;
        for v in values {
            pnet_bundle::inputs::check_value(v, &port.ty, &format!("port `{name}`"))?;
            root_node.places[place.index()].push(Tok::Val(v.clone()));
        }
    }
    canonicalize(&mut root_node);
    let s0 = State {
        root: root_node,
        ext: 0,
    };
    go(&mut x, s0, r)
}

/// An estimate of the bytes a state holds: its instance tree, token lists and the values'
/// heap parts (walked without recursion).
fn state_bytes(s: &State) -> usize {
    let mut bytes = std::mem::size_of::<State>();
    let mut nodes = vec![&s.root];
    let mut values: Vec<&Value> = Vec::new();
    while let Some(n) = nodes.pop() {
        bytes += std::mem::size_of::<Node>()
            + n.gens.len() * 16
            + n.flight.len() * 4
            + n.children.len() * std::mem::size_of::<Node>();
        for p in &n.places {
            bytes += std::mem::size_of::<Vec<Tok>>() + p.len() * std::mem::size_of::<Tok>();
            values.extend(p.iter().filter_map(|t| match t {
                Tok::Val(v) => Some(v),
                Tok::Unknown => None,
            }));
        }
        nodes.extend(&n.children);
    }
    let slot = std::mem::size_of::<Value>();
    while let Some(v) = values.pop() {
        bytes += match v {
            Value::String(s) => s.len(),
            Value::Bytearray(b) => b.len(),
            Value::Bigint(_) | Value::Bitset(_) => 32,
            Value::List(l) => {
                values.extend(l);
                l.len() * slot
            }
            Value::Set(set) => {
                values.extend(set);
                set.len() * (slot + 16)
            }
            Value::Map(m) => {
                values.extend(m.iter().flat_map(|(k, v)| [k, v]));
                m.len() * (2 * slot + 16)
            }
            Value::Struct(fields) => {
                values.extend(fields.iter().map(|(_, v)| v));
                fields.len() * (slot + 16)
            }
            Value::Shared(sh) => {
                values.push(&sh.value);
                slot
            }
            _ => 0,
        };
    }
    bytes
}

/// Per-exploration bookkeeping of the breadth-first search.
type Parents = Vec<(u32, u32, bool, bool)>;

impl<'m, 'b> Explorer<'m, 'b> {
    /// An empty instance of desc `d` (its tokens come from `pnet_engine::initial_tokens`).
    fn new_node(&self, d: u32, flight: Vec<u32>) -> Node {
        let desc = self.m.desc(d);
        Node {
            desc: d,
            places: vec![Vec::new(); desc.loc.len()],
            gens: vec![0; desc.gen_slot.iter().flatten().count()],
            flight,
            children: Vec::new(),
        }
    }

    /// See [`follow_run`].
    fn follow(&mut self, s0: State, markings: &[Vec<Vec<Value>>]) -> Result<(), String> {
        let root_is = |s: &State, mk: &[Vec<Value>]| {
            s.root.places.len() == mk.len()
                && s.root.places.iter().zip(mk).all(|(toks, vs)| {
                    let mut want: Vec<Tok> = vs.iter().cloned().map(Tok::Val).collect();
                    want.sort();
                    *toks == want
                })
        };
        let Some((first, rest)) = markings.split_first() else {
            return Err("no marking to follow".into());
        };
        if !root_is(&s0, first) {
            return Err(format!(
                "the run starts from another marking than the explorer's {}",
                self.render(&s0)
            ));
        }
        let mut frontier = vec![s0];
        for (k, mk) in rest.iter().enumerate() {
            let mut next: BTreeSet<State> = BTreeSet::new();
            for s in &frontier {
                match self.successors(s)? {
                    Outcome::Fired(succs, _) => next.extend(
                        succs
                            .into_iter()
                            .map(|sc| sc.state)
                            .filter(|st| root_is(st, mk)),
                    ),
                    Outcome::Error(_, msg) => return Err(format!("the explorer fails: {msg}")),
                }
            }
            if next.is_empty() {
                let from: Vec<String> = frontier.iter().map(|s| self.render(s)).collect();
                return Err(format!(
                    "firing {} of the run (to root marking {mk:?}) is no edge of the explorer's graph from {}",
                    k + 1,
                    from.join(" | ")
                ));
            }
            frontier = next.into_iter().collect();
        }
        for s in &frontier {
            if let Outcome::Fired(succs, maybe_dead) = self.successors(s)?
                && (succs.is_empty() || maybe_dead)
            {
                return Ok(());
            }
        }
        Err(format!(
            "the run ends where the explorer goes on: {}",
            self.render(&frontier[0])
        ))
    }

    fn run(
        &mut self,
        s0: State,
        mut r: Report,
        opts: &ColouredOptions,
    ) -> Result<(Report, ColouredResult), String> {
        let m = self.m;
        let n_labels = r.transitions.len();
        let monotone = m.descs.len() == 1
            && m.descs[0].groups.len() <= 1
            && m.descs[0].trans.iter().all(|i| i.counts.is_empty())
            && !m.uses_shared;
        let mut res = ColouredResult {
            end_outputs_complete: true,
            ..ColouredResult::default()
        };
        let mut end_set: BTreeSet<EndOutputs> = BTreeSet::new();
        let mut dead_set: BTreeSet<EndOutputs> = BTreeSet::new();

        let mut states: Vec<State> = vec![s0.clone()];
        let mut index: BTreeMap<State, u32> = BTreeMap::new();
        let mut kept_bytes = 2 * state_bytes(&s0) as u64;
        index.insert(s0, 0);
        // Parent, label, exact edge, exact path.
        let mut parents: Parents = vec![(u32::MAX, 0, true, true)];
        let mut adj: Vec<Vec<(u32, u32)>> = Vec::new();
        let mut fired = vec![false; n_labels];
        let mut place_max = vec![0u64; r.places.len()];
        let mut marking_max = 0u64;
        let mut first_unsafe: Option<u32> = None;
        self.measure(
            &states[0],
            &mut place_max,
            &mut marking_max,
            &mut first_unsafe,
            0,
        );
        let mut dead: Vec<(u32, bool, Vec<String>)> = Vec::new();
        let mut waits: Vec<(u32, String)> = Vec::new();
        let (mut dead_count, mut ends) = (0u64, 0u64);
        let mut errors: Vec<(u32, usize, String)> = Vec::new();
        let mut unbounded: Option<(u32, u32, Vec<usize>)> = None;
        let mut stop: Option<String> = None;
        let mut cut = 0u64;
        let mut edges = 0u64;
        let mut head = 0usize;
        'outer: while head < states.len() {
            let s = head as u32;
            head += 1;
            let st = states[s as usize].clone();
            adj.push(Vec::new());
            if let Some(k) = opts.max_tokens {
                let mut over = false;
                for_each_node(&st.root, &mut |n| {
                    over |= n.places.iter().any(|p| p.len() as u64 > k)
                });
                if over {
                    cut += 1;
                    continue;
                }
            }
            let (succs, maybe_dead) = match self.successors(&st)? {
                Outcome::Fired(v, maybe_dead) => (v, maybe_dead),
                Outcome::Error(t, msg) => {
                    errors.push((s, t, msg));
                    continue;
                }
            };
            if succs.is_empty() || maybe_dead {
                let stuck = self.stuck(&st);
                let missing = self.output_missing(&st);
                if stuck.is_empty() && !missing {
                    ends += 1;
                    let outs = self.end_outputs(&st);
                    if end_set.len() < opts.max_end_outputs {
                        end_set.insert(outs);
                    } else if !end_set.contains(&outs) {
                        res.end_outputs_complete = false;
                    }
                } else if let Some(p) = self.waiting_on(&st) {
                    res.waiting += 1;
                    if waits.len() < opts.traces {
                        waits.push((s, p));
                    }
                } else {
                    dead_count += 1;
                    if dead_set.len() < opts.max_end_outputs && !missing {
                        dead_set.insert(self.end_outputs(&st));
                    }
                    if dead.len() < opts.traces {
                        let mut why = stuck;
                        if why.is_empty() {
                            why.push(String::new());
                        }
                        dead.push((s, succs.is_empty(), why));
                    }
                }
            }
            for sc in succs {
                edges += 1;
                fired[sc.t] = true;
                let id = match index.get(&sc.state) {
                    Some(&id) => id,
                    None => {
                        let id = states.len() as u32;
                        let exact_path = parents[s as usize].3 && sc.exact;
                        parents.push((s, sc.t as u32, sc.exact, exact_path));
                        self.measure(
                            &sc.state,
                            &mut place_max,
                            &mut marking_max,
                            &mut first_unsafe,
                            id,
                        );
                        if monotone {
                            // Strict multiset cover of an ancestor: unbounded.
                            let sum = count_tokens(&sc.state.root);
                            let mut a = s;
                            loop {
                                let am = &states[a as usize];
                                if covers(&sc.state, am) && sum > count_tokens(&am.root) {
                                    let grow = (0..am.root.places.len())
                                        .filter(|&p| {
                                            sc.state.root.places[p].len() > am.root.places[p].len()
                                        })
                                        .collect();
                                    unbounded = Some((a, id, grow));
                                    break;
                                }
                                if parents[a as usize].0 == u32::MAX {
                                    break;
                                }
                                a = parents[a as usize].0;
                            }
                        }
                        kept_bytes += 2 * state_bytes(&sc.state) as u64 + 48;
                        index.insert(sc.state.clone(), id);
                        states.push(sc.state);
                        if unbounded.is_some() {
                            stop = Some("the net is unbounded (infinite state space)".into());
                            if let Some(v) = adj.last_mut() {
                                v.push((id, sc.t as u32));
                            }
                            break 'outer;
                        }
                        if let Some(limit) = opts.max_memory.filter(|&l| kept_bytes > l) {
                            stop = Some(crate::memory_stop(limit, states.len() as u64));
                            if let Some(v) = adj.last_mut() {
                                v.push((id, sc.t as u32));
                            }
                            break 'outer;
                        }
                        if states.len() as u64 >= opts.max_states {
                            stop = Some(format!("stopped at --max-states {}", opts.max_states));
                            if let Some(v) = adj.last_mut() {
                                v.push((id, sc.t as u32));
                            }
                            break 'outer;
                        }
                        id
                    }
                };
                if let Some(v) = adj.last_mut() {
                    v.push((id, sc.t as u32));
                }
            }
        }
        adj.resize(states.len(), Vec::new());
        let complete = stop.is_none() && cut == 0;
        res.end_outputs = end_set.into_iter().collect();
        res.deadlock_outputs = dead_set.into_iter().collect();

        r.states = states.len() as u64;
        r.edges = edges;
        r.complete = complete;
        r.incomplete_reason = stop.clone().or_else(|| {
            (cut > 0).then(|| format!("{cut} marking(s) above --max-tokens were not expanded"))
        });
        r.place_bounds = place_max.clone();
        r.max_tokens_in_place = place_max.iter().copied().max().unwrap_or(0);
        r.max_tokens_per_marking = marking_max;
        let exact = !self.produced_unknown && !self.cancelled && !self.cleanup_maybe;
        r.exact_state_space = exact;
        let reason = r.incomplete_reason.clone().unwrap_or_default();
        let incomplete = || Verdict::Unknown(reason.clone());
        r.bounded = if let Some((_, _, g)) = &unbounded {
            r.unbounded_places = g.clone();
            Verdict::No
        } else if complete {
            Verdict::Yes
        } else {
            incomplete()
        };
        r.one_safe = if first_unsafe.is_some() {
            Verdict::No
        } else if complete {
            Verdict::Yes
        } else {
            incomplete()
        };
        r.dead_markings = dead_count + ends;
        r.proper_ends = ends;
        r.deadlock = if dead_count > 0 {
            Verdict::Yes
        } else if complete {
            Verdict::No
        } else {
            incomplete()
        };
        if complete {
            r.dead_transitions = Some((0..m.n_real).filter(|&t| !fired[t]).collect());
            if opts.scc {
                let facts = crate::graph::analyse(states.len(), n_labels, &mut |v, out| {
                    out.extend_from_slice(&adj[v as usize])
                });
                r.terminates = Verdict::from_bool(facts.cycle_state.is_none());
                if exact {
                    r.live = Some(facts.live[..m.n_real].to_vec());
                }
                if let Some(c) = facts.cycle_state {
                    let cycle = crate::graph::path_between(c, c, &mut |v, out| {
                        out.extend_from_slice(&adj[v as usize])
                    })
                    .unwrap_or_default();
                    r.traces.push(Trace {
                        kind: "nontermination",
                        path: path_to(&parents, c),
                        cycle: cycle.into_iter().map(|t| t as usize).collect(),
                        marking: self.render(&states[c as usize]),
                        exact: parents[c as usize].3,
                        note: "a reachable cycle".into(),
                    });
                }
            } else {
                r.terminates = Verdict::Unknown("--no-scc".into());
            }
        } else if unbounded.is_some() {
            r.terminates = Verdict::No;
        } else {
            r.terminates = incomplete();
        }
        for (s, surely, stuck) in &dead {
            let note = if stuck.len() == 1 && stuck[0].is_empty() {
                let ports: Vec<&str> = m
                    .out_ports
                    .iter()
                    .filter(|(_, p)| states[*s as usize].root.places[*p].is_empty())
                    .map(|(n, _)| n.as_str())
                    .collect();
                format!(
                    "drts.wait_for_output: the job waits forever for a token on out port(s) {}",
                    ports.join(", ")
                )
            } else {
                format!("tokens stuck on {}", stuck.join(", "))
            };
            r.traces.push(Trace {
                kind: "deadlock",
                path: path_to(&parents, *s),
                cycle: Vec::new(),
                marking: self.render(&states[*s as usize]),
                exact: parents[*s as usize].3 && *surely,
                note,
            });
        }
        if let Some(s) = first_unsafe {
            r.traces.push(Trace {
                kind: "unsafe",
                path: path_to(&parents, s),
                cycle: Vec::new(),
                marking: self.render(&states[s as usize]),
                exact: parents[s as usize].3,
                note: String::new(),
            });
        }
        if let Some((a, c, g)) = &unbounded {
            let prefix = path_to(&parents, *a);
            let full = path_to(&parents, *c);
            let gnames: Vec<&str> = g.iter().map(|&p| r.places[p].as_str()).collect();
            r.traces.push(Trace {
                kind: "unbounded",
                cycle: full[prefix.len()..].to_vec(),
                path: prefix,
                marking: self.render(&states[*c as usize]),
                exact: parents[*c as usize].3,
                note: format!(
                    "each repetition of the loop adds tokens to {}",
                    gnames.join(", ")
                ),
            });
        }
        for (s, t, msg) in errors.iter().take(opts.traces.max(1)) {
            r.traces.push(Trace {
                kind: "error",
                path: path_to(&parents, *s),
                cycle: Vec::new(),
                marking: self.render(&states[*s as usize]),
                exact: parents[*s as usize].3,
                note: format!(
                    "firing `{}` ({}) fails: {msg}",
                    r.transitions[*t].name, r.transitions[*t].location
                ),
            });
        }
        for (s, p) in &waits {
            r.traces.push(Trace {
                kind: "waiting",
                path: path_to(&parents, *s),
                cycle: Vec::new(),
                marking: self.render(&states[*s as usize]),
                exact: parents[*s as usize].3,
                note: format!("waiting for an external token on {p}"),
            });
        }
        if !errors.is_empty() {
            r.notes.push(format!(
                "{} marking(s) where a firing fails (the job would fail there)",
                errors.len()
            ));
        }
        if res.waiting > 0 {
            r.notes.push(format!(
                "{} dead marking(s) wait for an external token (a client's put_token on a put_token place would continue the job): not counted as deadlocks or proper ends",
                res.waiting
            ));
        }
        let put_places: Vec<&str> = m
            .net(0)
            .places
            .iter()
            .filter(|p| p.put_token)
            .map(|p| p.name.as_str())
            .collect();
        if !put_places.is_empty() {
            r.notes.push(if m.external.is_empty() {
                format!(
                    "put_token place(s) {}: explored with no external token (give them with --external PLACE=V1,V2,...)",
                    put_places.join(", ")
                )
            } else {
                format!(
                    "{} external token(s) arrive in the given order at any moment while the job runs",
                    m.external.len()
                )
            });
        }
        if self.produced_unknown {
            r.notes.push(
                "module outputs without --assume are unknown tokens: \"none\"/\"yes\" verdicts (no deadlock, bounded, 1-safe, dead transitions, terminates) hold for every real run; violations whose trace is marked possibly spurious may not happen"
                    .into(),
            );
        }
        if self.unknown_many {
            r.notes.push("an unknown list went to a connect-out-many place as one unknown token: token counts on those places are not exact".into());
        }
        if self.cancelled {
            r.notes.push("module calls with an eureka-group may also be cancelled by a connect-eureka (consumed, no outputs): those are maybe edges".into());
        }
        if self.cleanup_maybe {
            r.notes.push("unknown tokens on places that may hold shared values: the clean-ups computed while they exist are maybe edges".into());
        }
        if self.child_end_maybe {
            r.notes.push("a child net whose only enabled bindings read unknown values may also end there (maybe edges)".into());
        }
        if !monotone {
            r.notes.push("priorities, number-of-tokens connections, child nets or shared values: no coverability check, an unbounded net runs into --max-states".into());
        }
        if complete && opts.scc && !exact {
            r.notes.push(
                "liveness is computed only for exact state spaces (no unknown tokens)".into(),
            );
        }
        Ok((r, res))
    }

    fn measure(
        &self,
        st: &State,
        place_max: &mut [u64],
        marking_max: &mut u64,
        first_unsafe: &mut Option<u32>,
        id: u32,
    ) {
        let mut sum = 0u64;
        let mut unsafe_ = false;
        for_each_node(&st.root, &mut |n| {
            let base = self.m.desc(n.desc).place_base;
            for (p, toks) in n.places.iter().enumerate() {
                let k = toks.len() as u64;
                sum += k;
                unsafe_ |= k > 1;
                if let Some(b) = place_max.get_mut(base + p) {
                    *b = (*b).max(k);
                }
            }
        });
        *marking_max = (*marking_max).max(sum);
        if unsafe_ && first_unsafe.is_none() {
            *first_unsafe = Some(id);
        }
    }

    /// Places holding tokens that some transition consumes from (report names).
    fn stuck(&self, st: &State) -> Vec<String> {
        let mut out = Vec::new();
        for_each_node(&st.root, &mut |n| {
            let d = self.m.desc(n.desc);
            for (p, toks) in n.places.iter().enumerate() {
                if !toks.is_empty() && d.consumed[p] && d.gen_slot[p].is_none() {
                    out.push(format!("{}{}", d.prefix, self.m.net(n.desc).places[p].name));
                }
            }
        });
        out
    }

    /// With `drts.wait_for_output`: some out port of the root has no token.
    fn output_missing(&self, st: &State) -> bool {
        self.m.wait_for_output
            && self
                .m
                .out_ports
                .iter()
                .any(|(_, p)| st.root.places[*p].is_empty())
    }

    fn end_outputs(&self, st: &State) -> EndOutputs {
        self.m
            .out_ports
            .iter()
            .map(|(n, p)| (n.clone(), st.root.places[*p].clone()))
            .collect()
    }

    /// A put_token place of the root whose token would enable a root transition (all its
    /// other input places hold tokens).
    fn waiting_on(&self, st: &State) -> Option<String> {
        let net = self.m.net(0);
        let d = self.m.desc(0);
        let is_put = |p: usize| net.places[p].put_token;
        for info in &d.trans {
            if info.dead {
                continue;
            }
            let on: Vec<usize> = info
                .takes
                .iter()
                .map(|tk| tk.1)
                .chain(info.counts.iter().map(|c| c.1))
                .filter(|&p| is_put(p))
                .collect();
            if on.is_empty() {
                continue;
            }
            let others_ready = info.takes.iter().all(|tk| {
                is_put(tk.1) || {
                    let (up, q) = d.loc[tk.1];
                    up != 0 || !st.root.places[q].is_empty()
                }
            });
            if others_ready {
                return Some(net.places[on[0]].name.clone());
            }
        }
        None
    }

    fn render(&self, st: &State) -> String {
        let mut parts = Vec::new();
        for_each_node(&st.root, &mut |n| {
            let d = self.m.desc(n.desc);
            let net = self.m.net(n.desc);
            for (p, toks) in n.places.iter().enumerate() {
                if toks.is_empty() {
                    continue;
                }
                let ts: Vec<String> = toks.iter().map(Tok::to_string).collect();
                parts.push(format!(
                    "{}{} = [{}]",
                    d.prefix,
                    net.places[p].name,
                    ts.join(", ")
                ));
            }
            if n.desc != 0 && n.places.iter().all(|p| p.is_empty()) {
                parts.push(format!("{}(running, empty)", d.prefix));
            }
        });
        if parts.is_empty() {
            "(empty)".into()
        } else {
            parts.join("; ")
        }
    }

    /// The tokens of place `p` of the instance at `path` (of desc `d`), and where they live.
    fn resolve(&self, path: &[usize], d: u32, p: usize) -> (Vec<usize>, usize) {
        resolve(self.m, path, d, p)
    }

    /// The `number-of-tokens` value of place `p` of the instance at `path`.
    fn count(&self, st: &State, path: &[usize], d: u32, p: usize) -> u64 {
        count_of(self.m, &st.root, path, d, p)
    }

    /// All successors of a state.
    fn successors(&mut self, st: &State) -> Result<Outcome, String> {
        let m = self.m;
        let mut out = Vec::new();
        let mut all = Vec::new();
        paths(&st.root, &mut Vec::new(), &mut all);
        let mut definite = false;
        for path in &all {
            let d = node(&st.root, path).desc;
            for g in 0..m.desc(d).groups.len() {
                let mut sure = false;
                for k in 0..m.desc(d).groups[g].len() {
                    let t = m.desc(d).groups[g][k];
                    let gid = m.desc(d).trans[t].gid;
                    let bs = match self.bindings(st, path, d, t) {
                        Ok(bs) => bs,
                        Err(msg) => return Ok(Outcome::Error(gid, msg)),
                    };
                    for b in bs {
                        sure |= b.exact;
                        if let Err(msg) = self.fire(st, path, d, t, &b, &mut out) {
                            return Ok(Outcome::Error(gid, msg));
                        }
                    }
                }
                if sure {
                    definite = true;
                    break;
                }
            }
        }
        let maybe_dead = !definite && !out.is_empty();
        // An external token may arrive while the job runs.
        let running = !out.is_empty() || self.output_missing(st);
        if let Some((p, v)) = m.external.get(st.ext as usize)
            && running
        {
            let mut next = st.clone();
            next.ext += 1;
            next.root.places[*p].push(Tok::Val(v.clone()));
            let label = m.n_real + st.ext as usize;
            let mut settled = Vec::new();
            if let Err(msg) = self.settle(next, true, Vec::new(), &mut settled) {
                return Ok(Outcome::Error(label, msg));
            }
            for (state, exact) in settled {
                out.push(Succ {
                    t: label,
                    state,
                    exact,
                });
            }
            return Ok(Outcome::Fired(out, false));
        }
        Ok(Outcome::Fired(out, maybe_dead))
    }

    /// Every enabled binding of transition `t` of the instance at `path` (distinct values).
    fn bindings(
        &mut self,
        st: &State,
        path: &[usize],
        d: u32,
        t: usize,
    ) -> Result<Vec<Binding>, String> {
        let m = self.m;
        let info = &m.desc(d).trans[t];
        if info.dead {
            return Ok(Vec::new());
        }
        let at: Vec<(Vec<usize>, usize)> = info
            .takes
            .iter()
            .map(|tk| self.resolve(path, d, tk.1))
            .collect();
        let lists: Vec<&Vec<Tok>> = at
            .iter()
            .map(|(o, q)| &node(&st.root, o).places[*q])
            .collect();
        if lists.iter().any(|l| l.is_empty()) {
            return Ok(Vec::new());
        }
        let f = m.bundle.function(info.function);
        let counts: Vec<(PortId, u64)> = info
            .counts
            .iter()
            .map(|&(port, p)| (port, self.count(st, path, d, p)))
            .collect();
        let lens: Vec<usize> = lists.iter().map(|l| l.len()).collect();
        let mut seen: BTreeSet<Vec<Tok>> = BTreeSet::new();
        let mut out = Vec::new();
        let (interp, frame) = (&mut self.interp, &mut self.frame);
        pnet_engine::for_each_combination(
            &lens,
            |a, b| at[a] == at[b],
            |idx| {
                let vals: Vec<Tok> = lists
                    .iter()
                    .zip(idx)
                    .map(|(l, &i)| l[i as usize].clone())
                    .collect();
                if !seen.insert(vals.clone()) {
                    return Ok(());
                }
                let has_unknown = vals.iter().any(|v| matches!(v, Tok::Unknown));
                let mut exact = true;
                if let Some(c) = info.condition {
                    let code = &m.bundle.codes[c];
                    fill_frame(
                        frame,
                        code.slots.len().max(f.ports.len()),
                        &counts,
                        &info.takes,
                        &vals,
                    );
                    match interp.run_bool(code, frame) {
                        Ok(true) => {}
                        Ok(false) => return Ok(()),
                        Err(e) if has_unknown && is_unbound(&e) => exact = false,
                        Err(e) => return Err(format!("condition: {e}")),
                    }
                }
                out.push(Binding {
                    at: at
                        .iter()
                        .zip(idx)
                        .map(|((o, q), &i)| (o.clone(), *q, i as usize))
                        .collect(),
                    vals,
                    exact,
                });
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// Whether some transition of the instance at `path` is enabled.
    fn enabled(&mut self, st: &State, path: &[usize]) -> Result<Enabled, String> {
        let d = node(&st.root, path).desc;
        let mut maybe = false;
        for t in 0..self.m.desc(d).trans.len() {
            for b in self.bindings(st, path, d, t)? {
                if b.exact {
                    return Ok(Enabled::Surely);
                }
                maybe = true;
            }
        }
        Ok(if maybe { Enabled::Maybe } else { Enabled::No })
    }

    /// The shared counts of a state's known tokens (the engine's table, rebuilt from the
    /// marking: a state keeps no counts of its own).
    fn shared_table(&self, root: &Node) -> SharedTable {
        let mut table = SharedTable::default();
        for_each_node(root, &mut |n| {
            let tracks = &self.m.desc(n.desc).tracks;
            for (p, toks) in n.places.iter().enumerate() {
                if !tracks[p] {
                    continue;
                }
                for t in toks {
                    if let Tok::Val(v) = t {
                        table.acquire(v);
                    }
                }
            }
        });
        table
    }

    /// Whether an unknown token sits on a place where it may hold a shared (then the counts,
    /// and so the clean-ups, are not exact).
    fn unknown_shared(&self, root: &Node) -> bool {
        let mut unknown = false;
        for_each_node(root, &mut |n| {
            let net = self.m.net(n.desc);
            for (p, toks) in n.places.iter().enumerate() {
                let place = &net.places[p];
                if !place.shared_sink
                    && may_hold_shared(&place.ty)
                    && toks.iter().any(|t| matches!(t, Tok::Unknown))
                {
                    unknown = true;
                }
            }
        });
        unknown
    }

    /// The engine's release of shareds and clean-up (`pnet_engine::release_shareds`) on a
    /// successor; whether it is exact (no unknown token may hold a shared, before or after).
    fn clean_up(
        &mut self,
        tree: &mut Tree,
        path: &[usize],
        release: &[Value],
        unknown_before: bool,
    ) -> Result<bool, String> {
        pnet_engine::release_shareds(
            tree,
            self.m.bundle,
            &path.to_vec(),
            release,
            &mut Vec::new(),
        )
        .map_err(|e| e.to_string())?;
        let exact = !unknown_before && !self.unknown_shared(tree.root);
        if !exact {
            self.cleanup_maybe = true;
        }
        Ok(exact)
    }

    /// Fires binding `b` of transition `t` of the instance at `path`; appends the (settled)
    /// successors. The consuming is the explorer's (sorted token lists); a generator's
    /// refill, a child's start, the outputs and the shareds' clean-up are the engine's rules
    /// (`pnet_engine::Marking`).
    fn fire(
        &mut self,
        st: &State,
        path: &[usize],
        d: u32,
        t: usize,
        b: &Binding,
        out: &mut Vec<Succ>,
    ) -> Result<(), String> {
        let m = self.m;
        let err = |e: RunError| e.to_string();
        let info = &m.desc(d).trans[t];
        let f = m.bundle.function(info.function);
        let nslots = f.ports.len();
        let has_unknown = b.vals.iter().any(|v| matches!(v, Tok::Unknown));
        // The shared counts before the firing.
        let (table, unknown_before) = if m.uses_shared {
            (self.shared_table(&st.root), self.unknown_shared(&st.root))
        } else {
            (SharedTable::default(), false)
        };
        // Consume (the engine's rules on the explorer's state): the counts, the binding's
        // tokens, the consumed shareds to release, generator refills.
        let path_v = path.to_vec();
        let mut base = st.clone();
        let binding: Vec<u32> = b.at.iter().map(|a| a.2 as u32).collect();
        let multi = info
            .takes
            .iter()
            .enumerate()
            .any(|(k, tk)| info.takes[..k].iter().any(|o| o.1 == tk.1));
        let mut tree = Tree::new(m, &mut base.root, table);
        let mut vals = Vec::new();
        let mut release = Vec::new();
        let n = pnet_engine::take_binding(
            &mut tree,
            &path_v,
            &info.counts,
            &info.takes,
            &binding,
            multi,
            &mut vals,
        )
        .map_err(err)?;
        pnet_engine::after_take(
            &mut tree,
            m.bundle,
            &path_v,
            &info.takes,
            &vals[n..],
            &mut release,
        )
        .map_err(err)?;
        let table = tree.finish(&mut self.unknown_many);
        let counts: Vec<(PortId, u64)> = vals[..n]
            .iter()
            .map(|(port, v)| match v {
                Tok::Val(Value::ULong(c)) => (*port, *c),
                _ => (*port, 0),
            })
            .collect();
        // Outputs: one list of (port, value) alternatives, each with its exactness.
        let mut alternatives: Vec<(Vec<(PortId, Tok)>, bool)> = Vec::new();
        match info.kind {
            Kind::Expr(c) => {
                let code = &m.bundle.codes[c];
                fill_frame(
                    &mut self.frame,
                    code.slots.len().max(nslots),
                    &counts,
                    &info.takes,
                    &b.vals,
                );
                let mut outs = Vec::new();
                match self.interp.run(code, &mut self.frame) {
                    Ok(_) => {
                        let frame = &self.frame;
                        pnet_engine::eureka_groups(
                            &m.net(d).transitions[t],
                            f,
                            |p| frame.get(p.index()).and_then(|v| v.as_ref()),
                            &mut Vec::new(),
                        )
                        .map_err(err)?;
                        for &(port, _, _) in &info.outs {
                            let v =
                                pnet_engine::out_value(&mut self.frame, port, f.port(port), false)
                                    .map_err(err)?;
                            outs.push((port, Tok::Val(v)));
                        }
                    }
                    Err(e) if has_unknown && is_unbound(&e) => {
                        self.produced_unknown = true;
                        outs.extend(info.outs.iter().map(|o| (o.0, Tok::Unknown)));
                    }
                    Err(e) => return Err(e.to_string()),
                }
                alternatives.push((outs, true));
            }
            Kind::Module { eureka } => {
                let mut combos: Vec<Vec<(PortId, Tok)>> = vec![Vec::new()];
                for (port, vals) in &info.assumed {
                    let choices: Vec<Tok> = match vals {
                        Some(vs) => vs.iter().cloned().map(Tok::Val).collect(),
                        None => {
                            self.produced_unknown = true;
                            vec![Tok::Unknown]
                        }
                    };
                    let mut next = Vec::new();
                    for c in &combos {
                        for ch in &choices {
                            let mut c2 = c.clone();
                            c2.push((*port, ch.clone()));
                            next.push(c2);
                        }
                    }
                    combos = next;
                }
                alternatives = combos.into_iter().map(|c| (c, true)).collect();
                if eureka {
                    self.cancelled = true;
                    alternatives.push((Vec::new(), false));
                }
            }
            Kind::Child(cd) => {
                // Start the child (the engine's rules: its own tokens, then the counts and
                // the input values on the places bound to the ports).
                let mut flight: Vec<u32> = info
                    .takes
                    .iter()
                    .filter(|tk| tk.2)
                    .map(|tk| tk.1 as u32)
                    .collect();
                flight.sort_unstable();
                let child = self.new_node(cd, flight);
                let parent = node_mut(&mut base.root, path);
                parent.children.push(child);
                let mut cpath = path.to_vec();
                cpath.push(parent.children.len() - 1);
                let mut tree = Tree::new(m, &mut base.root, table);
                pnet_engine::initial_tokens(&mut tree, m.bundle, &cpath).map_err(err)?;
                pnet_engine::child_inputs(&mut tree, f, &cpath, vals);
                let mut exact = b.exact;
                if m.uses_shared {
                    exact &= self.clean_up(&mut tree, path, &release, unknown_before)?;
                }
                tree.finish(&mut self.unknown_many);
                let mut settled = Vec::new();
                self.settle(base, exact, Vec::new(), &mut settled)?;
                for (state, exact) in settled {
                    out.push(Succ {
                        t: info.gid,
                        state,
                        exact,
                    });
                }
                return Ok(());
            }
        }
        for (alt, alt_exact) in alternatives {
            let mut next = base.clone();
            let mut tree = Tree::new(m, &mut next.root, table.clone());
            for &(port, place, many) in &info.outs {
                let Some((_, tok)) = alt.iter().find(|(p, _)| *p == port) else {
                    continue;
                };
                tree.output(&path_v, f.port(port), place, many, tok.clone())
                    .map_err(err)?;
            }
            let mut exact = b.exact && alt_exact;
            if m.uses_shared {
                exact &= self.clean_up(&mut tree, path, &release, unknown_before)?;
            }
            tree.finish(&mut self.unknown_many);
            let mut settled = Vec::new();
            self.settle(next, exact, Vec::new(), &mut settled)?;
            for (state, exact) in settled {
                out.push(Succ {
                    t: info.gid,
                    state,
                    exact,
                });
            }
        }
        Ok(())
    }

    /// Ends every child instance with nothing enabled and no running child (repeatedly),
    /// then canonicalizes. A child whose only enabled bindings are maybes both ends (a maybe
    /// edge) and keeps running. `keep`: instances decided to keep running.
    fn settle(
        &mut self,
        mut st: State,
        mut exact: bool,
        mut keep: Vec<Vec<usize>>,
        out: &mut Vec<(State, bool)>,
    ) -> Result<(), String> {
        'again: loop {
            let mut all = Vec::new();
            paths(&st.root, &mut Vec::new(), &mut all);
            for leaf in all.into_iter().rev() {
                if leaf.is_empty()
                    || !node(&st.root, &leaf).children.is_empty()
                    || keep.contains(&leaf)
                {
                    continue;
                }
                match self.enabled(&st, &leaf)? {
                    Enabled::Surely => {}
                    Enabled::No => {
                        self.finish(&mut st, &leaf)?;
                        shift(&mut keep, &leaf);
                        continue 'again;
                    }
                    Enabled::Maybe => {
                        self.child_end_maybe = true;
                        let mut ended = st.clone();
                        self.finish(&mut ended, &leaf)?;
                        let mut keep2 = keep.clone();
                        shift(&mut keep2, &leaf);
                        self.settle(ended, false, keep2, out)?;
                        keep.push(leaf);
                        exact = false;
                        continue 'again;
                    }
                }
            }
            break;
        }
        canonicalize(&mut st.root);
        out.push((st, exact));
        Ok(())
    }

    /// Ends the child instance at `leaf` (the engine's rules: its out ports' tokens go out
    /// through the parent transition's connections; the rest is dropped, releasing its
    /// shareds).
    fn finish(&mut self, st: &mut State, leaf: &[usize]) -> Result<(), String> {
        let m = self.m;
        let (table, unknown_before) = if m.uses_shared {
            (self.shared_table(&st.root), self.unknown_shared(&st.root))
        } else {
            (SharedTable::default(), false)
        };
        let (parent_path, k) = match leaf.split_last() {
            Some((&k, rest)) => (rest.to_vec(), k),
            None => return Ok(()),
        };
        let child = node_mut(&mut st.root, &parent_path).children.remove(k);
        let Some((_, pt)) = m.desc(child.desc).parent else {
            return Ok(());
        };
        let cdesc = m.desc(child.desc);
        let mut release = Vec::new();
        for (p, toks) in child.places.iter().enumerate() {
            if cdesc.tracks[p] {
                for t in toks {
                    if let Tok::Val(v) = t {
                        pnet_engine::collect_shareds(v, &mut release);
                    }
                }
            }
        }
        let gid = m.desc(node(&st.root, &parent_path).desc).trans[pt].gid;
        let outs = m.desc(node(&st.root, &parent_path).desc).trans[pt]
            .outs
            .iter()
            .map(|&(port, place, many)| (port, place, many, false));
        let mut tree = Tree::new(m, &mut st.root, table);
        pnet_engine::child_outputs(
            &mut tree,
            m.bundle,
            &parent_path,
            pt,
            outs,
            |cp| cdesc.loc[cp].0 != 0,
            |cp, _| child.places[cp].clone(),
        )
        .map_err(|e| format!("end of child net `{}`: {e}", self_name(m, gid)))?;
        if m.uses_shared {
            self.clean_up(&mut tree, &parent_path, &release, unknown_before)?;
        }
        tree.finish(&mut self.unknown_many);
        Ok(())
    }
}

/// The tokens of place `p` of the instance at `path` (of desc `d`): where they live.
fn resolve(m: &Model, path: &[usize], d: u32, p: usize) -> (Vec<usize>, usize) {
    let (up, q) = m.desc(d).loc[p];
    let keep = path.len().saturating_sub(up as usize);
    (path[..keep].to_vec(), q)
}

/// The `number-of-tokens` value of place `p` of the instance at `path` (of desc `d`): the
/// tokens where they live, and those the running children consumed from it.
fn count_of(m: &Model, root: &Node, path: &[usize], d: u32, p: usize) -> u64 {
    let (owner, q) = resolve(m, path, d, p);
    let n = node(root, &owner).places[q].len() as u64;
    let flying = node(root, path)
        .children
        .iter()
        .map(|c| c.flight.iter().filter(|&&f| f as usize == p).count() as u64)
        .sum::<u64>();
    n + flying
}

/// A state as the engine's firing rules see it ([`pnet_engine::Marking`]): instances by
/// path, tokens that may be unknown, the shared counts rebuilt from the marking.
struct Tree<'a, 'm, 'b> {
    m: &'m Model<'b>,
    root: &'a mut Node,
    table: SharedTable,
    /// An unknown list went to an out-many place as one unknown token.
    unknown_many: bool,
}

impl<'a, 'm, 'b> Tree<'a, 'm, 'b> {
    fn new(m: &'m Model<'b>, root: &'a mut Node, table: SharedTable) -> Self {
        Tree {
            m,
            root,
            table,
            unknown_many: false,
        }
    }

    /// Done: notes an unknown out-many list in `unknown_many`; gives the counts back.
    fn finish(self, unknown_many: &mut bool) -> SharedTable {
        *unknown_many |= self.unknown_many;
        self.table
    }
}

impl Marking for Tree<'_, '_, '_> {
    type Inst = Vec<usize>;
    type Tok = Tok;

    fn function(&self, i: &Vec<usize>) -> FunctionId {
        self.m.desc(node(self.root, i).desc).func
    }

    fn parent(&self, i: &Vec<usize>) -> Option<Vec<usize>> {
        i.split_last().map(|(_, rest)| rest.to_vec())
    }

    fn mapped(&self, i: &Vec<usize>, p: usize) -> bool {
        self.m.desc(node(self.root, i).desc).loc[p].0 != 0
    }

    fn count(&self, i: &Vec<usize>, p: usize) -> u64 {
        count_of(self.m, self.root, i, node(self.root, i).desc, p)
    }

    fn read(&self, i: &Vec<usize>, p: usize, j: u32) -> Option<Tok> {
        let (owner, q) = self.home(i, p);
        node(self.root, &owner).places[q].get(j as usize).cloned()
    }

    fn remove(&mut self, i: &Vec<usize>, p: usize, j: u32, _in_order: bool) -> Option<Tok> {
        // Sorted lists: a removal keeps the order either way.
        let (owner, q) = self.home(i, p);
        let toks = &mut node_mut(self.root, &owner).places[q];
        ((j as usize) < toks.len()).then(|| toks.remove(j as usize))
    }

    fn home(&self, i: &Vec<usize>, p: usize) -> (Vec<usize>, usize) {
        resolve(self.m, i, node(self.root, i).desc, p)
    }

    fn tracks(&self, i: &Vec<usize>, p: usize) -> bool {
        let (owner, q) = self.home(i, p);
        self.m.desc(node(self.root, &owner).desc).tracks[q]
    }

    fn changed(&mut self, _: &Vec<usize>, _: usize) {}

    fn known(tok: &Tok) -> Option<&Value> {
        match tok {
            Tok::Val(v) => Some(v),
            Tok::Unknown => None,
        }
    }

    fn put(&mut self, i: &Vec<usize>, p: usize, tok: Tok) {
        let (owner, q) = resolve(self.m, i, node(self.root, i).desc, p);
        let n = node_mut(self.root, &owner);
        if let Tok::Val(v) = &tok
            && self.m.desc(n.desc).tracks[q]
        {
            self.table.acquire(v);
        }
        n.places[q].push(tok);
    }

    fn output(
        &mut self,
        i: &Vec<usize>,
        port: &pnet_bundle::Port,
        p: usize,
        many: bool,
        tok: Tok,
    ) -> Result<(), RunError> {
        match tok {
            Tok::Val(v) => {
                let m = self.m;
                let pty = &m.net(node(self.root, i).desc).places[p].ty;
                pnet_engine::output_tokens(port, pty, many, v, |x| self.put(i, p, Tok::Val(x)))
            }
            Tok::Unknown => {
                self.unknown_many |= many;
                self.put(i, p, Tok::Unknown);
                Ok(())
            }
        }
    }

    fn generator_index(&mut self, i: &Vec<usize>, p: usize) -> &mut u128 {
        let (owner, q) = resolve(self.m, i, node(self.root, i).desc, p);
        let n = node_mut(self.root, &owner);
        let slot = self.m.desc(n.desc).gen_slot[q].expect("a generator place");
        &mut n.gens[slot]
    }

    fn shareds(&mut self) -> &mut SharedTable {
        &mut self.table
    }

    fn token(v: Value) -> Tok {
        Tok::Val(v)
    }
}

fn self_name(m: &Model, gid: usize) -> String {
    for d in &m.descs {
        for (ti, t) in d.trans.iter().enumerate() {
            if t.gid == gid {
                return format!("{}{}", d.prefix, m.net_of(d).transitions[ti].name);
            }
        }
    }
    String::from("?")
}

impl Model<'_> {
    fn net_of(&self, d: &Desc) -> &Net {
        match &self.bundle.function(d.func).body {
            Body::Net(n) => n,
            _ => unreachable!("desc of a net function"),
        }
    }
}

/// After removing the child at `leaf`, the later siblings move down one index.
fn shift(keep: &mut [Vec<usize>], leaf: &[usize]) {
    let n = leaf.len();
    for k in keep.iter_mut() {
        if k.len() >= n && k[..n - 1] == leaf[..n - 1] && k[n - 1] > leaf[n - 1] {
            k[n - 1] -= 1;
        }
    }
}

fn count_tokens(n: &Node) -> u64 {
    let mut s = 0u64;
    for_each_node(n, &mut |x| {
        s += x.places.iter().map(|p| p.len() as u64).sum::<u64>()
    });
    s
}

/// `big` covers `small`: same external position and generators, every place a multiset
/// superset (single-instance states).
fn covers(big: &State, small: &State) -> bool {
    big.ext == small.ext
        && big.root.gens == small.root.gens
        && big.root.children.is_empty()
        && small.root.children.is_empty()
        && big
            .root
            .places
            .iter()
            .zip(&small.root.places)
            .all(|(b, s)| {
                // Multiset inclusion of sorted vectors.
                let mut i = 0;
                for x in s {
                    while i < b.len() && b[i] < *x {
                        i += 1;
                    }
                    if i == b.len() || b[i] != *x {
                        return false;
                    }
                    i += 1;
                }
                true
            })
}

fn path_to(parents: &Parents, mut s: u32) -> Vec<usize> {
    let mut p = Vec::new();
    while parents[s as usize].0 != u32::MAX {
        p.push(parents[s as usize].1 as usize);
        s = parents[s as usize].0;
    }
    p.reverse();
    p
}

fn is_unbound(e: &RunError) -> bool {
    matches!(e.0.kind, RunErrorKind::Unbound(_))
}

/// The input frame of a binding: unknown tokens leave their slots unbound.
fn fill_frame(
    frame: &mut Vec<Option<Value>>,
    n: usize,
    counts: &[(PortId, u64)],
    takes: &[(PortId, usize, bool)],
    vals: &[Tok],
) {
    let known = takes.iter().zip(vals).map(|(tk, v)| {
        (
            tk.0,
            match v {
                Tok::Val(v) => Some(v),
                Tok::Unknown => None,
            },
        )
    });
    pnet_engine::input_frame(frame, n, counts, known);
}
