//! A `<defun>`: its ports, structs, properties and body (expression, module or net).

use super::*;

impl<'a> Elab<'a> {
    // ---------------------------------------------------------------- defun

    /// The scope inside a defun (its properties' warning settings, its structs) and its
    /// properties: the first part of [`Elab::defun`], also the scope of the root net's
    /// transitions elaborated alone ([`transition::transition_query`]).
    pub(super) fn defun_scope(
        &mut self,
        outer: &Ctx<'a>,
        d: &'a Defun,
    ) -> (Ctx<'a>, Vec<Property>) {
        let mut ctx = outer.clone();
        ctx.depth += 1;
        // properties first: they may change the warnings of this scope
        let properties = self.properties(&ctx, &d.properties);
        let mut ov = (*ctx.overrides).clone();
        for p in &properties {
            if let Some(w) = p.key.strip_prefix("pnetc.warning.").and_then(canonical) {
                match p.value.as_str() {
                    "true" | "1" | "yes" | "on" => ov.push((w, true)),
                    "false" | "0" | "no" | "off" => ov.push((w, false)),
                    _ => {}
                }
            }
        }
        ctx.overrides = Rc::new(ov);
        ctx.structs = self.struct_scope(&ctx, &d.structs, Vec::new());
        (ctx, properties)
    }

    pub(super) fn defun(&mut self, outer: &Ctx<'a>, d: &'a Defun, label: &str) -> ElabFn<'a> {
        let (ctx, properties) = self.defun_scope(outer, d);

