//! A `<transition>`: its function (inline, included or used), connections, conditions,
//! inlining into the parent net.

use super::*;

/// The places of its net a transition sees: those it names (connections, place maps; in
/// the order of [`named_places`]), and every place's name when it names one that does not
/// exist (for the suggestions). The key of [`transition_query`] with the transition's text
/// (which holds the names: they are not copied here): renaming a place the transition does
/// not name leaves it alone.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlaceView {
    /// The place of each name of [`named_places`], `None` for an unknown one.
    known: Vec<Option<KnownPlace>>,
    /// Every declared place (its name and span) when one of the names is unknown.
    all: Option<Vec<(String, SourceSpan)>>,
}

/// A place a transition names: its type, whether it is a generator place and the span of
/// its name. Not its index among the declared places: a place added or removed before it
/// would change the views of every transition naming a later place. The transition's
/// result names its places by their position in [`named_places`] ([`PlaceView::get`]),
/// made indexes of the net's places when it is added to the net ([`Elab::absorb`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct KnownPlace {
    pub(super) ty: Type,
    pub(super) generator: bool,
    pub(super) span: Span,
}

/// The place names of transition `t` (its connections' to places, its place maps' real
/// places), each once, in order (without allocating: views are made for every transition
/// of the root net when its places change).
fn named_places(t: &TransitionDecl) -> impl Iterator<Item = &str> {
    let connections = t.connections.iter().filter_map(|c| {
        c.place
            .as_ref()
            .filter(|_| !matches!(c.kind, ConnectKindDecl::Response | ConnectKindDecl::Eureka))
            .map(|p| p.text.as_str())
    });
    let maps = t.place_maps.iter().map(|pm| pm.real.text.as_str());
    let all = connections.chain(maps);
    all.clone()
        .enumerate()
        .filter(move |&(i, name)| !all.clone().take(i).any(|n| n == name))
        .map(|(_, name)| name)
}

impl PlaceView {
    /// The view of transition `t` on the declared `places` (`by_name` and `place_spans`
    /// index them).
    pub(super) fn new(
        t: &TransitionDecl,
        places: &[Place],
        by_name: &PlaceNames,
        place_spans: &[Span],
    ) -> PlaceView {
        let known: Vec<Option<KnownPlace>> = named_places(t)
            .map(|name| {
                by_name.get(name).map(|&i| KnownPlace {
                    ty: places[i].ty.clone(),
                    generator: places[i].generator,
                    span: place_spans[i],
                })
            })
            .collect();
        let unknown = known.iter().any(Option::is_none);
        let all = unknown.then(|| places.iter().map(|p| (p.name.clone(), p.span)).collect());
        PlaceView { known, all }
    }

    /// The place `name` of transition `t` (the one this view was made for), and its id in
    /// the transition's result: its position in [`named_places`] (see [`KnownPlace`]).
    pub(super) fn get(&self, t: &TransitionDecl, name: &str) -> Option<(PlaceId, &KnownPlace)> {
        let i = named_places(t).position(|n| n == name)?;
        Some((PlaceId::from(i), self.known.get(i)?.as_ref()?))
    }

    /// Every place's name (empty unless the transition names an unknown place).
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.all().iter().map(|(n, _)| n.as_str())
    }

    pub(super) fn all(&self) -> &[(String, SourceSpan)] {
        self.all.as_deref().unwrap_or_default()
    }

    /// The place of each name of [`named_places`] (`None` for an unknown one).
    pub(super) fn known(&self) -> &[Option<KnownPlace>] {
        &self.known
    }
}

/// The elaboration of one transition of the root net, parsed alone ([`db::parse_item`]), in
/// the scope of its net ([`db::net_env`], the places it names in `places`): what an edit
/// elsewhere leaves equal is not elaborated again. `depth_reported`: whether
/// `struct_too_deep` was reported before it. `None` when the file is not cut into items.
#[salsa::tracked(returns(ref))]
pub fn transition_query(
    db: &dyn salsa::Database,
    ws: Workspace,
    item: db::ItemInput,
    places: PlaceView,
    depth_reported: bool,
) -> Option<TransitionOut> {
    let root = *ws.files(db).first()?;
    let env = db::net_env(db, root).as_ref()?;
    let Some(DefunBody::Net(n)) = &env.body else {
        return None;
    };
    let t = db::parse_item(db, item).as_ref()?.tree.as_deref()?;
    let mut e = Elab::detached(db, ws, &[db::item_file(item)?])?;
    e.struct_depth_reported = depth_reported;
    // the scope as the whole elaboration builds it (its diagnostics are reported there)
    let root_ctx = e.root_ctx();
    let (ctx, _) = e.defun_scope(&root_ctx, env);
    let ctx = e.net_scope(&ctx, n);
    Some(e.item().transition_out(&ctx, t, &places))
}

/// A run of consecutive transitions of the root net (their items), elaborated by one query
/// ([`chunk_query`]): an edit revalidates a few hundred chunks, not thousands of transitions.
/// `depth_reported`: whether `struct_too_deep` was reported before its first transition.
#[salsa::interned(debug)]
pub struct Chunk<'db> {
    #[returns(ref)]
    pub items: Vec<db::ItemInput>,
    pub depth_reported: bool,
}

/// The chunks of the root net's transitions (their items' ids, in order): their groups
/// ([`db::groups`]).
pub(super) fn chunks(keys: &[salsa::Id]) -> Vec<Vec<db::ItemInput>> {
    use salsa::plumbing::FromId;
    db::groups(keys.iter().map(|&k| db::ItemInput::from_id(k)))
}

