//! Struct scopes, struct types, type names, properties.

use super::*;

impl<'a> Elab<'a> {
    // ---------------------------------------------------------------- structs and types

    pub(super) fn collect_structs(
        &mut self,
        ctx: &Ctx<'a>,
        items: &'a [StructItem],
        out: &mut Vec<&'a StructDef>,
        stack: &mut Vec<FileId>,
    ) {
        for item in items {
            match item {
                StructItem::Def(d) => out.push(d),
                StructItem::Include(h) => {
                    let Some(target) = self
                        .links
                        .get(&(self.resolver.file(h.path.span.file), h.path.text.as_str()))
                        .copied()
                        .flatten()
                    else {
                        continue;
                    };
                    if stack.contains(&target) || ctx.includes.contains(&target) {
                        self.include_cycle(h);
                        continue;
                    }
                    match self.ast(target) {
                        Some(Root::Structs(inner)) => {
                            stack.push(target);
                            self.collect_structs(ctx, inner, out, stack);
                            stack.pop();
                        }
                        Some(_) => self.warn(
                            ctx,
                            Diagnostic::warning(
                                "unexpected-element",
                                format!("`{}` is not a `structs` file; ignored", h.path.text),
                            )
                            .with_primary(h.path.span, "expected a file whose root is `structs`"),
                        ),
                        None => {}
                    }
                }
            }
        }
    }

    /// A new struct scope below `ctx.structs` with the definitions of `items` and `extra`.
    pub(super) fn struct_scope(
        &mut self,
        ctx: &Ctx<'a>,
        items: &'a [StructItem],
        extra: Vec<(String, &'a StructDef, Rc<Subst>)>,
    ) -> Rc<StructScope<'a>> {
        let mut defs = Vec::new();
        self.collect_structs(ctx, items, &mut defs, &mut Vec::new());
        if defs.is_empty() && extra.is_empty() {
            return ctx.structs.clone();
        }
        let mut entries: Vec<StructEntry<'a>> = Vec::new();
        let own = defs.len();
        let all = defs
            .into_iter()
            .map(|d| {
                let name = ctx
                    .subst
                    .get(&d.name.text)
                    .cloned()
                    .unwrap_or_else(|| d.name.text.clone());
                (name, d, ctx.subst.clone())
            })
            .chain(extra);
        for (k, (name, def, subst)) in all.enumerate() {
            if let Some(first) = entries.iter().find(|e| e.name == name) {
                let first_span = first.def.name.span;
                if shape(first.def) == shape(def) {
                    self.warn(
                        ctx,
                        Diagnostic::warning(
                            "struct-redefined",
                            format!("struct `{name}` is defined again, with the same fields"),
                        )
                        .with_primary(def.name.span, "redefined here")
                        .with_secondary(first_span, "first defined here"),
                    );
                } else if k < own {
                    // GPI-Space: a struct defined twice in one scope with different fields.
                    self.error(
                        Diagnostic::error(
                            "struct_redefined",
                            format!("struct `{name}` is defined again with different fields"),
                        )
                        .with_primary(def.name.span, "redefined here")
                        .with_secondary(first_span, "first defined here")
                        .with_note(format!(
                            "help: rename one of the two structs `{name}`, or give them the same fields"
                        )),
                    );
                } else {
                    self.warn(
                        ctx,
                        Diagnostic::warning(
                            "struct-redefined",
                            format!("struct `{name}` is defined again, differently; the first definition is used"),
                        )
                        .with_primary(def.name.span, "redefined here")
                        .with_secondary(first_span, "first defined here"),
                    );
                }
                continue;
            }
            if let Some((scope, i)) = find_struct(&ctx.structs, &name) {
                let outer = scope.entries[i].def;
                if shape(outer) != shape(def) {
                    self.warn(
                        ctx,
                        Diagnostic::warning(
                            "shadowed-struct",
                            format!("struct `{name}` shadows a different struct of the same name"),
                        )
                        .with_primary(def.name.span, "this definition")
                        .with_secondary(outer.name.span, "shadows this one"),
                    );
                }
            }
            entries.push(StructEntry {
                name,
                def,
                subst,
                state: RefCell::new(Resolve::Todo),
            });
        }
        let scope = Rc::new(StructScope {
            parent: Some(ctx.structs.clone()),
            entries,
        });
        // Resolve every definition now so that errors in unused structs are reported too.
        for i in 0..scope.entries.len() {
            self.resolve_entry(&scope, i);
        }
        scope
    }

