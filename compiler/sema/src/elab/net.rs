//! A `<net>`: places, templates and specializations, transitions, `use`.

use std::collections::hash_map::Entry;

use super::*;

/// The declared places of a net (see [`Elab::places`]).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct DeclaredPlaces {
    pub(super) places: Vec<Place>,
    pub(super) by_name: PlaceNames,
    pub(super) place_spans: Vec<Span>,
    /// Their symbols (facts).
    pub(super) symbols: Vec<Symbol>,
}

/// The places of a group of the root net's places (a few groups of items,
/// [`db::place_chunks`]) when its file is cut into items, elaborated in the scope of the net
/// ([`db::net_env`]) with their diagnostics and symbols, as [`Elab::places`] does it for the
/// whole net: an edit of a place re-runs its group only. What crosses groups comes by
/// [`place_links`] (which places repeat an earlier name, the cleanup places of `shared_P`
/// places), equal after an edit that changes no name.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupPlaces {
    /// Its places that are not duplicates (those the net keeps).
    pub(super) places: Vec<Place>,
    /// The span of each one's name.
    pub(super) place_spans: Vec<Span>,
    /// The facts the places added (their symbols, the references of their types).
    pub(super) facts: Facts,
    /// The diagnostics of each place, in order.
    pub(super) diags: Vec<(Diagnostic, Option<bool>)>,
    /// The diagnostics of the `shared_P` checks (reported after every place's).
    pub(super) shared_diags: Vec<(Diagnostic, Option<bool>)>,
    /// Whether its places reported `struct_too_deep` (they do not: struct types are
    /// resolved with their scope; the net then elaborates its places as one, to be sure).
    pub(super) depth_reported: bool,
}

/// The names of the root net's places across their groups ([`db::chunk_place_names`]):
/// what a group's elaboration ([`place_group`]) needs of the others, and where each name's
/// place is (for [`place_bucket`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceNameIndex {
    /// What the groups need of each other.
    links: PlaceLinks,
    /// For each bucket of names ([`place_bucket_of`]): each name's first declaration, as
    /// its group's index (in [`db::place_chunks`]) and its index among that group's places.
    buckets: Vec<Vec<(Arc<str>, u32, u32)>>,
}

/// What a group of places ([`place_group`]) needs of the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceLinks {
    /// The names declared more than once, with the span of their first declaration (sorted
    /// by name).
    repeated: Vec<(String, Span)>,
    /// The cleanup places `P` of the `shared_P` places (sorted): the span of the first
    /// place named `P` and whether it is a `shared_sink`, `None` when there is none.
    sinks: Vec<(Arc<str>, SinkPlace)>,
}

/// The cleanup place of a `shared_P` place: the span of its name and whether it is a
/// `shared_sink`; `None` when the net has no place `P`.
type SinkPlace = Option<(Span, bool)>;

impl PlaceLinks {
    /// The span of the first declaration of `name` if it is declared more than once.
    fn repeated(&self, name: &str) -> Option<Span> {
        let i = self
            .repeated
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()?;
        Some(self.repeated[i].1)
    }

    /// The cleanup place `sink` (see [`PlaceNameIndex::sinks`]); `None` when not indexed.
    fn sink(&self, sink: &str) -> Option<SinkPlace> {
        let i = self.sinks.binary_search_by(|(n, _)| (**n).cmp(sink)).ok()?;
        Some(self.sinks[i].1)
    }
}

