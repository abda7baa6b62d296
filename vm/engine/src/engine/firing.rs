//! Firing: taking the inputs, running expressions (or handing out module calls, or starting
//! child nets), putting the outputs, completing tasks and finishing child nets.

use super::*;

impl State {
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
    pub(super) fn refire(
        &mut self,
        prog: &Program,
        i: u32,
        t: u32,
        budget: u64,
    ) -> Result<u64, RunError> {
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
    pub(super) fn fire_fast(
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

    pub(super) fn fire(&mut self, prog: &Program, i: u32, t: usize) -> Result<Step, RunError> {
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
        // Shareds of consumed tokens, dirty marks, generator refills.
        self.release.clear();
        let consumed: Vec<usize> = match info.kind {
            Kind::Expr(_) => Vec::new(),
            _ => info
                .takes
                .iter()
                .filter(|tk| tk.consume)
                .map(|tk| tk.place)
                .collect(),
        };
        let vals = std::mem::take(&mut self.vals);
        let mut release = std::mem::take(&mut self.release);
        let r = rules::after_take(
            &mut Fire { st: self, prog },
            prog.bundle,
            &i,
            &info.takes,
            &vals[n_counts..],
            &mut release,
        );
        self.vals = vals;
        self.release = release;
        r?;

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
                rules::child_inputs(&mut Fire { st: self, prog }, tf, &c, vals);
                self.release_consumed(prog, i)?;
                Ok(Step::Fired)
            }
        }
    }

    /// The counts and takes of a firing of transition `t` of instance `i` (the general path,
    /// [`rules::take_binding`]): the count values, then the taken tokens, into `self.vals`
    /// (by port); returns the number of counts.
    pub(super) fn take_inputs(
        &mut self,
        prog: &Program,
        i: u32,
        t: usize,
    ) -> Result<usize, RunError> {
        let inst = self.inst_mut(i);
        let info = &prog.net(inst.func).trans[t];
        // The binding: cached for conditions, else the front tokens.
        if info.condition.is_none() {
            default_binding(info, &mut inst.binding[t], &[]);
        }
        let binding = std::mem::take(&mut inst.binding[t]);
        let mut vals = std::mem::take(&mut self.vals);
        let r = rules::take_binding(
            &mut Fire { st: self, prog },
            &i,
            &info.counts,
            &info.takes,
            &binding,
            info.multi,
            &mut vals,
        );
        self.inst_mut(i).binding[t] = binding;
        self.vals = vals;
        r
    }