    pub(super) fn resolve_entry(&mut self, scope: &Rc<StructScope<'a>>, i: usize) -> Type {
        let entry = &scope.entries[i];
        let state = std::mem::replace(&mut *entry.state.borrow_mut(), Resolve::Busy);
        match state {
            Resolve::Done(t) => {
                *entry.state.borrow_mut() = Resolve::Done(t.clone());
                t
            }
            Resolve::Busy => {
                self.error(
                    Diagnostic::error(
                        "recursive_struct",
                        format!("struct `{}` contains itself", entry.name),
                    )
                    .with_primary(entry.def.name.span, "this struct is recursive"),
                );
                Type::Any
            }
            Resolve::Todo => {
                let t =
                    self.struct_type(entry.name.clone(), entry.def, scope, &entry.subst.clone());
                *scope.entries[i].state.borrow_mut() = Resolve::Done(t.clone());
                t
            }
        }
    }

    /// The type of a struct definition; `Any` (and `struct_too_deep`, once) when structs
    /// nest deeper than [`MAX_STRUCT_DEPTH`].
    pub(super) fn struct_type(
        &mut self,
        name: String,
        def: &'a StructDef,
        scope: &Rc<StructScope<'a>>,
        subst: &Rc<Subst>,
    ) -> Type {
        if self.struct_depth >= MAX_STRUCT_DEPTH {
            if !self.struct_depth_reported {
                self.struct_depth_reported = true;
                self.error(
                    Diagnostic::error(
                        "struct_too_deep",
                        format!("structs nested deeper than {MAX_STRUCT_DEPTH} levels"),
                    )
                    .with_primary(def.name.span, "the limit is crossed here")
                    .with_note("flatten the type: fields of struct type nest it one level"),
                );
            }
            return Type::Any;
        }
        self.struct_depth += 1;
        let t = self.struct_type_fields(name, def, scope, subst);
        self.struct_depth -= 1;
        t
    }

    pub(super) fn struct_type_fields(
        &mut self,
        name: String,
        def: &'a StructDef,
        scope: &Rc<StructScope<'a>>,
        subst: &Rc<Subst>,
    ) -> Type {
        let mut fields: Vec<(Arc<str>, Type)> = Vec::new();
        let mut spans: Vec<Span> = Vec::new();
        for f in &def.fields {
            let (fname, ty) = match f {
                FieldDecl::Field { name, ty, .. } => (name, self.resolve_type_in(ty, scope, subst)),
                FieldDecl::Struct(sd) => {
                    let n = subst
                        .get(&sd.name.text)
                        .cloned()
                        .unwrap_or_else(|| sd.name.text.clone());
                    (&sd.name, self.struct_type(n, sd, scope, subst))
                }
            };
            if let Some(i) = fields.iter().position(|(n, _)| **n == *fname.text) {
                let first = spans[i];
                self.error(
                    Diagnostic::error(
                        "duplicate_field",
                        format!("struct `{name}` has two fields named `{}`", fname.text),
                    )
                    .with_primary(fname.span, "duplicate field")
                    .with_secondary(first, "first declared here"),
                );
                continue;
            }
            if !valid_name(&fname.text) {
                self.error(
                    Diagnostic::error(
                        "invalid_name",
                        format!("`{}` is not a valid field name", fname.text),
                    )
                    .with_primary(fname.span, "names match [A-Za-z_][A-Za-z0-9_]*"),
                );
            }
            self.facts.symbols.push(Symbol {
                kind: SymbolKind::Field,
                name: fname.text.clone(),
                span: fname.span,
                ty: Some(ty.clone()),
            });
            fields.push((Arc::from(fname.text.as_str()), ty));
            spans.push(fname.span);
        }
        let st = StructType {
            name: Arc::from(name.as_str()),
            fields,
        };
        if !self.structs.contains(&st) {
            self.structs.push(st.clone());
        }
        let t = Type::Struct(Arc::new(st));
        self.facts.symbols.push(Symbol {
            kind: SymbolKind::Struct,
            name: def.name.text.clone(),
            span: def.name.span,
            ty: Some(t.clone()),
        });
        t
    }

