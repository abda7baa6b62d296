//! `<modules>` and `<module>`: GPI-Space's rules, the module function, duplicates.

use super::*;

impl<'a> Elab<'a> {
    /// GPI-Space's rules of `<modules>`: `preferences` list at least one target, with no
    /// duplicates and valid names; every module has a target that is in the preferences, at
    /// most one module per target; with targets there are `preferences`; all modules share
    /// one `eureka-group` (or none).
    pub(super) fn check_modules(&mut self, ms: &pnet_syntax::xml::ModulesDecl) {
        let mut seen: Vec<&Name> = Vec::new();
        for t in &ms.preferences {
            if !valid_name(&t.text) {
                self.error(
                    Diagnostic::error(
                        "invalid_target_name",
                        format!("preference `{}` is not a valid target name", t.text),
                    )
                    .with_primary(t.span, "this target")
                    .with_note("help: a target name matches `[A-Za-z_][A-Za-z0-9_]*`"),
                );
            }
            if let Some(first) = seen.iter().find(|x| x.text == t.text) {
                self.error(
                    Diagnostic::error(
                        "duplicate_preference",
                        format!("target `{}` is listed twice in the preferences", t.text),
                    )
                    .with_primary(t.span, "listed again here")
                    .with_secondary(first.span, "first listed here")
                    .with_note("help: remove one of the two"),
                );
            } else {
                seen.push(t);
            }
        }
        if ms.preferences.is_empty() {
            let with_target = ms.modules.iter().find(|m| m.target.is_some());
            let mut d = Diagnostic::error(
                "missing_preferences",
                if with_target.is_some() {
                    "`modules` with targets need `preferences` that list at least one target"
                } else {
                    "`modules` need `preferences` that list at least one target"
                },
            )
            .with_primary(ms.span, "these modules");
            if let Some(t) = with_target.and_then(|m| m.target.as_ref()) {
                d = d.with_note(format!(
                    "help: add `<preferences><target>{}</target>...</preferences>`",
                    t.text
                ));
            }
            self.error(d);
        }
        let mut per_target: Vec<&Name> = Vec::new();
        for m in &ms.modules {
            let Some(t) = &m.target else {
                self.error(
                    Diagnostic::error(
                        "module_without_target",
                        format!("module `{}` in `modules` has no target", m.name.text),
                    )
                    .with_primary(m.tag, "this module")
                    .with_note("help: add `target=\"...\"` naming one of the preferences"),
                );
                continue;
            };
            if !ms.preferences.is_empty() && !ms.preferences.iter().any(|p| p.text == t.text) {
                self.error(
                    Diagnostic::error(
                        "target_not_in_preferences",
                        format!(
                            "the target `{}` of module `{}` is not in the preferences",
                            t.text, m.name.text
                        ),
                    )
                    .with_primary(t.span, "this target")
                    .with_note(format!(
                        "help: add `<target>{}</target>` to the preferences",
                        t.text
                    )),
                );
            }
            if let Some(first) = per_target.iter().find(|x| x.text == t.text) {
                self.error(
                    Diagnostic::error(
                        "duplicate_module_for_target",
                        format!("two modules for target `{}`", t.text),
                    )
                    .with_primary(t.span, "second module for this target")
                    .with_secondary(first.span, "first module for it"),
                );
            } else {
                per_target.push(t);
            }
        }
        let groups: Vec<Option<&str>> = ms
            .modules
            .iter()
            .map(|m| m.eureka_group.as_ref().map(|g| g.text.trim()))
            .collect();
        if let Some(k) = groups.iter().position(|g| *g != groups[0]) {
            self.error(
                Diagnostic::error(
                    "mismatching_eureka_group",
                    "the modules of one `modules` have different eureka groups",
                )
                .with_primary(ms.modules[k].tag, "this module's eureka group")
                .with_secondary(ms.modules[0].tag, "differs from this one's")
                .with_note("help: give every module the same `eureka-group`, or none"),
            );
        }
    }