/// The [`PlaceView`] of each transition of a chunk, on the root net's places
/// ([`super::net::place_bucket`]): equal after an edit that leaves the places they name alone,
/// so that the chunk is not elaborated again.
#[salsa::tracked(returns(ref))]
pub fn chunk_views<'db>(
    db: &'db dyn salsa::Database,
    ws: Workspace,
    chunk: Chunk<'db>,
) -> Option<Vec<PlaceView>> {
    let mut places = super::net::KnownPlaces::new(db, ws);
    chunk_trees(db, chunk)?
        .map(|t| {
            let known = named_places(t?)
                .map(|name| places.get(name))
                .collect::<Option<Vec<_>>>()?;
            // every place's name only when one is unknown (then from all the places)
            let all = match known.iter().any(Option::is_none) {
                true => Some(super::net::place_list(db, ws).as_ref()?.clone()),
                false => None,
            };
            Some(PlaceView { known, all })
        })
        .collect()
}

/// Each transition's result from its chunk ([`chunk_query`]) and the range of the second
/// list that holds the indexes of the places it names (see [`place_ids`]; made by
/// `Elab::chunked` from the chunks' views, [`chunk_views`]).
pub(super) type Chunked<'a> = (
    Vec<(&'a (bool, TransitionOut), std::ops::Range<usize>)>,
    Vec<Option<usize>>,
);

/// The trees of a chunk's transitions (by their group, [`db::parse_group`]).
fn chunk_trees<'db>(
    db: &'db dyn salsa::Database,
    chunk: Chunk<'db>,
) -> Option<impl Iterator<Item = Option<&'db TransitionDecl>>> {
    let group = db::ItemGroup::new(db, chunk.items(db).clone());
    let trees = db::parse_group(db, group).as_ref()?;
    Some(trees.iter().map(|t| t.tree.as_deref()))
}

/// The elaboration of the transitions of a chunk, each as [`transition_query`] does it
/// (one scope for all of them), with whether `struct_too_deep` had been reported before it.
#[salsa::tracked(returns(ref))]
pub fn chunk_query<'db>(
    db: &'db dyn salsa::Database,
    ws: Workspace,
    chunk: Chunk<'db>,
) -> Option<Vec<(bool, TransitionOut)>> {
    let views = chunk_views(db, ws, chunk).as_ref()?;
    let root = *ws.files(db).first()?;
    let env = db::net_env(db, root).as_ref()?;
    let Some(DefunBody::Net(n)) = &env.body else {
        return None;
    };
    let items = chunk.items(db);
    let files = items
        .iter()
        .map(|&i| db::item_file(i))
        .collect::<Option<Vec<FileId>>>()?;
    let mut e = Elab::detached(db, ws, &files)?;
    e.struct_depth_reported = *chunk.depth_reported(db);
    let root_ctx = e.root_ctx();
    let (ctx, _) = e.defun_scope(&root_ctx, env);
    let ctx = e.net_scope(&ctx, n);
    let mut depth_reported = *chunk.depth_reported(db);
    let mut outs = Vec::with_capacity(items.len());
    for (t, view) in chunk_trees(db, chunk)?.zip(views) {
        let t = t?;
        let mut one = e.item();
        one.struct_depth_reported = depth_reported;
        let out = one.transition_out(&ctx, t, view);
        outs.push((depth_reported, out));
        depth_reported |= outs.last().is_some_and(|(_, o)| o.struct_depth_reported);
    }
    Some(outs)
}

/// What elaborating one transition gives. It depends on the transition's syntax and its
/// net's scope only (the declared places, the struct and function scopes), not on the
/// transitions before it: its functions and codes have ids local to it, and what it adds to
/// the net is assembled into the parent at the end ([`Elab::absorb`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TransitionOut {
    functions: Vec<Function>,
    codes: Vec<Code>,
    structs: Vec<StructType>,
    diags: Vec<(Diagnostic, Option<bool>)>,
    facts: Facts,
    misnamed: Vec<SourceSpan>,
    externals: Vec<External>,
    pub(super) struct_depth_reported: bool,
    effect: Effect,
}

/// What a transition adds to its net.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Effect {
    /// Nothing (an error was reported).
    Nothing,
    /// A transition (its function and condition ids local to the [`TransitionOut`]).
    Transition(Transition),
    /// An inlined child net: its places (each mapped to a place of the parent or new, named
    /// with `prefix`) and transitions.
    Inline {
        prefix: String,
        child: Net,
        map: Vec<Option<PlaceId>>,
    },
}

/// The index among the declared places of `by_name` of each place transition `t` names (in
/// the order of [`named_places`]; `None` for an unknown one): what the ids of the places in
/// its result ([`PlaceView::get`]) stand for.
fn place_ids(t: &TransitionDecl, by_name: &PlaceNames) -> Vec<Option<usize>> {
    named_places(t).map(|n| by_name.get(n).copied()).collect()
}

/// What the checks after a net ([`Elab::defun`]) read of transition `t` when only the
/// diagnostics are wanted ([`Elab::lite`]), but for the places of its connections and place
/// map (kept apart: [`Elab::lite_places`]): whether it has responses or eureka ports, its
/// span, and its name when it is connected to no place (the warning names it); not its
/// connections, requirements and properties. Copying every transition of the root net after
/// each edit is a part of the edit's floor.
fn lite_transition(t: &Transition) -> Transition {
    let unconnected = t.connections.is_empty() && t.place_map.is_empty();
    Transition {
        name: if unconnected {
            t.name.clone()
        } else {
            String::new()
        },
        priority: t.priority,
        function: t.function,
        connections: Vec::new(),
        responses: t.responses.clone(),
        eureka_ports: t.eureka_ports.clone(),
        condition: t.condition,
        place_map: Vec::new(),
        requires: Vec::new(),
        properties: Vec::new(),
        produce_shared: t.produce_shared,
        consume_shared: t.consume_shared,
        passthrough_shared: t.passthrough_shared,
        span: t.span,
    }
}