/// See [`PlaceNameIndex`]: re-made when a place's name changes, or a place is added or
/// removed (a walk over the names, not an elaboration).
#[salsa::tracked(returns(ref))]
pub fn place_names(db: &dyn salsa::Database, ws: Workspace) -> Option<PlaceNameIndex> {
    let root = *ws.files(db).first()?;
    let groups = db::place_chunks(db, root).as_ref()?;
    let mut names = Vec::with_capacity(groups.len());
    for &g in groups {
        names.push(db::chunk_place_names(db, g).as_ref()?);
    }
    let count = names.iter().map(|n| n.len()).sum();
    let mut first: HashMap<&str, (Span, bool, bool), std::hash::BuildHasherDefault<db::IdHasher>> =
        HashMap::with_capacity_and_hasher(count, Default::default());
    let mut buckets = vec![Vec::new(); PLACE_BUCKETS];
    let mut sinks: Vec<(Arc<str>, SinkPlace)> = Vec::new();
    for (gi, group) in names.iter().enumerate() {
        let mut kept = 0;
        for p in group.iter() {
            if let Some(s) = &p.sink_of {
                sinks.push((s.clone(), None));
            }
            match first.entry(&p.name) {
                Entry::Occupied(mut f) => f.get_mut().2 = true,
                Entry::Vacant(v) => {
                    v.insert((p.span, p.shared_sink, false));
                    // the name shared with the chunk's names (no copy)
                    buckets[place_bucket_of(&p.name)].push((p.name.clone(), gi as u32, kept));
                    kept += 1;
                }
            }
        }
    }
    let mut repeated: Vec<(String, Span)> = first
        .iter()
        .filter(|(_, f)| f.2)
        .map(|(n, f)| (n.to_string(), f.0))
        .collect();
    repeated.sort_unstable();
    sinks.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    sinks.dedup_by(|a, b| a.0 == b.0);
    for (s, at) in &mut sinks {
        *at = first.get(&**s).map(|f| (f.0, f.1));
    }
    Some(PlaceNameIndex {
        links: PlaceLinks { repeated, sinks },
        buckets,
    })
}

/// The [`PlaceLinks`] of the root net's places ([`place_names`]): equal (and the groups of
/// places left alone) after an edit that makes no name repeat or stop repeating and touches
/// no cleanup place.
#[salsa::tracked(returns(ref))]
pub fn place_links(db: &dyn salsa::Database, ws: Workspace) -> Option<PlaceLinks> {
    Some(place_names(db, ws).as_ref()?.links.clone())
}

/// See [`GroupPlaces`]; `None` when the file is not cut into items or the group does not
/// parse alone.
#[salsa::tracked(returns(ref))]
pub fn place_group<'db>(
    db: &'db dyn salsa::Database,
    ws: Workspace,
    chunk: db::PlaceChunk<'db>,
) -> Option<GroupPlaces> {
    let root = *ws.files(db).first()?;
    let env = db::net_env(db, root).as_ref()?;
    let Some(DefunBody::Net(n)) = &env.body else {
        return None;
    };
    let names = place_links(db, ws).as_ref()?;
    let decls = db::chunk_places(db, chunk)?;
    let files: Vec<FileId> = decls.iter().map(|(f, _)| *f).collect();
    let mut e = Elab::detached(db, ws, &files)?;
    e.keep_facts = true;
    let root_ctx = e.root_ctx();
    let (ctx, _) = e.defun_scope(&root_ctx, env);
    let ctx = e.net_scope(&ctx, n);
    // only the places' own diagnostics and symbols
    e.diags.clear();
    e.facts = Facts::default();
    let scope_reported = e.struct_depth_reported;
    let mut places = Vec::new();
    let mut place_spans = Vec::new();
    let mut shared = Vec::new();
    for (_, p) in decls {
        e.check_user_name(&p.name, "place");
        if let Some(first) = names.repeated(&p.name.text)
            && first != p.name.span
        {
            e.duplicate_place(p, first);
            continue;
        }
        let place = e.place(&ctx, p);
        if let Type::Shared(sink) = &place.ty {
            shared.push((places.len(), p.ty.span, names.sink(sink)?));
        }
        places.push(place);
        place_spans.push(p.name.span);
    }
    let diags = std::mem::take(&mut e.diags);
    for (i, ty_span, sink) in shared {
        e.shared_check(&places[i], ty_span, sink);
    }
    Some(GroupPlaces {
        places,
        place_spans,
        facts: e.facts,
        diags,
        shared_diags: e.diags,
        depth_reported: e.struct_depth_reported && !scope_reported,
    })
}

/// The root net's places by their groups ([`place_group`]), when every group is there and
/// none reported `struct_too_deep`.
fn root_place_groups(db: &dyn salsa::Database, ws: Workspace) -> Option<Vec<&GroupPlaces>> {
    let root = *ws.files(db).first()?;
    db::place_chunks(db, root)
        .as_ref()?
        .iter()
        .map(|&g| {
            place_group(db, ws, g)
                .as_ref()
                .filter(|g| !g.depth_reported)
        })
        .collect()
}

/// Every declared place of the root net, its name and span (what a transition naming an
/// unknown place sees: [`transition::PlaceView`]).
#[salsa::tracked(returns(ref))]
pub fn place_list(db: &dyn salsa::Database, ws: Workspace) -> Option<Vec<(String, SourceSpan)>> {
    Some(
        root_place_groups(db, ws)?
            .iter()
            .flat_map(|g| g.places.iter().map(|p| (p.name.clone(), p.span)))
            .collect(),
    )
}

