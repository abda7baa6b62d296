//! A `<net>`: places, templates and specializations, transitions, `use`.

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

/// The places of a workspace's root net when its file is cut into items, elaborated in the
/// scope of the net ([`db::net_env`]) with their diagnostics and symbols: an edit that
/// leaves the places' trees equal ([`db::place_decls`]) reuses them.
#[derive(Clone, Debug, PartialEq)]
pub struct RootPlaces {
    pub(super) places: Vec<Place>,
    pub(super) by_name: PlaceNames,
    pub(super) place_spans: Vec<Span>,
    /// The indexes of the places (of `by_name`) in each bucket of names ([`place_bucket`]).
    pub(super) buckets: Vec<Vec<usize>>,
    /// The facts the places added (their symbols, the references of their types).
    pub(super) facts: Facts,
    pub(super) diags: Vec<(Diagnostic, Option<bool>)>,
    pub(super) struct_depth_reported: bool,
}

/// The number of buckets the root net's place names are hashed into ([`place_bucket`]).
const PLACE_BUCKETS: usize = 256;

/// The bucket of a place name.
fn place_bucket_of(name: &str) -> usize {
    use std::hash::{BuildHasher, BuildHasherDefault};
    (BuildHasherDefault::<db::IdHasher>::default().hash_one(name) >> 7) as usize % PLACE_BUCKETS
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
) -> Option<Vec<(String, transition::KnownPlace)>> {
    let rp = root_places(db, ws).as_ref()?;
    Some(
        rp.buckets
            .get(bucket)?
            .iter()
            .map(|&i| (rp.places[i].name.clone(), rp.known(i)))
            .collect(),
    )
}

/// The place `name` of the root net as a transition sees it (by its bucket).
pub(super) fn known_place(
    db: &dyn salsa::Database,
    ws: Workspace,
    name: &str,
) -> Option<Option<transition::KnownPlace>> {
    let bucket = place_bucket(db, ws, place_bucket_of(name)).as_ref()?;
    Some(
        bucket
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, k)| k.clone()),
    )
}

impl RootPlaces {
    /// The declared place `i` as a transition sees it.
    pub(super) fn known(&self, i: usize) -> transition::KnownPlace {
        transition::KnownPlace {
            ty: self.places[i].ty.clone(),
            generator: self.places[i].generator,
            span: self.place_spans[i],
        }
    }
}

