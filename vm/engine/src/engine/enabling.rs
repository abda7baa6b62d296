//! The search for an enabled transition and its binding: re-examining dirty transitions,
//! the binding search over the tokens a condition reads.

use super::*;

impl State {
    /// Re-examines dirty transitions and finishes child nets that are done.
    pub(super) fn refresh(&mut self, prog: &Program) -> Result<(), RunError> {
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
    pub(super) fn examine(&mut self, prog: &Program, i: u32) -> Result<(), RunError> {
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
}

/// Whether a transition is enabled; for conditions, also finds and caches the binding.
#[inline]
pub(super) fn enabled(
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
            || distinct_tokens(idx, |a, b| info.takes[e[a]].place == info.takes[e[b]].place);
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
        if !next_combination(idx, |k| inst.marking[info.takes[e[k]].place].len()) {
            return Ok(false);
        }
    }
}

/// Whether the combination `idx` (per take, the index of its token on its place) takes
/// distinct tokens: two takes from the same place (`same_place(a, b)`, `b < a`) use different
/// indices. The rule of the engine's binding search and of the explorer's enumeration.
#[inline]
pub fn distinct_tokens(idx: &[u32], same_place: impl Fn(usize, usize) -> bool) -> bool {
    (0..idx.len()).all(|a| (0..a).all(|b| !same_place(a, b) || idx[a] != idx[b]))
}

/// Advances `idx` to the next combination of token indices, the last take varying fastest
/// (token order: the combination the engine binds first is the first one a search meets);
/// `len(k)`: the number of tokens take `k` chooses from. `false` after the last combination
/// (`idx` is then all zeros again).
#[inline]
pub fn next_combination(idx: &mut [u32], len: impl Fn(usize) -> usize) -> bool {
    let mut k = idx.len();
    loop {
        if k == 0 {
            return false;
        }
        k -= 1;
        idx[k] += 1;
        if (idx[k] as usize) < len(k) {
            return true;
        }
        idx[k] = 0;
    }
}

/// Calls `visit` with every combination of token indices (per take, an index below its
/// `lens` entry) that takes distinct tokens (`same_place`, see [`distinct_tokens`]), in token
/// order (see [`next_combination`]). The enumeration of bindings the engine's
/// [`Engine::bindings`] and the coloured explorer (`pnet-verify`) share; nothing when some
/// take has no token.
pub fn for_each_combination<E>(
    lens: &[usize],
    same_place: impl Fn(usize, usize) -> bool,
    mut visit: impl FnMut(&[u32]) -> Result<(), E>,
) -> Result<(), E> {
    if lens.contains(&0) {
        return Ok(());
    }
    let mut idx = vec![0u32; lens.len()];
    loop {
        if distinct_tokens(&idx, &same_place) {
            visit(&idx)?;
        }
        if !next_combination(&mut idx, |k| lens[k]) {
            return Ok(());
        }
    }
}

/// Makes `frame` the input frame of a condition or an expression with `n` slots: each take's
/// token on its port's slot (`None`: the slot stays unbound, as for the explorer's unknown
/// module outputs) and each `number-of-tokens` port's count.
pub fn input_frame<'v>(
    frame: &mut Vec<Option<Value>>,
    n: usize,
    counts: &[(PortId, u64)],
    takes: impl IntoIterator<Item = (PortId, Option<&'v Value>)>,
) {
    crate::interp::reset_frame(frame, n);
    for (port, v) in takes {
        if let Some(s) = frame.get_mut(port.index()) {
            crate::interp::set_clone(s, v);
        }
    }
    for &(port, c) in counts {
        if let Some(s) = frame.get_mut(port.index()) {
            *s = Some(Value::ULong(c));
        }
    }
}

/// A binding of a transition: per take (in connection order), the port, the token's index
/// on its place and the token.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub takes: Vec<(PortId, usize, Value)>,
}

impl State {
    /// Every binding of transition `t` of instance `i` that enables it, in the order the
    /// binding search meets them (token order, the last take varying fastest): distinct
    /// tokens for takes from one place, the condition (with the `number-of-tokens` ports)
    /// holds. Empty for a dead transition. The places must hold their own tokens (no lent
    /// place-map tokens: the root, or a child that borrows none).
    pub(super) fn bindings(
        &mut self,
        prog: &Program,
        i: u32,
        t: usize,
    ) -> Result<Vec<Binding>, RunError> {
        let inst = self.instances[i as usize].as_ref().expect("live instance");
        let info = &prog.net(inst.func).trans[t];
        let mut out = Vec::new();
        if info.dead
            || info
                .takes
                .iter()
                .any(|tk| inst.marking[tk.place].is_empty())
        {
            return Ok(out);
        }
        let cond = info.condition.map(|c| (c, &prog.bundle.codes[c]));
        let mut eval = Eval {
            interp: &mut self.interp,
            runner: &mut self.runner,
        };
        let frame = &mut self.frame;
        let counts: Vec<(PortId, u64)> = info
            .counts
            .iter()
            .map(|&(port, p)| (port, inst.marking[p].len() as u64 + inst.in_flight[p]))
            .collect();
        let lens: Vec<usize> = info
            .takes
            .iter()
            .map(|tk| inst.marking[tk.place].len())
            .collect();
        for_each_combination(
            &lens,
            |a, b| info.takes[a].place == info.takes[b].place,
            |idx| {
                let token = |k: usize| inst.marking[info.takes[k].place].get(idx[k] as usize);
                if let Some((c, code)) = cond {
                    input_frame(
                        frame,
                        code.slots.len(),
                        &counts,
                        info.takes
                            .iter()
                            .enumerate()
                            .map(|(k, tk)| (tk.port, token(k))),
                    );
                    let id = pnet_bundle::CodeId::from(c);
                    if !eval
                        .run_bool(id, code, frame)
                        .map_err(|e| prog.context_in(e, inst.func, t))?
                    {
                        return Ok(());
                    }
                }
                out.push(Binding {
                    takes: info
                        .takes
                        .iter()
                        .enumerate()
                        .map(|(k, tk)| {
                            (tk.port, idx[k] as usize, token(k).cloned().expect("token"))
                        })
                        .collect(),
                });
                Ok(())
            },
        )?;
        Ok(out)
    }
}

/// Whether [`enabled`] resumes its search after the tokens known to fail (tests compare
/// with and without).
#[inline(always)]
pub(super) fn scan_cache_on() -> bool {
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
pub(super) fn default_binding(info: &TransInfo, binding: &mut [u32], fixed: &[(usize, u32)]) {
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