/// The number of buckets the root net's place names are hashed into ([`place_bucket`]).
const PLACE_BUCKETS: usize = 256;

/// The bucket of a place name.
fn place_bucket_of(name: &str) -> usize {
    use std::hash::{BuildHasher, BuildHasherDefault};
    (BuildHasherDefault::<db::IdHasher>::default().hash_one(name) >> 7) as usize % PLACE_BUCKETS
}

/// The first declaration of each name of bucket `bucket` ([`place_bucket_of`]) of the root
/// net's places: its group and its index among the group's places. Equal after an edit that
/// changes no name of the bucket and adds or removes no place in the groups of its names.
#[salsa::tracked(returns(ref))]
pub fn place_name_bucket<'db>(
    db: &'db dyn salsa::Database,
    ws: Workspace,
    bucket: usize,
) -> Option<Vec<(Arc<str>, db::PlaceChunk<'db>, u32)>> {
    let root = *ws.files(db).first()?;
    let groups = db::place_chunks(db, root).as_ref()?;
    let names = place_names(db, ws).as_ref()?;
    names
        .buckets
        .get(bucket)?
        .iter()
        .map(|(name, g, i)| Some((name.clone(), *groups.get(*g as usize)?, *i)))
        .collect()
}

/// The root net's places whose names fall in bucket `bucket`, as a transition sees them
/// (see [`transition::PlaceView`]), by name: what the views of the transitions naming them
/// read ([`transition::chunk_views`]), so that an edit of one place re-makes only the views
/// of the chunks naming a place of its bucket.
#[salsa::tracked(returns(ref))]
pub fn place_bucket(
    db: &dyn salsa::Database,
    ws: Workspace,
    bucket: usize,
) -> Option<Vec<NamedPlace>> {
    place_name_bucket(db, ws, bucket)
        .as_ref()?
        .iter()
        .map(|(name, g, i)| {
            let g = place_group(db, ws, *g).as_ref()?;
            Some((name.clone(), g.known(*i as usize)?))
        })
        .collect()
}

/// The symbol of declared place `p` of type `ty` (for the facts and a net's place symbols).
fn place_symbol(p: &PlaceDecl, ty: &Type) -> Symbol {
    Symbol {
        kind: SymbolKind::Place,
        name: p.name.text.clone(),
        span: p.name.span,
        ty: Some(ty.clone()),
    }
}

/// A place of a bucket ([`place_bucket`]): its name, and the place as a transition sees it.
type NamedPlace = (Arc<str>, transition::KnownPlace);

/// The root net's places as the transitions of a chunk see them, by name: each bucket
/// ([`place_bucket`]) fetched once.
pub(super) struct KnownPlaces<'db> {
    db: &'db dyn salsa::Database,
    ws: Workspace,
    buckets: Vec<Option<&'db [NamedPlace]>>,
}

impl<'db> KnownPlaces<'db> {
    pub(super) fn new(db: &'db dyn salsa::Database, ws: Workspace) -> KnownPlaces<'db> {
        KnownPlaces {
            db,
            ws,
            buckets: vec![None; PLACE_BUCKETS],
        }
    }

    /// The place `name` (`None` when there is none; `None` inside when the net's places
    /// are not elaborated by groups).
    pub(super) fn get(&mut self, name: &str) -> Option<Option<transition::KnownPlace>> {
        let b = place_bucket_of(name);
        let bucket = match self.buckets[b] {
            Some(bucket) => bucket,
            None => {
                let bucket = place_bucket(self.db, self.ws, b).as_deref()?;
                self.buckets[b] = Some(bucket);
                bucket
            }
        };
        Some(
            bucket
                .iter()
                .find(|(n, _)| **n == *name)
                .map(|(_, k)| k.clone()),
        )
    }
}

impl GroupPlaces {
    /// Its place `i` as a transition sees it.
    fn known(&self, i: usize) -> Option<transition::KnownPlace> {
        let p = self.places.get(i)?;
        Some(transition::KnownPlace {
            ty: p.ty.clone(),
            generator: p.generator,
            span: self.place_spans[i],
        })
    }
}

impl<'a> Elab<'a> {
    // ---------------------------------------------------------------- net