/// The place of the net that place `p` of a transition's result stands for (see
/// [`place_ids`]).
fn global(p: PlaceId, ids: &[Option<usize>]) -> PlaceId {
    ids.get(p.index())
        .copied()
        .flatten()
        .map_or(p, PlaceId::from)
}

/// The places of a transition's connections and place map made the net's (see
/// [`place_ids`]).
fn globalize(t: &mut Transition, ids: &[Option<usize>]) {
    for c in &mut t.connections {
        c.place = global(c.place, ids);
    }
    for pm in &mut t.place_map {
        pm.1 = global(pm.1, ids);
    }
}

impl<'a> Elab<'a> {
    /// Elaborates transition `t` (the `index`-th of net `n`) of a net with the places
    /// `places` (declared, in order; `by_name` and `place_spans` index them) and adds it to
    /// `net`. A transition of the root net, parsed alone, is elaborated by its own query
    /// ([`transition_query`]): an edit elsewhere reuses its result.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn transition(
        &mut self,
        ctx: &Ctx<'a>,
        n: &'a NetDecl,
        index: usize,
        t: &'a TransitionDecl,
        net: &mut Net,
        by_name: &PlaceNames,
        place_spans: &[Span],
    ) {
        let declared = &net.places[..place_spans.len()];
        let view = PlaceView::new(t, declared, by_name, place_spans);
        if let Some(ri) = &self.root_items
            && std::ptr::eq(n, ri.net)
            && index < ri.keys.len()
        {
            use salsa::plumbing::FromId;
            let item = db::ItemInput::from_id(ri.keys[index]);
            let depth_reported = self.struct_depth_reported;
            if let Some(out) = transition_query(ri.db, ri.ws, item, view.clone(), depth_reported) {
                let ids = place_ids(t, by_name);
                match self.lite {
                    true => self.absorb_lite(out, net, &ids),
                    false => self.absorb(out.clone(), net, &ids),
                }
                return;
            }
        }
        let out = self.item().transition_out(ctx, t, &view);
        self.absorb(out, net, &place_ids(t, by_name));
    }

    /// A fresh elaboration for one item, sharing this one's files and options.
    fn item(&self) -> Elab<'a> {
        Elab {
            parsed: self.parsed.clone(),
            resolver: self.resolver.clone(),
            root_file: self.root_file,
            links: self.links.clone(),
            no_inline: self.no_inline,
            synthesize: self.synthesize,
            build_modules: self.build_modules,
            functions: Vec::new(),
            codes: Vec::new(),
            structs: Vec::new(),
            diags: Vec::new(),
            externals: Vec::new(),
            facts: Facts::default(),
            net_places: Vec::new(),
            struct_depth: self.struct_depth,
            struct_depth_reported: self.struct_depth_reported,
            misnamed: Vec::new(),
            lite_places: Vec::new(),
            lite_runs: Vec::new(),
            root_items: None,
            lite: self.lite,
            keep_facts: self.keep_facts,
        }
    }

    /// What [`Elab::absorb`] adds that the diagnostics depend on (see [`Elab::lite`]): the
    /// diagnostics, the module functions met, the misnamed spans, and the transition (what
    /// the checks after the net read of it: [`lite_transition`]) or inlined net (function
    /// and code ids are left as they are: no function is added); the facts too when they are
    /// kept ([`Elab::keep_facts`]).
    pub(super) fn absorb_lite(
        &mut self,
        out: &TransitionOut,
        net: &mut Net,
        ids: &[Option<usize>],
    ) {
        self.diags.extend(out.diags.iter().cloned());
        if self.keep_facts {
            let f = &out.facts;
            self.facts.symbols.extend(f.symbols.iter().cloned());
            self.facts.references.extend(f.references.iter().cloned());
            self.facts.scopes.extend(f.scopes.iter().cloned());
        }
        self.misnamed.extend(out.misnamed.iter().copied());
        self.externals.extend(out.externals.iter().cloned());
        self.struct_depth_reported |= out.struct_depth_reported;
        match &out.effect {
            Effect::Nothing => {}
            Effect::Transition(t) => {
                let start = self.lite_places.len();
                let places = t.connections.iter().map(|c| c.place);
                let places = places.chain(t.place_map.iter().map(|pm| pm.1));
                self.lite_places.extend(places.map(|p| global(p, ids)));
                let run = start..self.lite_places.len();
                self.lite_runs.push((net.transitions.len(), run));
                net.transitions.push(lite_transition(t));
            }
            Effect::Inline { prefix, child, map } => {
                let effect = Effect::Inline {
                    prefix: prefix.clone(),
                    child: child.clone(),
                    map: map.clone(),
                };
                let out = TransitionOut {
                    functions: Vec::new(),
                    codes: Vec::new(),
                    structs: Vec::new(),
                    diags: Vec::new(),
                    facts: Facts::default(),
                    misnamed: Vec::new(),
                    externals: Vec::new(),
                    struct_depth_reported: false,
                    effect,
                };
                self.absorb(out, net, ids);
            }
        }
    }

    /// The pure elaboration of one transition (see [`TransitionOut`]).
    pub(super) fn transition_out(
        mut self,
        ctx: &Ctx<'a>,
        t: &'a TransitionDecl,
        places: &PlaceView,
    ) -> TransitionOut {
        let effect = self
            .transition_effect(ctx, t, places)
            .unwrap_or(Effect::Nothing);
        TransitionOut {
            functions: self.functions,
            codes: self.codes,
            structs: self.structs,
            diags: self.diags,
            facts: self.facts,
            misnamed: self.misnamed,
            externals: self.externals,
            struct_depth_reported: self.struct_depth_reported,
            effect,
        }
    }

    /// Adds a transition's result to this elaboration and to `net`: its functions and codes
    /// after this one's (their ids shifted), its diagnostics and facts; `ids`: the index in
    /// `net` of each place the transition names ([`place_ids`]).
    pub(super) fn absorb(&mut self, out: TransitionOut, net: &mut Net, ids: &[Option<usize>]) {
        let fbase = self.functions.len();
        let cbase = self.codes.len();
        let fid = |f: FunctionId| FunctionId::from(f.index() + fbase);
        let cid = |c: CodeId| CodeId::from(c.index() + cbase);
        let shift = |t: &mut Transition| {
            t.function = fid(t.function);
            t.condition = t.condition.map(cid);
        };
        for mut f in out.functions {
            match &mut f.body {
                Body::Expression(c) => *c = cid(*c),
                Body::Module(m) => m.eureka_group = m.eureka_group.map(cid),
                Body::Modules { modules, .. } => {
                    for m in modules {
                        m.eureka_group = m.eureka_group.map(cid);
                    }
                }
                Body::Net(n) => n.transitions.iter_mut().for_each(shift),
            }
            for b in &mut f.memory_buffers {
                b.size = cid(b.size);
                b.alignment = b.alignment.map(cid);
            }
            for m in &mut f.memory_transfers {
                m.global = cid(m.global);
                m.local = cid(m.local);
            }
            self.functions.push(f);
        }
        self.codes.extend(out.codes);
        for st in out.structs {
            if !self.structs.contains(&st) {
                self.structs.push(st);
            }
        }
        self.diags.extend(out.diags);
        let Facts {
            symbols,
            references,
            scopes,
        } = out.facts;
        self.facts.symbols.extend(symbols);
        self.facts.references.extend(references);
        self.facts.scopes.extend(scopes);
        self.misnamed.extend(out.misnamed);
        self.externals.extend(out.externals);
        self.struct_depth_reported |= out.struct_depth_reported;
        match out.effect {
            Effect::Nothing => {}
            Effect::Transition(mut t) => {
                shift(&mut t);
                globalize(&mut t, ids);
                net.transitions.push(t);
            }
            Effect::Inline {
                prefix,
                child,
                mut map,
            } => {
                for m in map.iter_mut().flatten() {
                    *m = global(*m, ids);
                }
                for (i, mut p) in child.places.into_iter().enumerate() {
                    match map[i] {
                        Some(target) => {
                            let tokens = std::mem::take(&mut p.tokens);
                            net.places[target.index()].tokens.extend(tokens);
                        }
                        None => {
                            p.name = format!("{prefix}{}", p.name);
                            p.is_virtual = false;
                            net.places.push(p);
                            map[i] = Some(PlaceId::from(net.places.len() - 1));
                        }
                    }
                }
                let remap = |p: PlaceId| map.get(p.index()).copied().flatten().unwrap_or(p);
                for mut ct in child.transitions {
                    ct.name = format!("{prefix}{}", ct.name);
                    shift(&mut ct);
                    for c in &mut ct.connections {
                        c.place = remap(c.place);
                    }
                    for pm in &mut ct.place_map {
                        pm.1 = remap(pm.1);
                    }
                    net.transitions.push(ct);
                }
            }
        }
    }

    /// The body of [`Elab::transition_out`]: `None` when nothing is added to the net.
    fn transition_effect(
        &mut self,
        ctx: &Ctx<'a>,
        t: &'a TransitionDecl,
        places: &PlaceView,
    ) -> Option<Effect> {
        if ctx.depth > MAX_DEPTH {
            self.error(
                Diagnostic::error(
                    "recursion_limit",
                    format!("transition `{}` nests functions too deeply", t.name.text),
                )
                .with_primary(t.name.span, "is a function using itself?"),
            );
            return None;
        }
        if t.passthrough_shared && (t.produce_shared || t.consume_shared) {
            let other = if t.produce_shared {
                "produce_shared"
            } else {
                "consume_shared"
            };
            self.error(
                Diagnostic::error(
                    "passthrough_shared_with_produce_or_consume",
                    format!(
                        "transition `{}` is `passthrough_shared` and `{other}`",
                        t.name.text
                    ),
                )
                .with_primary(t.tag, "this transition")
                .with_note(format!(
                    "help: `passthrough_shared` excludes `produce_shared` and `consume_shared`: remove `{other}` or `passthrough_shared`"
                )),
            );
        }
        let label = t.name.text.clone();
        let ef = match &t.body {
            Some(TransitionBody::Defun(d)) => self.defun(ctx, d, &label),
            Some(TransitionBody::Include(h)) => match self.include(ctx, h) {
                Some((file, Root::Defun(d))) => self.defun(&ctx.with_include(file), d, &label),
                Some((file, Root::Template(tm))) if tm.defun.is_some() => {
                    self.warn(
                        ctx,
                        Diagnostic::warning(
                            "unexpected-element",
                            format!("`{}` holds a template, not a defun", h.path.text),
                        )
                        .with_primary(h.path.span, "its defun is used"),
                    );
                    match tm.defun.as_deref() {
                        Some(d) => self.defun(&ctx.with_include(file), d, &label),
                        None => return None,
                    }
                }
                Some(_) => {
                    self.error(
                        Diagnostic::error(
                            "unexpected_root",
                            format!("`{}` is not a defun file", h.path.text),
                        )
                        .with_primary(h.path.span, "expected a file whose root is `defun`"),
                    );
                    return None;
                }
                None => return None,
            },
            Some(TransitionBody::Use(name)) => match self.used(ctx, name) {
                Some((d, c)) => {
                    let mut ef = self.defun(&c, d, &label);
                    ef.function.name.get_or_insert_with(|| name.text.clone());
                    ef
                }
                None => return None,
            },
            None => return None,
        };
        let priority = match &t.priority {
            None => None,
            Some(p) => match p.text.trim().parse::<u16>() {
                Ok(v) => Some(v),
                Err(_) => {
                    self.error(
                        Diagnostic::error(
                            "invalid_priority",
                            format!("invalid priority `{}`", p.text),
                        )
                        .with_primary(p.span, "a priority is an integer from 0 to 65535"),
                    );
                    None
                }
            },
        };
        let f = &ef.function;
        let tspan = t.name.span;

        // connections
        let mut connections: Vec<Connection> = Vec::new();
        let mut seen: Vec<(PortId, PlaceId, bool, Span)> = Vec::new();
        let mut in_connected = vec![false; f.ports.len()];
        let mut out_connected = vec![false; f.ports.len()];
        let mut responses = Vec::new();
        let mut eureka_ports: Vec<PortId> = Vec::new();
        let mut eureka_spans: Vec<Span> = Vec::new();
        for c in &t.connections {
            let port_name = &c.port;
            let port = f.port_by_name(&port_name.text);
            let (want_in, want_out) = match c.kind {
                ConnectKindDecl::In | ConnectKindDecl::Read | ConnectKindDecl::NumberOfTokens => {
                    (true, false)
                }
                ConnectKindDecl::Out
                | ConnectKindDecl::OutMany
                | ConnectKindDecl::Response
                | ConnectKindDecl::Eureka => (false, true),
                ConnectKindDecl::InOut => (true, true),
            };
            let kind_name = match c.kind {
                ConnectKindDecl::In => "connect-in",
                ConnectKindDecl::Out => "connect-out",
                ConnectKindDecl::InOut => "connect-inout",
                ConnectKindDecl::Read => "connect-read",
                ConnectKindDecl::OutMany => "connect-out-many",
                ConnectKindDecl::NumberOfTokens => "connect-number-of-tokens",
                ConnectKindDecl::Response => "connect-response",
                ConnectKindDecl::Eureka => "connect-eureka",
            };
            let Some(pid) = port.filter(|&p| {
                let d = f.port(p).dir;
                (!want_in || d.is_input()) && (!want_out || d.is_output())
            }) else {
                let what = match (want_in, want_out) {
                    (true, true) => "an in and out",
                    (true, false) => "an input",
                    _ => "an output",
                };
                let msg = match port {
                    Some(_) => format!(
                        "port `{}` of transition `{}` is not {what} port, as `{kind_name}` needs",
                        port_name.text, t.name.text
                    ),
                    None => format!(
                        "transition `{}` has no port `{}`",
                        t.name.text, port_name.text
                    ),
                };
                let help = match port {
                    Some(_) => None,
                    None => did_you_mean(
                        &port_name.text,
                        f.ports
                            .iter()
                            .filter(|p| {
                                (!want_in || p.dir.is_input()) && (!want_out || p.dir.is_output())
                            })
                            .map(|p| p.name.as_str()),
                    ),
                };
                self.error(
                    Diagnostic::error("unknown_port", msg)
                        .with_primary(port_name.span, format!("`{kind_name}` needs {what} port"))
                        .with_notes(help),
                );
                self.misnamed.push(sspan(t.span));
                continue;
            };
            let port = f.port(pid);
            if let Some(&target) = ef.port_names.get(pid.index()) {
                self.facts.references.push(Reference {
                    kind: SymbolKind::Port,
                    name: port.name.clone(),
                    span: port_name.span,
                    target,
                    ty: Some(port.ty.clone()),
                });
            }
            match c.kind {
                ConnectKindDecl::Response => {
                    out_connected[pid.index()] = true;
                    let Some(to) = &c.place else { continue };
                    match f
                        .port_by_name(&to.text)
                        .filter(|&p| f.port(p).dir.is_input())
                    {
                        Some(to_id) => responses.push(Response {
                            port: pid,
                            to: to_id,
                            span: sspan(c.span),
                        }),
                        None => self.error(
                            Diagnostic::error(
                                "unknown_port",
                                format!(
                                    "transition `{}` has no input port `{}`",
                                    t.name.text, to.text
                                ),
                            )
                            .with_primary(to.span, "`to` must name an input port")
                            .with_notes(did_you_mean(
                                &to.text,
                                f.ports
                                    .iter()
                                    .filter(|p| p.dir.is_input())
                                    .map(|p| p.name.as_str()),
                            )),
                        ),
                    }
                    continue;
                }
                ConnectKindDecl::Eureka => {
                    out_connected[pid.index()] = true;
                    if let Some(i) = eureka_ports.iter().position(|&p| p == pid) {
                        let fs = eureka_spans[i];
                        self.error(
                            Diagnostic::error(
                                "duplicate_connection",
                                format!("port `{}` is connected to eureka twice", port.name),
                            )
                            .with_primary(c.span, "connected again here")
                            .with_secondary(fs, "first connected here"),
                        );
                        continue;
                    }
                    if !matches!(port.ty, Type::Set(_) | Type::Any) {
                        self.error(
                            Diagnostic::error(
                                "invalid_eureka_port",
                                format!("eureka port `{}` has type `{}`", port.name, port.ty),
                            )
                            .with_primary(
                                port_name.span,
                                "a `connect-eureka` port must be a `set`",
                            ),
                        );
                    }
                    eureka_ports.push(pid);
                    eureka_spans.push(c.span);
                    continue;
                }
                _ => {}
            }
            let Some(place_name) = &c.place else { continue };
            let Some((place_id, place)) = places.get(t, &place_name.text) else {
                self.error(
                    Diagnostic::error(
                        "unknown_place",
                        format!("unknown place `{}`", place_name.text),
                    )
                    .with_primary(place_name.span, "no place of this name in the net")
                    .with_notes(did_you_mean(&place_name.text, places.names())),
                );
                self.misnamed.push(sspan(t.span));
                self.meant_place_in(&place_name.text, places.all());
                continue;
            };
            self.facts.references.push(Reference {
                kind: SymbolKind::Place,
                name: place_name.text.clone(),
                span: place_name.span,
                target: place.span,
                ty: Some(place.ty.clone()),
            });
            // types
            match c.kind {
                ConnectKindDecl::NumberOfTokens => {
                    if !matches!(port.ty, Type::ULong | Type::Any) {
                        self.error(
                            Diagnostic::error(
                                "invalid_number_of_tokens_port",
                                format!("port `{}` has type `{}`", port.name, port.ty),
                            )
                            .with_primary(
                                port_name.span,
                                "a `connect-number-of-tokens` port must be `unsigned long`",
                            ),
                        );
                    }
                }
                ConnectKindDecl::OutMany => {
                    if !matches!(port.ty, Type::List(_) | Type::Any) {
                        self.error(
                            Diagnostic::error(
                                "invalid_out_many_port",
                                format!("port `{}` has type `{}`", port.name, port.ty),
                            )
                            .with_primary(
                                port_name.span,
                                "a `connect-out-many` port must be a `list`",
                            ),
                        );
                    }
                }
                _ => {
                    if port.ty != place.ty && port.ty != Type::Any && place.ty != Type::Any {
                        self.error(
                            Diagnostic::error(
                                "connection_type_mismatch",
                                format!("port `{}` of type `{}` is connected to place `{}` of type `{}`", port.name, port.ty, place_name.text, place.ty),
                            )
                            .with_primary(c.span, "types differ")
                            .with_secondary(place.span, "the place"),
                        );
                    }
                }
            }
            // generator places
            if place.generator {
                let bad = match c.kind {
                    ConnectKindDecl::Read => Some("read"),
                    ConnectKindDecl::Out | ConnectKindDecl::OutMany | ConnectKindDecl::InOut => {
                        Some("produced into")
                    }
                    _ => None,
                };
                if let Some(what) = bad {
                    self.error(
                        Diagnostic::error(
                            "invalid_generator_place",
                            format!("generator place `{}` may not be {what}", place_name.text),
                        )
                        .with_primary(c.span, format!("`{kind_name}` to a generator place"))
                        .with_secondary(place.span, "the generator place"),
                    );
                }
            }
            // duplicates
            let dirs: &[bool] = match c.kind {
                ConnectKindDecl::InOut => &[true, false],
                ConnectKindDecl::In | ConnectKindDecl::Read | ConnectKindDecl::NumberOfTokens => {
                    &[true]
                }
                _ => &[false],
            };
            let mut dup = false;
            for &incoming in dirs {
                if let Some(&(_, _, _, first)) = seen
                    .iter()
                    .find(|(p, q, i, _)| *p == pid && *q == place_id && *i == incoming)
                {
                    self.error(
                        Diagnostic::error(
                            "duplicate_connection",
                            format!(
                                "port `{}` is connected to place `{}` twice in the {} direction",
                                port.name,
                                place_name.text,
                                if incoming { "incoming" } else { "outgoing" }
                            ),
                        )
                        .with_primary(c.span, "connected again here")
                        .with_secondary(first, "first connected here"),
                    );
                    dup = true;
                }
            }
            if dup {
                continue;
            }
            for &incoming in dirs {
                seen.push((pid, place_id, incoming, c.span));
            }
            let span = sspan(c.span);
            let kinds: &[ConnectKind] = match c.kind {
                ConnectKindDecl::In => &[ConnectKind::In],
                ConnectKindDecl::Read => &[ConnectKind::Read],
                ConnectKindDecl::NumberOfTokens => &[ConnectKind::NumberOfTokens],
                ConnectKindDecl::Out => &[ConnectKind::Out],
                ConnectKindDecl::OutMany => &[ConnectKind::OutMany],
                ConnectKindDecl::InOut => &[ConnectKind::In, ConnectKind::Out],
                ConnectKindDecl::Response | ConnectKindDecl::Eureka => &[],
            };
            for &kind in kinds {
                match kind {
                    ConnectKind::Out | ConnectKind::OutMany => out_connected[pid.index()] = true,
                    _ => in_connected[pid.index()] = true,
                }
                connections.push(Connection {
                    kind,
                    port: pid,
                    place: place_id,
                    span,
                });
            }
        }
        // After an unknown port or place name, the one error to fix is that name.
        let misnamed = self.misnamed.contains(&sspan(t.span));
        for (i, p) in f.ports.iter().enumerate().filter(|_| !misnamed) {
            if p.dir.is_input() && !in_connected[i] {
                self.warn(
                    ctx,
                    Diagnostic::warning(
                        "port-not-connected",
                        format!(
                            "input port `{}` of transition `{}` is not connected",
                            p.name, t.name.text
                        ),
                    )
                    .with_primary(tspan, "this transition")
                    .with_secondary(
                        Span::new(FileId(p.span.file.0), p.span.start, p.span.end),
                        "the port",
                    ),
                );
            }
            if p.dir.is_output() && !out_connected[i] {
                self.error(
                    Diagnostic::error(
                        "output_port_not_connected",
                        format!(
                            "output port `{}` of transition `{}` is not connected",
                            p.name, t.name.text
                        ),
                    )
                    .with_primary(tspan, "this transition")
                    .with_secondary(
                        Span::new(FileId(p.span.file.0), p.span.start, p.span.end),
                        "the port",
                    ),
                );
            }
        }

        // place maps
        let child_places: Option<HashMap<&str, usize>> = match &f.body {
            Body::Net(n) => Some(
                n.places
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (p.name.as_str(), i))
                    .collect(),
            ),
            _ => None,
        };
        let mut place_map: Vec<(PlaceId, PlaceId)> = Vec::new();
        let mut pm_spans: Vec<(String, Span)> = Vec::new();
        for pm in &t.place_maps {
            if let Some((_, first)) = pm_spans.iter().find(|(v, _)| *v == pm.virtual_.text) {
                let fs = *first;
                self.error(
                    Diagnostic::error(
                        "duplicate_place_map",
                        format!("virtual place `{}` is mapped twice", pm.virtual_.text),
                    )
                    .with_primary(pm.span, "mapped again here")
                    .with_secondary(fs, "first mapped here"),
                );
                continue;
            }
            pm_spans.push((pm.virtual_.text.clone(), pm.span));
            let real = places.get(t, &pm.real.text);
            if real.is_none() {
                self.error(
                    Diagnostic::error("unknown_place", format!("unknown place `{}`", pm.real.text))
                        .with_primary(pm.real.span, "no place of this name in the net")
                        .with_notes(did_you_mean(&pm.real.text, places.names())),
                );
            }
            let virt = child_places
                .as_ref()
                .and_then(|m| m.get(pm.virtual_.text.as_str()).copied());
            if virt.is_none() {
                self.error(
                    Diagnostic::error(
                        "unknown_place",
                        format!(
                            "transition `{}` has no virtual place `{}`",
                            t.name.text, pm.virtual_.text
                        ),
                    )
                    .with_primary(
                        pm.virtual_.span,
                        "no place of this name in the transition's net",
                    )
                    .with_notes(match &f.body {
                        Body::Net(cn) => did_you_mean(
                            &pm.virtual_.text,
                            cn.places.iter().map(|p| p.name.as_str()),
                        ),
                        _ => None,
                    }),
                );
            }
            if let (Some(v), Some(r), Body::Net(cn)) = (virt, real, &f.body) {
                let (vt, rt) = (&cn.places[v].ty, &r.1.ty);
                if vt != rt && *vt != Type::Any && *rt != Type::Any {
                    self.error(
                        Diagnostic::error(
                            "connection_type_mismatch",
                            format!("virtual place `{}` of type `{vt}` is mapped to place `{}` of type `{rt}`", pm.virtual_.text, pm.real.text),
                        )
                        .with_primary(pm.span, "types differ"),
                    );
                }
                place_map.push((PlaceId::from(v), r.0));
            }
        }

        let tconds = self.parse_conditions(&t.conditions);
        let condition = self.condition(&ef, tconds, &format!("condition of {}", t.name.text));
        let properties = self.properties(ctx, &t.properties);

        let is_net = matches!(ef.function.body, Body::Net(_));
        let inline = is_net
            && priority.is_none()
            && ((t.inline == Some(true) && !self.no_inline)
                || (!t.place_maps.is_empty() && !self.synthesize));
        if inline {
            let outputs = ef
                .function
                .ports
                .iter()
                .filter(|p| p.dir.is_output())
                .count();
            if outputs > 1 {
                let o = ef
                    .overrides
                    .iter()
                    .rev()
                    .find(|(n, _)| *n == "inline_many_output_ports")
                    .map(|(_, b)| *b);
                self.diags.push((
                    Diagnostic::warning(
                        "inline_many_output_ports",
                        format!("inlining transition `{}` with {outputs} output ports: its outputs are no longer produced at once", t.name.text),
                    )
                    .with_primary(tspan, "inlined here"),
                    o,
                ));
            }
            let ElabFn {
                function, bindings, ..
            } = ef;
            let Body::Net(child) = function.body else {
                return None;
            };
            let prefix = format!("_{}_", t.name.text);
            let mut map: Vec<Option<PlaceId>> = vec![None; child.places.len()];
            for c in &connections {
                let incoming = !matches!(c.kind, ConnectKind::Out | ConnectKind::OutMany);
                for &(port, i, o, cp) in &bindings {
                    if port == c.port
                        && ((incoming && i) || (!incoming && o))
                        && map[cp.index()].is_none()
                    {
                        map[cp.index()] = Some(c.place);
                    }
                }
            }
            for &(v, r) in &place_map {
                if map[v.index()].is_none() {
                    map[v.index()] = Some(r);
                }
            }
            return Some(Effect::Inline { prefix, child, map });
        }
        let requires = requires(&t.requires);
        self.functions.push(ef.function);
        let function = FunctionId::from(self.functions.len() - 1);
        Some(Effect::Transition(Transition {
            name: t.name.text.clone(),
            priority: priority.unwrap_or(0),
            function,
            connections,
            responses,
            eureka_ports,
            condition,
            place_map,
            requires,
            properties,
            produce_shared: t.produce_shared,
            consume_shared: t.consume_shared,
            passthrough_shared: t.passthrough_shared,
            span: sspan(t.span),
        }))
    }
}