    pub(super) fn resolve_type_in(
        &mut self,
        ty: &Name,
        scope: &Rc<StructScope<'a>>,
        subst: &Subst,
    ) -> Type {
        let n = subst.get(&ty.text).map_or(ty.text.as_str(), String::as_str);
        if let Some(t) = Type::from_name(n) {
            return t;
        }
        if let Some((s, i)) = find_struct(scope, n) {
            let t = self.resolve_entry(&s, i);
            self.facts.references.push(Reference {
                kind: SymbolKind::Struct,
                name: n.to_string(),
                span: ty.span,
                target: s.entries[i].def.name.span,
                ty: Some(t.clone()),
            });
            return t;
        }
        let msg = if n == ty.text {
            format!("unknown type `{n}`")
        } else {
            format!("unknown type `{n}` (for `{}`)", ty.text)
        };
        // GPI-Space keeps undeclared type names as opaque names (its own tests give places
        // the type `t`); so do we, but we say so: a typo in a type name is visible, and an
        // error under `--Werror`. The opaque type accepts any value.
        let d = Diagnostic::warning("unknown-type", msg)
            .with_primary(
                ty.span,
                "no built-in or struct type of this name is in scope",
            )
            .with_note("the type is treated as opaque: any value is accepted")
            .with_notes(did_you_mean(
                n,
                type_names(scope).iter().map(String::as_str),
            ));
        self.diags.push((d, None));
        Type::Any
    }

    pub(super) fn resolve_type(&mut self, ctx: &Ctx<'a>, ty: &Name) -> Type {
        let scope = ctx.structs.clone();
        self.resolve_type_in(ty, &scope, &ctx.subst.clone())
    }

    // ---------------------------------------------------------------- properties

    pub(super) fn properties(
        &mut self,
        ctx: &Ctx<'a>,
        items: &'a [PropertiesItem],
    ) -> Vec<Property> {
        let mut out: Vec<(Property, Span)> = Vec::new();
        self.flatten(ctx, items, "", &mut out, &mut Vec::new());
        out.into_iter().map(|(p, _)| p).collect()
    }

    pub(super) fn flatten(
        &mut self,
        ctx: &Ctx<'a>,
        items: &'a [PropertiesItem],
        prefix: &str,
        out: &mut Vec<(Property, Span)>,
        stack: &mut Vec<FileId>,
    ) {
        for item in items {
            match item {
                PropertiesItem::Property { key, value, span } => {
                    let full = format!("{prefix}{}", key.text);
                    let value = value
                        .as_ref()
                        .map_or(String::new(), |v| v.text.trim().to_string());
                    if let Some(rest) = full.strip_prefix("pnetc.") {
                        let known = rest == "search_path"
                            || rest
                                .strip_prefix("warning.")
                                .is_some_and(|w| canonical(w).is_some());
                        if !known {
                            self.warn(
                                ctx,
                                Diagnostic::warning(
                                    "property-unknown",
                                    format!("unknown property `{full}`"),
                                )
                                .with_primary(key.span, "pnetc does not know this property"),
                            );
                        }
                    }
                    if let Some(i) = out.iter().position(|(p, _)| p.key == full) {
                        let first = out[i].1;
                        self.warn(
                            ctx,
                            Diagnostic::warning(
                                "property-overwritten",
                                format!("property `{full}` is set again"),
                            )
                            .with_primary(*span, "overwrites the earlier value")
                            .with_secondary(first, "first set here"),
                        );
                        out.remove(i);
                    }
                    out.push((Property { key: full, value }, *span));
                }
                PropertiesItem::Group(g) => {
                    let p = match &g.name {
                        Some(n) => format!("{prefix}{}.", n.text),
                        None => prefix.to_string(),
                    };
                    self.flatten(ctx, &g.items, &p, out, stack);
                }
                PropertiesItem::Include(h) => {
                    let Some((target, root)) = self.include(ctx, h) else {
                        continue;
                    };
                    if stack.contains(&target) {
                        self.include_cycle(h);
                        continue;
                    }
                    match root {
                        Root::Props(p) => {
                            let pre = match &p.name {
                                Some(n) => format!("{prefix}{}.", n.text),
                                None => prefix.to_string(),
                            };
                            stack.push(target);
                            self.flatten(ctx, &p.items, &pre, out, stack);
                            stack.pop();
                        }
                        _ => self.warn(
                            ctx,
                            Diagnostic::warning(
                                "unexpected-element",
                                format!("`{}` is not a `props` file; ignored", h.path.text),
                            )
                            .with_primary(h.path.span, "expected a file whose root is `props`"),
                        ),
                    }
                }
            }
        }
    }
}