    /// The scope inside a net (its templates, specializations and structs): the first part
    /// of [`Elab::net`], also the scope of the root net's transitions elaborated alone.
    pub(super) fn net_scope(&mut self, outer: &Ctx<'a>, n: &'a NetDecl) -> Ctx<'a> {
        let mut ctx = outer.clone();
        // templates of this net
        let mut templates: Vec<TemplateEntry<'a>> = Vec::new();
        for item in &n.templates {
            let (t, includes) = match item {
                TemplateItem::Inline(t) => (t, ctx.includes.clone()),
                TemplateItem::Include(h) => match self.include(&ctx, h) {
                    Some((file, Root::Template(t))) => (&**t, ctx.with_include(file).includes),
                    Some(_) => {
                        self.error(
                            Diagnostic::error(
                                "unexpected_root",
                                format!("`{}` is not a template file", h.path.text),
                            )
                            .with_primary(h.path.span, "expected a file whose root is `template`"),
                        );
                        continue;
                    }
                    None => continue,
                },
            };
            let mut seen: Vec<&Name> = Vec::new();
            for p in &t.params {
                self.warn_repeated(
                    &ctx,
                    &mut seen,
                    p,
                    "duplicate-template-parameter",
                    || format!("duplicate template parameter `{}`", p.text),
                    "declared again here",
                    "first declared here",
                );
            }
            let Some(name) = &t.name else { continue };
            if let Some(first) = templates.iter().find(|x| x.name == name.text) {
                let fs = first
                    .template
                    .name
                    .as_ref()
                    .map_or(first.template.tag, |n| n.span);
                self.error(
                    Diagnostic::error(
                        "duplicate_template",
                        format!("duplicate template `{}`", name.text),
                    )
                    .with_primary(name.span, "defined again here")
                    .with_secondary(fs, "first defined here"),
                );
                continue;
            }
            if lookup_template(ctx.fns.as_ref(), &name.text).is_some() {
                self.warn(
                    &ctx,
                    Diagnostic::warning(
                        "shadowed-template",
                        format!(
                            "template `{}` shadows a template of an enclosing net",
                            name.text
                        ),
                    )
                    .with_primary(name.span, "this template"),
                );
            }
            self.facts.symbols.push(Symbol {
                kind: SymbolKind::Template,
                name: name.text.clone(),
                span: name.span,
                ty: None,
            });
            templates.push(TemplateEntry {
                name: name.text.clone(),
                template: t,
                includes,
            });
        }
        // specializations
        let mut specs: Vec<SpecEntry<'a>> = Vec::new();
        let mut spec_spans: Vec<Span> = Vec::new();
        let mut exports: Vec<(String, &'a StructDef, Rc<Subst>)> = Vec::new();
        for s in &n.specializes {
            if let Some(i) = specs.iter().position(|x| x.name == s.name.text) {
                self.error(
                    Diagnostic::error(
                        "duplicate_specialize",
                        format!("duplicate specialization `{}`", s.name.text),
                    )
                    .with_primary(s.name.span, "defined again here")
                    .with_secondary(spec_spans[i], "first defined here"),
                );
                continue;
            }
            let template = templates
                .iter()
                .find(|t| t.name == s.use_.text)
                .cloned()
                .or_else(|| lookup_template(ctx.fns.as_ref(), &s.use_.text));
            if let Some(tn) = template.as_ref().and_then(|t| t.template.name.as_ref()) {
                self.facts.references.push(Reference {
                    kind: SymbolKind::Template,
                    name: s.use_.text.clone(),
                    span: s.use_.span,
                    target: tn.span,
                    ty: None,
                });
            }
            if template.is_none() {
                self.error(
                    Diagnostic::error(
                        "unknown_template",
                        format!("unknown template `{}`", s.use_.text),
                    )
                    .with_primary(s.use_.span, "no template of this name is in scope")
                    .with_notes(did_you_mean(
                        &s.use_.text,
                        templates
                            .iter()
                            .map(|t| t.name.as_str())
                            .chain(template_names(ctx.fns.as_ref())),
                    )),
                );
            }
            let mut subst = (*ctx.subst).clone();
            let mut seen: Vec<&Name> = Vec::new();
            for (replace, with) in &s.type_maps {
                if self.warn_repeated(
                    &ctx,
                    &mut seen,
                    replace,
                    "type-map-duplicate",
                    || format!("type `{}` is mapped twice", replace.text),
                    "mapped again here",
                    "first mapped here",
                ) {
                    continue;
                }
                let w = ctx
                    .subst
                    .get(&with.text)
                    .cloned()
                    .unwrap_or_else(|| with.text.clone());
                subst.insert(replace.text.clone(), w);
            }
            let subst = Rc::new(subst);
            let mut seen: Vec<&Name> = Vec::new();
            for g in &s.type_gets {
                if self.warn_repeated(
                    &ctx,
                    &mut seen,
                    g,
                    "type-get-duplicate",
                    || format!("type `{}` is got twice", g.text),
                    "again here",
                    "first here",
                ) {
                    continue;
                }
                let Some(t) = &template else { continue };
                let Some(d) = &t.template.defun else { continue };
                let mut defs = Vec::new();
                let tctx = Ctx {
                    includes: t.includes.clone(),
                    ..ctx.clone()
                };
                self.collect_structs(&tctx, &d.structs, &mut defs, &mut Vec::new());
                match defs
                    .iter()
                    .find(|d| subst.get(&d.name.text).unwrap_or(&d.name.text) == &g.text)
                {
                    Some(def) => exports.push((g.text.clone(), def, subst.clone())),
                    None => self.error(
                        Diagnostic::error(
                            "unknown_type",
                            format!("template `{}` defines no struct `{}`", t.name, g.text),
                        )
                        .with_primary(g.span, "nothing to get")
                        .with_notes(did_you_mean(
                            &g.text,
                            defs.iter()
                                .map(|d| subst.get(&d.name.text).unwrap_or(&d.name.text).as_str()),
                        )),
                    ),
                }
            }
            if lookup_spec(ctx.fns.as_ref(), &s.name.text) {
                self.warn(
                    &ctx,
                    Diagnostic::warning(
                        "shadowed-specialize",
                        format!(
                            "specialization `{}` shadows one of an enclosing net",
                            s.name.text
                        ),
                    )
                    .with_primary(s.name.span, "this specialization"),
                );
            }
            self.facts.symbols.push(Symbol {
                kind: SymbolKind::Specialize,
                name: s.name.text.clone(),
                span: s.name.span,
                ty: None,
            });
            specs.push(SpecEntry {
                name: s.name.text.clone(),
                span: s.name.span,
                template,
                subst,
            });
            spec_spans.push(s.name.span);
        }
        ctx.structs = self.struct_scope(&ctx, &n.structs, exports);
        if !templates.is_empty() || !specs.is_empty() {
            ctx.fns = Some(Rc::new(FnScope {
                parent: ctx.fns.clone(),
                templates,
                specializes: specs,
                structs: ctx.structs.clone(),
            }));
        }
        ctx
    }