/// See [`RootPlaces`].
#[salsa::tracked(returns(ref))]
pub fn root_places(db: &dyn salsa::Database, ws: Workspace) -> Option<RootPlaces> {
    let root = *ws.files(db).first()?;
    let decls = db::place_decls(db, root).as_ref()?;
    let env = db::net_env(db, root).as_ref()?;
    let Some(DefunBody::Net(n)) = &env.body else {
        return None;
    };
    let mut e = Elab::detached(db, ws, &decls.items)?;
    e.keep_facts = true;
    let root_ctx = e.root_ctx();
    let (ctx, _) = e.defun_scope(&root_ctx, env);
    let ctx = e.net_scope(&ctx, n);
    // only the places' own diagnostics and symbols
    e.diags.clear();
    e.facts = Facts::default();
    let d = e.places(&ctx, &decls.net);
    let mut buckets = vec![Vec::new(); PLACE_BUCKETS];
    for (name, &i) in &d.by_name {
        buckets[place_bucket_of(name)].push(i);
    }
    for b in &mut buckets {
        b.sort_unstable();
    }
    Some(RootPlaces {
        places: d.places,
        by_name: d.by_name,
        place_spans: d.place_spans,
        buckets,
        facts: e.facts,
        diags: e.diags,
        struct_depth_reported: e.struct_depth_reported,
    })
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

        // places (those of the root net by their own query, [`root_places`])
        let root_places = match &self.root_items {
            Some(ri) if self.lite && std::ptr::eq(n, ri.net) => root_places(ri.db, ri.ws).as_ref(),
            _ => None,
        };
        let own;
        let (mut net, by_name, place_spans, place_syms) = match root_places {
            Some(rp) => {
                self.diags.extend(rp.diags.iter().cloned());
                self.struct_depth_reported |= rp.struct_depth_reported;
                if self.wants_facts() {
                    let f = &rp.facts;
                    self.facts.symbols.extend(f.symbols.iter().cloned());
                    self.facts.references.extend(f.references.iter().cloned());
                    self.facts.scopes.extend(f.scopes.iter().cloned());
                }
                let net = Net {
                    places: rp.places.clone(),
                    ..Net::default()
                };
                // the places' symbols are the facts' (see [`Elab::places`])
                let syms = match self.wants_facts() {
                    true => rp.facts.symbols.clone(),
                    false => Vec::new(),
                };
                (net, &rp.by_name, &rp.place_spans[..], syms)
            }
            None => {
                own = self.places(&ctx, n);
                (
                    Net {
                        places: own.places.clone(),
                        ..Net::default()
                    },
                    &own.by_name,
                    &own.place_spans[..],
                    own.symbols.clone(),
                )
            }
        };

        // transitions (those of the root net by chunks, when its places came by their query)
        if root_places.is_some()
            && let Some(ri) = &self.root_items
        {
            let (db, ws) = (ri.db, ri.ws);
            let mut depth_reported = self.struct_depth_reported;
            let mut all: Vec<transition::Chunked<'a>> = Vec::new();
            for items in transition::chunks(ri.keys) {
                let chunk = transition::Chunk::new(db, items, depth_reported);
                let (Some(outs), Some(ids)) = (
                    transition::chunk_query(db, ws, chunk),
                    transition::chunk_place_ids(db, ws, chunk),
                ) else {
                    all.clear();
                    break;
                };
                if outs.len() != ids.len() {
                    all.clear();
                    break;
                }
                all.extend(outs.iter().zip(ids.iter().map(Vec::as_slice)));
                if let Some((before, last)) = outs.last() {
                    depth_reported = *before || last.struct_depth_reported;
                }
            }
            if all.len() == ri.keys.len() {
                self.chunked = Some(all);
            }
        }
        let mut trans_spans: HashMap<&str, Span, std::hash::BuildHasherDefault<db::IdHasher>> =
            HashMap::default();
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
            self.transition(&ctx, n, index, t, &mut net, by_name, place_spans);
        }
        self.net_places = place_syms;
        net
    }

    /// The places of net `n` (in scope `ctx`), elaborated and checked: the part of
    /// [`Elab::net`] before the transitions (the root net's by [`root_places`]).
    pub(super) fn places(&mut self, ctx: &Ctx<'a>, n: &'a NetDecl) -> DeclaredPlaces {
        let ctx = ctx.clone();
        let mut net = Net::default();
        let mut place_spans: Vec<Span> = Vec::new();
        let mut by_name = PlaceNames::default();
        let mut place_syms: Vec<Symbol> = Vec::new();
        for p in &n.places {
            self.check_user_name(&p.name, "place");
            if let Some(&i) = by_name.get(&p.name.text) {
                self.error(
                    Diagnostic::error(
                        "duplicate_place",
                        format!("duplicate place `{}`", p.name.text),
                    )
                    .with_primary(p.name.span, "declared again here")
                    .with_secondary(place_spans[i], "first declared here"),
                );
                continue;
            }
            let ty = self.resolve_type(&ctx, &p.ty);
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
            let properties = self.properties(&ctx, &p.properties);
            by_name.insert(p.name.text.clone(), net.places.len());
            place_spans.push(p.name.span);
            // facts are for tools ([`Elab::lite`]: only diagnostics are wanted)
            if self.wants_facts() {
                let sym = Symbol {
                    kind: SymbolKind::Place,
                    name: p.name.text.clone(),
                    span: p.name.span,
                    ty: Some(ty.clone()),
                };
                self.facts.symbols.push(sym.clone());
                place_syms.push(sym);
            }
            net.places.push(Place {
                name: p.name.text.clone(),
                ty,
                is_virtual: p.is_virtual,
                put_token: p.put_token,
                shared_sink: p.shared_sink,
                generator: p.generator,
                tokens,
                properties,
                span: sspan(p.span),
            });
        }
        // A `shared_P` place needs its cleanup place `P` in the same net, a `shared_sink`.
        for (pi, place) in net.places.iter().enumerate() {
            let Type::Shared(sink) = &place.ty else {
                continue;
            };
            let ty_span = n
                .places
                .iter()
                .find(|d| d.name.text == place.name)
                .map_or(place_spans[pi], |d| d.ty.span);
            match by_name.get(&**sink) {
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
                Some(&q) if !net.places[q].shared_sink => self.error(
                    Diagnostic::error(
                        "shared_cleanup_place_not_shared_sink",
                        format!(
                            "the cleanup place `{sink}` of place `{}` is not a `shared_sink`",
                            place.name
                        ),
                    )
                    .with_primary(ty_span, "this type")
                    .with_secondary(place_spans[q], "the cleanup place")
                    .with_note(format!(
                        "help: add `shared_sink=\"true\"` to place `{sink}`"
                    )),
                ),
                Some(_) => {}
            }
        }

        DeclaredPlaces {
            places: net.places,
            by_name,
            place_spans,
            symbols: place_syms,
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