        // ports
        let mut ports: Vec<Port> = Vec::new();
        let mut port_spans: Vec<Span> = Vec::new();
        let mut place_refs: Vec<(usize, bool, bool, &'a Name)> = Vec::new();
        for p in &d.ports {
            let ty = self.resolve_type(&ctx, &p.ty);
            self.facts.symbols.push(Symbol {
                kind: SymbolKind::Port,
                name: p.name.text.clone(),
                span: p.name.span,
                ty: Some(ty.clone()),
            });
            if !valid_name(&p.name.text) {
                self.error(
                    Diagnostic::error(
                        "invalid_name",
                        format!("`{}` is not a valid port name", p.name.text),
                    )
                    .with_primary(p.name.span, "names match [A-Za-z_][A-Za-z0-9_]*"),
                );
            }
            let dir = match p.dir {
                PortDirDecl::In => PortDir::In,
                PortDirDecl::Out => PortDir::Out,
                PortDirDecl::InOut => PortDir::InOut,
                PortDirDecl::Tunnel => PortDir::Tunnel,
            };
            let idx = match ports.iter().position(|q| q.name == p.name.text) {
                None => {
                    ports.push(Port {
                        name: p.name.text.clone(),
                        dir,
                        ty,
                        place: None,
                        span: sspan(p.span),
                    });
                    port_spans.push(p.name.span);
                    ports.len() - 1
                }
                Some(i) => {
                    let merge = matches!(
                        (ports[i].dir, dir),
                        (PortDir::In, PortDir::Out) | (PortDir::Out, PortDir::In)
                    );
                    if !merge {
                        self.error(
                            Diagnostic::error(
                                "duplicate_port",
                                format!("duplicate port `{}`", p.name.text),
                            )
                            .with_primary(p.name.span, "declared again here")
                            .with_secondary(port_spans[i], "first declared here"),
                        );
                        continue;
                    }
                    if ports[i].ty != ty && ty != Type::Any && ports[i].ty != Type::Any {
                        self.error(
                            Diagnostic::error(
                                "port_type_mismatch",
                                format!(
                                    "the in and the out port `{}` have different types: `{}` and `{}`",
                                    p.name.text, ports[i].ty, ty
                                ),
                            )
                            .with_primary(p.ty.span, "this type")
                            .with_secondary(port_spans[i], "differs from this port's"),
                        );
                    }
                    ports[i].dir = PortDir::InOut;
                    i
                }
            };
            if let Some(place) = &p.place {
                let (i, o) = match dir {
                    PortDir::In => (true, false),
                    PortDir::Out => (false, true),
                    PortDir::InOut => (true, true),
                    PortDir::Tunnel => (false, false),
                };
                place_refs.push((idx, i, o, place));
            }
        }
        let sigs = port_sigs(&ports);

        // memory buffers and transfers
        let mut buffers: Vec<MemoryBuffer> = Vec::new();
        let mut buffer_spans: Vec<Span> = Vec::new();
        for b in &d.memory_buffers {
            if let Some(i) = ports.iter().position(|p| p.name == b.name.text) {
                self.error(
                    Diagnostic::error(
                        "duplicate_memory_buffer",
                        format!("memory buffer `{}` has the name of a port", b.name.text),
                    )
                    .with_primary(b.name.span, "this buffer")
                    .with_secondary(port_spans[i], "the port"),
                );
                continue;
            }
            if let Some(i) = buffers.iter().position(|x| x.name == b.name.text) {
                self.error(
                    Diagnostic::error(
                        "duplicate_memory_buffer",
                        format!("duplicate memory buffer `{}`", b.name.text),
                    )
                    .with_primary(b.name.span, "declared again here")
                    .with_secondary(buffer_spans[i], "first declared here"),
                );
                continue;
            }
            let size = match &b.size {
                Some(s) => self.lower_text(
                    s,
                    &sigs,
                    Mode::Value,
                    format!("size of memory buffer {} of {label}", b.name.text),
                    Some(Type::ULong),
                ),
                None => {
                    self.error(
                        Diagnostic::error(
                            "missing_size",
                            format!("memory buffer `{}` has no size", b.name.text),
                        )
                        .with_primary(b.name.span, "add a `size` element"),
                    );
                    CodeId(0)
                }
            };
            let alignment = b.alignment.as_ref().map(|a| {
                self.lower_text(
                    a,
                    &sigs,
                    Mode::Value,
                    format!("alignment of memory buffer {} of {label}", b.name.text),
                    Some(Type::ULong),
                )
            });
            buffers.push(MemoryBuffer {
                name: b.name.text.clone(),
                read_only: b.read_only,
                size,
                alignment,
                span: sspan(b.span),
            });
            buffer_spans.push(b.name.span);
        }
        let mut transfers = Vec::new();
        for t in &d.memory_transfers {
            let kind = match t.kind {
                TransferKindDecl::Get => TransferKind::Get,
                TransferKindDecl::Put => TransferKind::Put,
                TransferKindDecl::GetPut => TransferKind::GetPut,
            };
            let part = |e: &mut Self, text: &Option<MappedText>, what: &str| match text {
                Some(x) => e.lower_text(
                    x,
                    &sigs,
                    Mode::Value,
                    format!("{what} of memory transfer of {label}"),
                    None,
                ),
                None => {
                    e.error(
                        Diagnostic::error(
                            "missing_range",
                            format!("memory transfer without `{what}`"),
                        )
                        .with_primary(t.span, format!("add a `{what}` element")),
                    );
                    CodeId(0)
                }
            };
            let global = part(self, &t.global, "global");
            let local = part(self, &t.local, "local");
            transfers.push(MemoryTransfer {
                kind,
                global,
                local,
                allow_empty_ranges: t.allow_empty_ranges,
                not_modified_in_module_call: t.not_modified_in_module_call,
                span: sspan(t.span),
            });
        }

        // Memory buffers and transfers belong to module calls (GPI-Space: only in a defun
        // whose body is a `module` or `modules`).
        if !matches!(
            d.body,
            None | Some(DefunBody::Module(_)) | Some(DefunBody::Modules(_))
        ) {
            let what = match d.body {
                Some(DefunBody::Net(_)) => "a net",
                _ => "an expression",
            };
            for b in &d.memory_buffers {
                self.error(
                    Diagnostic::error(
                        "memory_buffer_for_non_module",
                        format!(
                            "memory buffer `{}` in `{label}`, whose body is {what}",
                            b.name.text
                        ),
                    )
                    .with_primary(b.name.span, "this buffer")
                    .with_note(
                        "help: memory buffers are for module calls: remove it or make the body a `module`",
                    ),
                );
            }
            for t in &d.memory_transfers {
                self.error(
                    Diagnostic::error(
                        "memory_transfer_for_non_module",
                        format!("memory transfer in `{label}`, whose body is {what}"),
                    )
                    .with_primary(t.span, "this transfer")
                    .with_note(
                        "help: memory transfers are for module calls: remove it or make the body a `module`",
                    ),
                );
            }
        }
        let requires = requires(&d.requires);
        let conditions = self.parse_conditions(&d.conditions);

        let mut bindings = Vec::new();
        let mut scope_places = Vec::new();
        let body = match &d.body {
            Some(DefunBody::Expression(text)) => {
                let (e, bad) = self.parse_expr(text);
                let before = self.diags.len();
                let name = format!("expression of {label}");
                let code = self.lower(&e, bad, &sigs, Mode::Expression, name, None);
                // A plugin-creating transition gets its output (the plugin id) from the engine.
                if properties.iter().any(|p| p.key == "gspc.we.plugin.create") {
                    let mut i = before;
                    while i < self.diags.len() {
                        if self.diags[i].0.code == "missing_binding" {
                            self.diags.remove(i);
                        } else {
                            i += 1;
                        }
                    }
                }
                Body::Expression(code)
            }
            Some(DefunBody::Module(m)) => {
                Body::Module(self.module(&ctx, m, &ports, &buffers, &sigs, label))
            }
            Some(DefunBody::Modules(ms)) => {
                self.check_modules(ms);
                let modules = ms
                    .modules
                    .iter()
                    .map(|m| self.module(&ctx, m, &ports, &buffers, &sigs, label))
                    .collect();
                Body::Modules {
                    preferences: ms.preferences.iter().map(|p| p.text.clone()).collect(),
                    modules,
                }
            }
            Some(DefunBody::Net(n)) => {
                let net = self.net(&ctx, n);
                scope_places = self.net_places.clone();
                // the last place of each name (a few ports: searched, not hashed; the net
                // may have thousands of places)
                let by_name: Option<HashMap<&str, usize>> = (place_refs.len() > 8).then(|| {
                    net.places
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (p.name.as_str(), i))
                        .collect()
                });
                let place_index = |name: &str| match &by_name {
                    Some(m) => m.get(name).copied(),
                    None => net.places.iter().rposition(|p| p.name == name),
                };
                let mut tunneled = vec![false; net.places.len()];
                for &(idx, i, o, place) in &place_refs {
                    match place_index(place.text.as_str()) {
                        Some(pi) => {
                            if let Some(sym) = self.net_places.get(pi) {
                                self.facts.references.push(Reference {
                                    kind: SymbolKind::Place,
                                    name: place.text.clone(),
                                    span: place.span,
                                    target: sym.span,
                                    ty: sym.ty.clone(),
                                });
                            }
                            let port = &mut ports[idx];
                            if port.ty != net.places[pi].ty
                                && port.ty != Type::Any
                                && net.places[pi].ty != Type::Any
                            {
                                let (pt, plt) =
                                    (port.ty.to_string(), net.places[pi].ty.to_string());
                                self.error(
                                    Diagnostic::error(
                                        "connection_type_mismatch",
                                        format!("port `{}` of type `{pt}` is bound to place `{}` of type `{plt}`", port.name, place.text),
                                    )
                                    .with_primary(place.span, "types differ")
                                    .with_secondary(Span::new(place.span.file, net.places[pi].span.start, net.places[pi].span.end), "the place"),
                                );
                            }
                            if port.place.is_none() {
                                port.place = Some(PlaceId::from(pi));
                            }
                            if port.dir == PortDir::Tunnel {
                                tunneled[pi] = true;
                            }
                            bindings.push((PortId::from(idx), i, o, PlaceId::from(pi)));
                        }
                        None => {
                            self.meant_place(&place.text, &net.places);
                            self.error(
                                Diagnostic::error(
                                    "unknown_place",
                                    format!(
                                        "port `{}` is bound to the unknown place `{}`",
                                        ports[idx].name, place.text
                                    ),
                                )
                                .with_primary(place.span, "no such place in this defun's net")
                                .with_notes(did_you_mean(
                                    &place.text,
                                    net.places.iter().map(|p| p.name.as_str()),
                                )),
                            )
                        }
                    }
                }
                let mut used = vec![false; net.places.len()];
                for &(_, _, _, pl) in &bindings {
                    used[pl.index()] = true;
                }
                // the places of the root net's transitions kept apart ([`Elab::absorb_lite`])
                let lite_places = std::mem::take(&mut self.lite_places);
                let lite_runs = std::mem::take(&mut self.lite_runs);
                let mut runs = lite_runs.iter().peekable();
                for (ti, t) in net.transitions.iter().enumerate() {
                    let lite = match runs.next_if(|(i, _)| *i == ti) {
                        Some((_, run)) => &lite_places[run.clone()],
                        None => &[],
                    };
                    for p in lite {
                        used[p.index()] = true;
                    }
                    let (conns, maps) = (&t.connections, &t.place_map);
                    for c in conns {
                        used[c.place.index()] = true;
                    }
                    for m in maps {
                        used[m.1.index()] = true;
                    }
                    if conns.is_empty()
                        && lite.is_empty()
                        && !self.misnamed.contains(&t.span)
                        && maps.is_empty()
                        && t.responses.is_empty()
                        && t.eureka_ports.is_empty()
                    {
                        let span = Span::new(FileId(t.span.file.0), t.span.start, t.span.end);
                        self.warn(
                            &ctx,
                            Diagnostic::warning(
                                "independent-transition",
                                format!("transition `{}` is connected to no place", t.name),
                            )
                            .with_primary(span, "this transition"),
                        );
                    }
                }
                for (pi, p) in net.places.iter().enumerate() {
                    // An unconnected `shared_sink` place is not independent (GPI-Space).
                    if !used[pi]
                        && !p.is_virtual
                        && !p.shared_sink
                        && !self.misnamed.contains(&p.span)
                    {
                        let span = Span::new(FileId(p.span.file.0), p.span.start, p.span.end);
                        self.warn(
                            &ctx,
                            Diagnostic::warning(
                                "independent-place",
                                format!("place `{}` is connected to nothing", p.name),
                            )
                            .with_primary(span, "this place"),
                        );
                    }
                }
                for (pi, p) in net.places.iter().enumerate() {
                    if p.is_virtual && !tunneled[pi] {
                        let span = Span::new(FileId(p.span.file.0), p.span.start, p.span.end);
                        self.warn(
                            &ctx,
                            Diagnostic::warning(
                                "virtual-place-not-tunneled",
                                format!("virtual place `{}` is not tunneled", p.name),
                            )
                            .with_primary(span, "no tunnel port of the defun is bound to it"),
                        );
                    }
                }
                Body::Net(net)
            }
            None => Body::Net(Net::default()),
        };
        let mut scope_structs = Vec::new();
        let mut sc = Some(ctx.structs.clone());
        while let Some(x) = sc {
            for e in &x.entries {
                if !scope_structs.iter().any(|s: &Symbol| s.name == e.name) {
                    scope_structs.push(Symbol {
                        kind: SymbolKind::Struct,
                        name: e.name.clone(),
                        span: e.def.name.span,
                        ty: None,
                    });
                }
            }
            sc = x.parent.clone();
        }
        self.facts.scopes.push(Scope {
            span: d.span,
            ports: ports
                .iter()
                .zip(&port_spans)
                .map(|(p, &span)| Symbol {
                    kind: SymbolKind::Port,
                    name: p.name.clone(),
                    span,
                    ty: Some(p.ty.clone()),
                })
                .collect(),
            places: scope_places,
            structs: scope_structs,
        });
        if let Some(n) = &d.name {
            self.facts.symbols.push(Symbol {
                kind: SymbolKind::Defun,
                name: n.text.clone(),
                span: n.span,
                ty: None,
            });
        }
        let function = Function {
            name: d.name.as_ref().map(|n| n.text.clone()),
            ports,
            body,
            requires,
            properties,
            memory_buffers: buffers,
            memory_transfers: transfers,
            span: sspan(d.span),
        };
        ElabFn {
            function,
            conditions,
            overrides: ctx.overrides.clone(),
            bindings,
            port_names: port_spans,
            _ctx: std::marker::PhantomData,
        }
    }
}