    pub(super) fn net(&mut self, outer: &Ctx<'a>, n: &'a NetDecl) -> Net {
        let ctx = self.net_scope(outer, n);
        // net properties are checked but not kept: the IR has none for nets
        let _ = self.properties(&ctx, &n.properties);

        // places (those of the root net by groups, [`place_group`])
        let root_groups = match &self.root_items {
            Some(ri) if self.lite && std::ptr::eq(n, ri.net) => root_place_groups(ri.db, ri.ws),
            _ => None,
        };
        let own;
        let (mut net, own_names, place_spans, place_syms) = match &root_groups {
            Some(groups) => {
                let count = groups.iter().map(|g| g.places.len()).sum();
                let mut places = Vec::with_capacity(count);
                let mut spans = Vec::with_capacity(count);
                let mut syms = Vec::new();
                for g in groups {
                    self.diags.extend(g.diags.iter().cloned());
                    if self.wants_facts() {
                        let f = &g.facts;
                        self.facts.symbols.extend(f.symbols.iter().cloned());
                        self.facts.references.extend(f.references.iter().cloned());
                        self.facts.scopes.extend(f.scopes.iter().cloned());
                        // the places' symbols are the facts' (see [`Elab::place`])
                        syms.extend(f.symbols.iter().cloned());
                    }
                    places.extend(g.places.iter().cloned());
                    spans.extend_from_slice(&g.place_spans);
                }
                for g in groups {
                    self.diags.extend(g.shared_diags.iter().cloned());
                }
                let net = Net {
                    places,
                    ..Net::default()
                };
                (net, None, spans, syms)
            }
            None => {
                own = self.places(&ctx, n);
                (
                    Net {
                        places: own.places.clone(),
                        ..Net::default()
                    },
                    Some(&own.by_name),
                    own.place_spans.clone(),
                    own.symbols.clone(),
                )
            }
        };

        // transitions (those of the root net by chunks, when its places came by groups)
        let chunked = match (&root_groups, &self.root_items) {
            (Some(_), Some(ri)) => self.chunked(ri, &place_spans),
            _ => None,
        };
        // the declared places by name, for the transitions not taken from their chunks
        let mut names: Option<PlaceNames> = None;
        let mut trans_spans: HashMap<&str, Span, std::hash::BuildHasherDefault<db::IdHasher>> =
            HashMap::with_capacity_and_hasher(n.transitions.len(), Default::default());
        for (index, t) in n.transitions.iter().enumerate() {
            self.check_user_name(&t.name, "transition");
            if let Some(first) = trans_spans.get(t.name.text.as_str()) {
                let fs = *first;
                self.error(
                    Diagnostic::error(
                        "duplicate_transition",
                        format!("duplicate transition `{}`", t.name.text),
                    )
                    .with_primary(t.name.span, "declared again here")
                    .with_secondary(fs, "first declared here"),
                );
                continue;
            }
            trans_spans.insert(t.name.text.as_str(), t.name.span);
            if self.wants_facts() {
                self.facts.symbols.push(Symbol {
                    kind: SymbolKind::Transition,
                    name: t.name.text.clone(),
                    span: t.name.span,
                    ty: None,
                });
            }
            // from the root net's chunks ([`transition::chunk_query`]) when they assumed
            // what holds here
            if let Some((outs, ids)) = &chunked
                && let Some((out, range)) = outs.get(index)
                && out.0 == self.struct_depth_reported
            {
                self.absorb_lite(&out.1, &mut net, &ids[range.clone()]);
                continue;
            }
            let by_name = match own_names {
                Some(b) => b,
                None => &*names.get_or_insert_with(|| {
                    net.places[..place_spans.len()]
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (p.name.clone(), i))
                        .collect()
                }),
            };
            self.transition(&ctx, n, index, t, &mut net, by_name, &place_spans);
        }
        self.net_places = place_syms;
        net
    }