    /// Evaluates a module function's memory buffers and transfers over its input frame
    /// (`self.vals`).
    pub(super) fn eval_memory(
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
    pub(super) fn eval_in_frame(
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
    pub(super) fn fire_expr(
        &mut self,
        prog: &Program,
        i: u32,
        t: usize,
        id: usize,
    ) -> Result<Step, RunError> {
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
    pub(super) fn take_into_frame(
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
    pub(super) fn run_expr(
        &mut self,
        prog: &Program,
        i: u32,
        t: usize,
        id: usize,
    ) -> Result<Step, RunError> {
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
            let port = &tf.ports[o.port.index()];
            let v = out_value(&mut self.frame, o.port, port, o.last)?;
            self.output(prog, i, o, port, v)?;
        }
        self.release_consumed(prog, i).map(|()| Step::Fired)
    }

    /// Puts an output port's value (out: the value; out-many: each list element).
    pub(super) fn output(
        &mut self,
        prog: &Program,
        i: u32,
        o: &Out,
        port: &pnet_bundle::Port,
        v: Value,
    ) -> Result<(), RunError> {
        let func = self.instance(i).func;
        let pty = &prog.net_ir(func).places[o.place].ty;
        output_tokens(port, pty, o.many, v, |x| self.put(prog, i, o.place, x))
    }

    /// Releases the shareds in `self.release` and puts the clean-up values of those that died.
    #[inline]
    pub(super) fn release_consumed(&mut self, prog: &Program, i: u32) -> Result<(), RunError> {
        if self.release.is_empty() {
            return Ok(());
        }
        self.release_shareds(prog, i)
    }

    #[inline(never)]
    pub(super) fn release_shareds(&mut self, prog: &Program, i: u32) -> Result<(), RunError> {
        let release = std::mem::take(&mut self.release);
        let mut dead = std::mem::take(&mut self.dead);
        let r = rules::release_shareds(
            &mut Fire { st: self, prog },
            prog.bundle,
            &i,
            &release,
            &mut dead,
        );
        self.release = release;
        self.release.clear();
        self.dead = dead;
        self.dead.clear();
        r
    }

    pub(super) fn complete(
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
    pub(super) fn returned(&mut self, prog: &Program, i: u32, consumed: &[usize]) {
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
    pub(super) fn discard(&mut self, prog: &Program, rec: TaskRecord) -> Result<(), RunError> {
        let i = rec.instance;
        self.returned(prog, i, &rec.consumed);
        self.release = rec.release;
        self.release_consumed(prog, i)
    }

    /// A child net is done: its out ports' tokens go out through the parent's connections.
    pub(super) fn finish_child(&mut self, prog: &Program, c: u32) -> Result<(), RunError> {
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
        let t = link.transition.index();
        let info = &prog.net(func).trans[t];
        self.returned(prog, i, &link.consumed);
        rules::child_outputs(
            &mut Fire { st: self, prog },
            prog.bundle,
            &i,
            t,
            info.outs.iter().map(|o| (o.port, o.place, o.many, o.last)),
            |cp| child.up.iter().any(|&(q, _, _)| q as usize == cp),
            |cp, last| {
                if last {
                    child.marking[cp].take_all()
                } else {
                    child.marking[cp].iter().cloned().collect()
                }
            },
        )
        .map_err(|e| prog.context_in(e, func, t))?;
        self.release = release;
        self.release_consumed(prog, i)
    }
}

/// The error of a fast-path output port without a value.
#[cold]
#[inline(never)]
pub(super) fn fast_missing(prog: &Program, func: FunctionId, t: usize, port: PortId) -> RunError {
    let tf = prog
        .bundle
        .function(prog.net_ir(func).transitions[t].function);
    missing(&tf.ports[port.index()].name)
}

/// The error of a fast-path output value that does not fit its port.
#[cold]
#[inline(never)]
pub(super) fn fast_mismatch(
    prog: &Program,
    func: FunctionId,
    t: usize,
    port: PortId,
    v: &Value,
) -> RunError {
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

pub(super) fn missing(port: &str) -> RunError {
    RunError::new(RunErrorKind::MissingBinding {
        port: port.to_string(),
    })
}

/// The evaluator of codes: the runner (JIT) if there is one, else the interpreter.
/// The id of the response a `connect-response` answers: the `response_id` field of the
/// value on its `to` port.
pub(super) fn response_id(v: Option<&Value>, port: &str) -> Result<String, RunError> {
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
/// The value an out connection of an expression takes from the frame its code ran on: the
/// port's value (moved out of the frame for the port's `last` connection, else a copy), or
/// the missing-binding error. The engine's rule, also the explorer's.
#[inline]
pub fn out_value(
    frame: &mut [Option<Value>],
    id: PortId,
    port: &pnet_bundle::Port,
    last: bool,
) -> Result<Value, RunError> {
    let slot = &mut frame[id.index()];
    let v = if last { slot.take() } else { slot.clone() };
    v.ok_or_else(|| missing(&port.name))
}

/// The place of a child net's function an out port of its transition takes its tokens from
/// when the child ends (the port's own place), or the missing-binding error.
pub fn child_out_place(port: &pnet_bundle::Port) -> Result<PlaceId, RunError> {
    port.place.ok_or_else(|| missing(&port.name))
}

/// Puts an output port's value through `put`: an `out` port's value (it must fit the port's
/// type), an `out-many` port's list element by element (each must fit the place's type,
/// `place_ty`). The rule of the engine's firing and of the coloured explorer.
pub fn output_tokens(
    port: &pnet_bundle::Port,
    place_ty: &Type,
    many: bool,
    v: Value,
    mut put: impl FnMut(Value),
) -> Result<(), RunError> {
    if !fits(&v, &port.ty) {
        return Err(RunError::new(RunErrorKind::TypeMismatch {
            port: port.name.clone(),
            value: v.to_string(),
            ty: port.ty.to_string(),
        }));
    }
    if many {
        let Value::List(xs) = v else {
            return Err(RunError::new(RunErrorKind::TypeMismatch {
                port: port.name.clone(),
                value: v.to_string(),
                ty: "list".into(),
            }));
        };
        for x in xs {
            if !fits(&x, place_ty) {
                return Err(RunError::new(RunErrorKind::TypeMismatch {
                    port: port.name.clone(),
                    value: x.to_string(),
                    ty: place_ty.to_string(),
                }));
            }
            put(x);
        }
    } else {
        put(v);
    }
    Ok(())
}

/// Checks the transition's `connect-eureka` ports (each must hold a set of strings) and
/// appends the groups they name to `out`. The engine's rule, also the explorer's.
pub fn eureka_groups<'v>(
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

pub(super) struct Eval<'a> {
    pub(super) interp: &'a mut Interpreter,
    pub(super) runner: &'a mut Option<Box<dyn CodeRunner>>,
}

impl Eval<'_> {
    #[inline]
    pub(super) fn run(
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
    pub(super) fn run_bool(
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
    pub(super) fn run_effect(
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
pub(super) fn memory_ulong(
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