/// The facts of [`super::facts`] that come from the root net's transition at `offset` of
/// file `file` (strictly inside its item), with file offsets: the include links' references
/// (as [`super::facts`] has them first), the transition's symbol and what its elaboration
/// recorded (its chunk's, [`chunk_query`], usually memoized by [`super::diagnostics`]).
/// Every reference and symbol of [`super::facts`] whose span holds `offset` is among them,
/// and so is every scope that holds it, but for the root defun's (which holds every item).
/// `None` when `file` is not the root file of `ws` cut into items, the offset is not inside
/// a transition's item, or the whole elaboration did not take the transition's facts from
/// its chunk as they are (a duplicate transition name, a struct nested too deeply): then
/// only the whole facts answer.
pub fn facts_at(
    db: &dyn salsa::Database,
    ws: Workspace,
    file: FileId,
    offset: u32,
) -> Option<Facts> {
    let cut = root_cut(db, ws, file)?;
    let k = cut
        .items
        .partition_point(|i| i.start < offset)
        .checked_sub(1)?;
    let item = cut.items[k];
    if item.kind != pnet_syntax::xml::items::ItemKind::Transition || offset >= item.end {
        return None;
    }
    item_facts(db, ws, &[item.input])
}

/// The facts of [`super::facts`] that come from the root net's transitions whose items meet
/// `start..=end` of file `file` (at most [`RANGE_ITEMS`]), as [`facts_at`] gives them: every
/// scope of [`super::facts`] that holds a text strictly inside one of those items is among
/// them, but for the root defun's. `None` as for [`facts_at`], or when the range meets more
/// items.
pub fn facts_in(
    db: &dyn salsa::Database,
    ws: Workspace,
    file: FileId,
    start: u32,
    end: u32,
) -> Option<Facts> {
    let cut = root_cut(db, ws, file)?;
    let first = cut.items.partition_point(|i| i.end < start);
    let items: Vec<db::ItemInput> = cut.items[first..]
        .iter()
        .take_while(|i| i.start <= end)
        .filter(|i| i.kind == pnet_syntax::xml::items::ItemKind::Transition)
        .map(|i| i.input)
        .take(RANGE_ITEMS + 1)
        .collect();
    if items.len() > RANGE_ITEMS {
        return None;
    }
    item_facts(db, ws, &items)
}