    pub(super) fn module(
        &mut self,
        ctx: &Ctx<'a>,
        m: &'a ModuleDecl,
        ports: &[Port],
        buffers: &[MemoryBuffer],
        sigs: &[PortSig],
        label: &str,
    ) -> Module {
        let signature = match crate::signature::parse(&m.function.text) {
            Ok(s) => s,
            Err(msg) => {
                self.error(
                    Diagnostic::error("invalid_function_description", msg)
                        .with_primary(m.function.span, "expected `result? name (args)`"),
                );
                pnet_bundle::Signature {
                    result: None,
                    function: m.function.text.trim().to_string(),
                    args: Vec::new(),
                }
            }
        };
        if let Some(r) = &signature.result {
            match ports.iter().find(|p| &p.name == r) {
                Some(p) if p.dir.is_output() => {}
                // A memory buffer (GPI-Space): the module returns a pointer into it.
                None if buffers.iter().any(|b| &b.name == r) => {}
                Some(_) => self.error(
                    Diagnostic::error(
                        "unknown_port_in_function_description",
                        format!(
                            "the return port `{r}` of `{}` is not an output port",
                            signature.function
                        ),
                    )
                    .with_primary(m.function.span, "the result must be an out or inout port"),
                ),
                None => self.error(
                    Diagnostic::error(
                        "unknown_port_in_function_description",
                        format!(
                            "unknown return port `{r}` in the description of function `{}.{}`",
                            m.name.text, signature.function
                        ),
                    )
                    .with_primary(
                        m.function.span,
                        format!("`{r}` is not a port of this defun"),
                    )
                    .with_notes(did_you_mean(
                        r,
                        ports
                            .iter()
                            .filter(|p| p.dir.is_output())
                            .map(|p| p.name.as_str())
                            .chain(buffers.iter().map(|b| b.name.as_str())),
                    )),
                ),
            }
        }
        for a in &signature.args {
            if !ports.iter().any(|p| &p.name == a) && !buffers.iter().any(|b| &b.name == a) {
                self.error(
                    Diagnostic::error(
                        "unknown_port_in_function_description",
                        format!(
                            "unknown argument port `{a}` in the description of function `{}.{}`",
                            m.name.text, signature.function
                        ),
                    )
                    .with_primary(
                        m.function.span,
                        format!("`{a}` is neither a port nor a memory buffer of this defun"),
                    )
                    .with_notes(did_you_mean(
                        a,
                        ports
                            .iter()
                            .map(|p| p.name.as_str())
                            .chain(buffers.iter().map(|b| b.name.as_str())),
                    )),
                );
            }
        }
        let eureka_group = m.eureka_group.as_ref().map(|g| {
            self.lower_text(
                g,
                sigs,
                Mode::Value,
                format!("eureka group of {label}"),
                Some(Type::String),
            )
        });
        let module = Module {
            name: m.name.text.clone(),
            signature,
            target: m.target.as_ref().map(|t| t.text.clone()),
            pass_context: m.pass_context,
            require_function_unloads_without_rest: m.require_function_unloads_without_rest,
            require_module_unloads_without_rest: m.require_module_unloads_without_rest,
            eureka_group,
            cincludes: m.cincludes.iter().map(|h| h.path.text.clone()).collect(),
            ld_flags: m.ld.iter().map(|x| x.text.clone()).collect(),
            cxx_flags: m.cxx.iter().map(|x| x.text.clone()).collect(),
            code: m.code.as_ref().map(|c| c.text.clone()),
            span: sspan(m.span),
        };
        let arg_types: Vec<String> = module
            .signature
            .args
            .iter()
            .chain(module.signature.result.iter())
            .map(|a| {
                ports
                    .iter()
                    .find(|p| &p.name == a)
                    .map_or("buffer".to_string(), |p| format!("{:?}:{}", p.dir, p.ty))
            })
            .collect();
        let fingerprint = format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{}",
            module.signature,
            arg_types,
            module.cincludes,
            module.code,
            module.ld_flags,
            module.cxx_flags,
            module.target,
            module.pass_context
        );
        // Instantiations of one template with different types are different functions.
        let key_target = module.target.clone().unwrap_or_default();
        let mut subst: Vec<_> = ctx.subst.iter().collect();
        subst.sort();
        let function = format!("{}@{key_target}@{subst:?}", module.signature.function);
        self.externals.push(External {
            module: module.name.clone(),
            function,
            name: module.signature.function.clone(),
            fingerprint,
            span: m.tag,
            warning: ctx.override_for("duplicate-external-function"),
        });
        module
    }

    /// Reports module functions defined twice (once the whole workspace is elaborated: the
    /// first definition met is the one the others are compared with).
    pub(super) fn check_externals(&mut self) {
        let mut first: Vec<usize> = Vec::new();
        for k in 0..self.externals.len() {
            let x = &self.externals[k];
            let Some(&f) = first.iter().find(|&&f| {
                let y = &self.externals[f];
                y.module == x.module && y.function == x.function
            }) else {
                first.push(k);
                continue;
            };
            let y = &self.externals[f];
            let (first_span, differs) = (y.span, y.fingerprint != x.fingerprint);
            let (module, name, span, warning) = (&x.module, &x.name, x.span, x.warning);
            let d = if differs && self.build_modules {
                Diagnostic::error(
                    "duplicate_external_function",
                    format!(
                        "the external function `{module}.{name}` is defined twice, differently"
                    ),
                )
                .with_primary(span, "this definition")
                .with_secondary(first_span, "differs from this one")
            } else if differs {
                // GPI-Space: only an error when module code is generated.
                Diagnostic::warning(
                    "duplicate-external-function",
                    format!(
                        "the external function `{module}.{name}` is defined twice, differently"
                    ),
                )
                .with_primary(span, "this definition")
                .with_secondary(first_span, "differs from this one")
                .with_note("an error with `--build-modules`, where module code is generated")
            } else {
                Diagnostic::warning(
                    "duplicate-external-function",
                    format!("the external function `{module}.{name}` is defined twice"),
                )
                .with_primary(span, "this definition")
                .with_secondary(first_span, "repeats this one")
            };
            let o = if d.severity == pnet_syntax::Severity::Error {
                None
            } else {
                warning
            };
            self.diags.push((d, o));
        }
    }
}