    /// Each transition of the root net's result from its chunk ([`transition::chunk_query`]),
    /// and the index among the declared places (`place_spans`, their names' spans) of each
    /// place it names (a range of the second list): the place its view
    /// ([`transition::chunk_views`]) found, by the item file of its name's span. `None` when
    /// a chunk is missing.
    fn chunked(&self, ri: &RootItems<'a>, place_spans: &[Span]) -> Option<transition::Chunked<'a>> {
        let (db, ws) = (ri.db, ri.ws);
        // the index of each declared place by the index of its item's input
        let item = |s: &Span| {
            (s.file.0 & db::ITEM_FILE != 0).then_some((s.file.0 & !db::ITEM_FILE) as usize)
        };
        let mut by_item = Vec::new();
        for (i, s) in place_spans.iter().enumerate() {
            let k = item(s)?;
            if by_item.len() <= k {
                by_item.resize(k + 1, usize::MAX);
            }
            by_item[k] = i;
        }
        let mut depth_reported = self.struct_depth_reported;
        let mut outs = Vec::with_capacity(ri.keys.len());
        let mut ids = Vec::new();
        for items in transition::chunks(ri.keys) {
            let chunk = transition::Chunk::new(db, items, depth_reported);
            let chunk_outs = transition::chunk_query(db, ws, chunk).as_ref()?;
            let views = transition::chunk_views(db, ws, chunk).as_ref()?;
            if chunk_outs.len() != views.len() {
                return None;
            }
            for (out, view) in chunk_outs.iter().zip(views) {
                let start = ids.len();
                for k in view.known() {
                    ids.push(match k {
                        Some(k) => {
                            Some(*by_item.get(item(&k.span)?).filter(|&&i| i != usize::MAX)?)
                        }
                        None => None,
                    });
                }
                outs.push((out, start..ids.len()));
            }
            if let Some((before, last)) = chunk_outs.last() {
                depth_reported = *before || last.struct_depth_reported;
            }
        }
        (outs.len() == ri.keys.len()).then_some((outs, ids))
    }

    /// The places of net `n` (in scope `ctx`), elaborated and checked: the part of
    /// [`Elab::net`] before the transitions (the root net's by groups, [`place_group`]).
    pub(super) fn places(&mut self, ctx: &Ctx<'a>, n: &'a NetDecl) -> DeclaredPlaces {
        let ctx = ctx.clone();
        let mut net = Net::default();
        let mut place_spans: Vec<Span> = Vec::new();
        let mut by_name = PlaceNames::default();
        let mut place_syms: Vec<Symbol> = Vec::new();
        for p in &n.places {
            self.check_user_name(&p.name, "place");
            if let Some(&i) = by_name.get(&p.name.text) {
                self.duplicate_place(p, place_spans[i]);
                continue;
            }
            let place = self.place(&ctx, p);
            by_name.insert(p.name.text.clone(), net.places.len());
            place_spans.push(p.name.span);
            // facts are for tools ([`Elab::lite`]: only diagnostics are wanted)
            if self.wants_facts() {
                place_syms.push(place_symbol(p, &place.ty));
            }
            net.places.push(place);
        }
        for (pi, place) in net.places.iter().enumerate() {
            let Type::Shared(sink) = &place.ty else {
                continue;
            };
            let ty_span = n
                .places
                .iter()
                .find(|d| d.name.text == place.name)
                .map_or(place_spans[pi], |d| d.ty.span);
            let sink = by_name
                .get(&**sink)
                .map(|&q| (place_spans[q], net.places[q].shared_sink));
            self.shared_check(place, ty_span, sink);
        }

        DeclaredPlaces {
            places: net.places,
            by_name,
            place_spans,
            symbols: place_syms,
        }
    }

    /// Reports place `p` as a duplicate of the place whose name is at `first`.
    fn duplicate_place(&mut self, p: &PlaceDecl, first: Span) {
        self.error(
            Diagnostic::error(
                "duplicate_place",
                format!("duplicate place `{}`", p.name.text),
            )
            .with_primary(p.name.span, "declared again here")
            .with_secondary(first, "first declared here"),
        );
    }

    /// The declared place `p` (not a duplicate) elaborated and checked, its symbol added to
    /// the facts when they are wanted.
    fn place(&mut self, ctx: &Ctx<'a>, p: &'a PlaceDecl) -> Place {
        let ty = self.resolve_type(ctx, &p.ty);
        let mut tokens = Vec::new();
        if ty != Type::Any {
            for t in &p.tokens {
                for v in &t.values {
                    if let Some(v) = self.eval_token(v, &ty) {
                        tokens.push(v);
                    }
                }
            }
        }
        if p.generator {
            let gen_err = |e: &mut Self, msg: String, span: Span, label: &str| {
                e.error(
                    Diagnostic::error("invalid_generator_place", msg)
                        .with_primary(span, label.to_string()),
                );
            };
            if !p.tokens.is_empty() {
                gen_err(
                    self,
                    format!("generator place `{}` has tokens", p.name.text),
                    p.tokens[0].span,
                    "a generator place may not have initial tokens",
                );
            }
            if p.put_token {
                gen_err(
                    self,
                    format!("generator place `{}` is a put_token place", p.name.text),
                    p.name.span,
                    "a generator place may not be `put_token`",
                );
            }
            if p.shared_sink {
                gen_err(
                    self,
                    format!("generator place `{}` is a shared_sink", p.name.text),
                    p.name.span,
                    "a generator place may not be a `shared_sink`",
                );
            }
            // The bundle's rule (an unknown type, opaque here, has no generator either:
            // accepting it made a bundle that does not validate; found by fuzzing).
            if !pnet_bundle::validate::generator_type(&ty) {
                let what = if ty == Type::Any {
                    format!("the unknown type `{}`", p.ty.text)
                } else {
                    format!("type `{ty}`")
                };
                gen_err(
                    self,
                    format!("generator place `{}` has {what}", p.name.text),
                    p.ty.span,
                    "must be int, long, unsigned int, unsigned long, char, string or bigint",
                );
            }
        }
        let properties = self.properties(ctx, &p.properties);
        // facts are for tools ([`Elab::lite`]: only diagnostics are wanted)
        if self.wants_facts() {
            self.facts.symbols.push(place_symbol(p, &ty));
        }
        Place {
            name: p.name.text.clone(),
            ty,
            is_virtual: p.is_virtual,
            put_token: p.put_token,
            shared_sink: p.shared_sink,
            generator: p.generator,
            tokens,
            properties,
            span: sspan(p.span),
        }
    }

    /// A `shared_P` place needs its cleanup place `P` in the same net, a `shared_sink`:
    /// `place` (whose type is written at `ty_span`), and its cleanup place's name span and
    /// whether it is a `shared_sink` (`None`: there is none).
    fn shared_check(&mut self, place: &Place, ty_span: Span, sink_place: SinkPlace) {
        let Type::Shared(sink) = &place.ty else {
            return;
        };
        match sink_place {
            None => self.error(
                Diagnostic::error(
                    "shared_cleanup_place_missing",
                    format!(
                        "place `{}` has type `shared_{sink}`, but there is no cleanup place `{sink}` in its net",
                        place.name
                    ),
                )
                .with_primary(ty_span, "this type")
                .with_note(format!(
                    "help: add `<place name=\"{sink}\" type=\"...\" shared_sink=\"true\"/>` to this net"
                )),
            ),
            Some((at, false)) => self.error(
                Diagnostic::error(
                    "shared_cleanup_place_not_shared_sink",
                    format!(
                        "the cleanup place `{sink}` of place `{}` is not a `shared_sink`",
                        place.name
                    ),
                )
                .with_primary(ty_span, "this type")
                .with_secondary(at, "the cleanup place")
                .with_note(format!(
                    "help: add `shared_sink=\"true\"` to place `{sink}`"
                )),
            ),
            Some((_, true)) => {}
        }
    }

    pub(super) fn check_user_name(&mut self, name: &Name, what: &str) {
        if name.text.starts_with('_') {
            self.error(
                Diagnostic::error(
                    "invalid_prefix",
                    format!("{what} name `{}` starts with `_`", name.text),
                )
                .with_primary(
                    name.span,
                    "a leading `_` is reserved for names the compiler makes",
                ),
            );
        } else if !valid_name(&name.text) {
            self.error(
                Diagnostic::error(
                    "invalid_name",
                    format!("`{}` is not a valid {what} name", name.text),
                )
                .with_primary(name.span, "names match [A-Za-z_][A-Za-z0-9_]*"),
            );
        }
    }

    /// The function a `use` names: a specialization or a template in scope.
    pub(super) fn used(&mut self, ctx: &Ctx<'a>, name: &'a Name) -> Option<(&'a Defun, Ctx<'a>)> {
        let mut scope = ctx.fns.clone();
        while let Some(s) = scope {
            if let Some(sp) = s.specializes.iter().find(|x| x.name == name.text) {
                self.facts.references.push(Reference {
                    kind: SymbolKind::Specialize,
                    name: name.text.clone(),
                    span: name.span,
                    target: sp.span,
                    ty: None,
                });
                let t = sp.template.as_ref()?;
                let d = t.template.defun.as_deref()?;
                let c = Ctx {
                    structs: s.structs.clone(),
                    subst: sp.subst.clone(),
                    fns: Some(s.clone()),
                    overrides: ctx.overrides.clone(),
                    includes: t.includes.clone(),
                    depth: ctx.depth,
                };
                return Some((d, c));
            }
            if let Some(t) = s.templates.iter().find(|x| x.name == name.text) {
                if let Some(tn) = &t.template.name {
                    self.facts.references.push(Reference {
                        kind: SymbolKind::Template,
                        name: name.text.clone(),
                        span: name.span,
                        target: tn.span,
                        ty: None,
                    });
                }
                let d = t.template.defun.as_deref()?;
                let c = Ctx {
                    structs: s.structs.clone(),
                    subst: ctx.subst.clone(),
                    fns: Some(s.clone()),
                    overrides: ctx.overrides.clone(),
                    includes: t.includes.clone(),
                    depth: ctx.depth,
                };
                return Some((d, c));
            }
            scope = s.parent.clone();
        }
        self.error(
            Diagnostic::error(
                "unknown_function",
                format!("unknown function `{}`", name.text),
            )
            .with_primary(
                name.span,
                "no specialization or template of this name is in scope",
            )
            .with_notes(did_you_mean(&name.text, function_names(ctx.fns.as_ref()))),
        );
        None
    }

    /// [`Elab::meant_place`] among places given by name and span.
    pub(super) fn meant_place_in(&mut self, name: &str, places: &[(String, SourceSpan)]) {
        if let Some(near) = pnet_stdlib::suggest::nearest(name, places.iter().map(|p| p.0.as_str()))
            && let Some(p) = places.iter().find(|p| p.0 == near)
        {
            self.misnamed.push(p.1);
        }
    }

    /// Records the place an unknown place name `name` probably meant (see `misnamed`).
    pub(super) fn meant_place(&mut self, name: &str, places: &[pnet_bundle::Place]) {
        if let Some(near) =
            pnet_stdlib::suggest::nearest(name, places.iter().map(|p| p.name.as_str()))
            && let Some(p) = places.iter().find(|p| p.name == near)
        {
            self.misnamed.push(p.span);
        }
    }
}