/// The most items [`facts_in`] joins (beyond, the whole facts are as quick).
const RANGE_ITEMS: usize = 256;

/// The cut of `ws`'s root file when it is `file`.
fn root_cut(db: &dyn salsa::Database, ws: Workspace, file: FileId) -> Option<&db::Cut> {
    let root = *ws.files(db).first()?;
    if *root.id(db) != file {
        return None;
    }
    root.cut(db).as_deref()
}

/// The facts of the root net's transitions of `items` (in document order) as
/// [`super::facts`] has them (see [`facts_at`]).
fn item_facts(db: &dyn salsa::Database, ws: Workspace, items: &[db::ItemInput]) -> Option<Facts> {
    use salsa::plumbing::AsId;
    let root = *ws.files(db).first()?;
    let parsed = db::source_tree(db, root);
    let Some(Root::Defun(d)) = &parsed.ast.root else {
        return None;
    };
    let Some(DefunBody::Net(n)) = &d.body else {
        return None;
    };
    if parsed.keys.is_empty()
        || super::diagnostics(db, ws)
            .iter()
            .any(|(d, _)| matches!(d.code, "duplicate_transition" | "struct_too_deep"))
    {
        return None;
    }
    let mut facts = Facts::default();
    for l in ws.links(db) {
        if let Some(target) = l.target {
            facts.references.push(Reference {
                kind: SymbolKind::File,
                name: l.href.clone(),
                span: l.span,
                target: Span::new(target, 0, 0),
                ty: None,
            });
        }
    }
    // the chunks as the whole elaboration finds them (nothing reported too deep)
    let mut wanted = items.iter().map(|i| i.as_id()).peekable();
    let mut index = 0;
    for chunk_items in chunks(&parsed.keys) {
        let len = chunk_items.len();
        let mut outs = None;
        for (at, key) in chunk_items.iter().map(|i| i.as_id()).enumerate() {
            if wanted.peek() != Some(&key) {
                continue;
            }
            wanted.next();
            let outs = match outs {
                Some(o) => o,
                None => {
                    let chunk = Chunk::new(db, chunk_items.clone(), false);
                    *outs.insert(chunk_query(db, ws, chunk).as_ref()?)
                }
            };
            let t = n.transitions.get(index + at)?;
            let (_, out) = outs.get(at)?;
            facts.symbols.push(Symbol {
                kind: SymbolKind::Transition,
                name: t.name.text.clone(),
                span: t.name.span,
                ty: None,
            });
            facts.symbols.extend(out.facts.symbols.iter().cloned());
            facts
                .references
                .extend(out.facts.references.iter().cloned());
            facts.scopes.extend(out.facts.scopes.iter().cloned());
        }
        index += len;
        if wanted.peek().is_none() {
            break;
        }
    }
    // an item not among the transitions parsed (not well-formed alone)
    if wanted.peek().is_some() {
        return None;
    }
    let mut resolver = db::Resolver::default();
    for f in ws.files(db) {
        resolver.add(db::source_tree(db, *f));
    }
    super::resolve::facts(&resolver, &mut facts);
    Some(facts)
}
