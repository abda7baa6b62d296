//! The state of a job: net instances with their markings, in-flight counts, enabling
//! flags, cached bindings and dirty lists; putting and taking tokens (with place-map homes
//! and generator places).

use super::*;

pub(super) const NONE: u32 = u32::MAX;

/// How a place shared through a `place-map` changed (which of its transitions to mark).
#[derive(Clone, Copy, Debug)]
pub(super) enum Change {
    Put,
    Take,
    Count,
}

/// Instances `a` and `b` (different) mutably at once.
pub(super) fn two_mut(
    instances: &mut [Option<Instance>],
    a: u32,
    b: u32,
) -> (&mut Instance, &mut Instance) {
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
pub(super) struct Instance {
    pub(super) func: FunctionId,
    pub(super) marking: Vec<Tokens>,
    /// Per place: tokens consumed by tasks and child nets still running.
    pub(super) in_flight: Vec<u64>,
    /// Per place: index of the next generator value.
    pub(super) gen_next: Vec<u128>,
    pub(super) enabled: Vec<bool>,
    /// Per transition: the token index of each take (valid while enabled and not dirty).
    pub(super) binding: Vec<Vec<u32>>,
    /// Per transition whose condition reads one token and no counts: how many tokens at the
    /// front of that token's place are known to fail the condition, and the place's
    /// [`Tokens::removals`] then (see [`enabled`]).
    pub(super) scan: Vec<(u32, u64)>,
    pub(super) dirty_flag: Vec<bool>,
    pub(super) dirty: Vec<u32>,
    /// Per priority group (0 = highest): enabled transitions.
    pub(super) groups: Vec<Vec<u32>>,
    /// Per transition: position in its group, or `NONE`.
    pub(super) pos: Vec<u32>,
    pub(super) n_enabled: usize,
    /// Running tasks and child nets started here.
    pub(super) pending: u32,
    pub(super) parent: Option<ParentLink>,
    pub(super) ready_pos: u32,
    pub(super) in_dirty: bool,
    /// The places of this child net that a `place-map` makes places of an ancestor:
    /// (place here, home instance, home place). Their tokens (and in-flight counts) live at
    /// home; the slots here stay empty, except while [`State::swap_lent`] lends them here
    /// for a re-examination or the takes of a firing.
    pub(super) up: Vec<(u32, u32, u32)>,
    /// The places here that are homes of places of running descendants (the `up` entries
    /// pointing here): (place here, instance, its place). A change here marks their adjacent
    /// transitions too.
    pub(super) down: Vec<(u32, u32, u32)>,
    /// `up` or `down` is not empty: puts and takes here go through the homes and mark
    /// the other instances that see the place.
    pub(super) shares: bool,
}

impl Instance {
    /// Queues this instance (number `i`) for re-examination, once.
    #[inline]
    pub(super) fn queue(&mut self, i: u32, dirty_instances: &mut Vec<u32>) {
        if !self.in_dirty {
            self.in_dirty = true;
            dirty_instances.push(i);
        }
    }

    /// Takes enabled transition `t` (of priority group `g`) out of its group, after a
    /// re-examination found it disabled.
    pub(super) fn disable(&mut self, t: usize, g: usize) {
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
    pub(super) fn mark(&mut self, adj: &[Adj], put: bool) -> bool {
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
pub(super) struct ParentLink {
    pub(super) instance: u32,
    pub(super) transition: TransitionId,
    pub(super) consumed: Vec<usize>,
}

#[derive(Debug)]
pub(super) struct TaskRecord {
    pub(super) instance: u32,
    pub(super) transition: TransitionId,
    pub(super) consumed: Vec<usize>,
    pub(super) release: Vec<Value>,
    /// `connect-response`: the response port and the id of the response it answers.
    pub(super) responses: Vec<(PortId, String)>,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) instances: Vec<Option<Instance>>,
    pub(super) free: Vec<u32>,
    pub(super) ready: Vec<u32>,
    pub(super) dirty_instances: Vec<u32>,
    pub(super) rng: Rng,
    pub(super) interp: Interpreter,
    pub(super) runner: Option<Box<dyn CodeRunner>>,
    pub(super) frame: Vec<Option<Value>>,
    pub(super) vals: Vec<(PortId, Value)>,
    pub(super) idx: Vec<u32>,
    pub(super) release: Vec<Value>,
    pub(super) dead: Vec<Value>,
    pub(super) shared: SharedTable,
    pub(super) tasks: HashMap<u64, TaskRecord>,
    pub(super) next_task: u64,
    pub(super) stats: Stats,
    pub(super) max_firings: Option<u64>,
    /// Eureka groups named since the last `take_eurekas`.
    pub(super) eurekas: Vec<String>,
    /// Workflow responses answered since the last `take_responses`.
    pub(super) responses: Vec<(String, Value)>,
    pub(super) next_response: u64,
    /// The instance and transition the last step fired on the fast path, if it did.
    pub(super) last_fast: Option<(u32, u32)>,
}

impl State {
    pub(super) fn instance(&self, i: u32) -> &Instance {
        self.instances[i as usize].as_ref().expect("live instance")
    }

    pub(super) fn new_instance(
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
        rules::initial_tokens(&mut Fire { st: self, prog }, prog.bundle, &i)?;
        Ok(i)
    }

    pub(super) fn inst_mut(&mut self, i: u32) -> &mut Instance {
        self.instances[i as usize].as_mut().expect("live instance")
    }

    /// Queues an instance for re-examination (dirty transitions, completion).
    pub(super) fn touch(&mut self, i: u32) {
        let inst = self.instances[i as usize].as_mut().expect("live instance");
        inst.queue(i, &mut self.dirty_instances);
    }

    /// Puts a token, counting its shareds if the place tracks them.
    #[inline]
    pub(super) fn put(&mut self, prog: &Program, i: u32, p: usize, v: Value) {
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
    pub(super) fn put_shared(&mut self, prog: &Program, i: u32, p: usize, v: Value) {
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
    pub(super) fn home(&self, i: u32, p: usize) -> (u32, usize) {
        let inst = self.instance(i);
        match inst.up.iter().find(|&&(q, _, _)| q as usize == p) {
            Some(&(_, h, hp)) => (h, hp as usize),
            None => (i, p),
        }
    }

    /// Marks the transitions adjacent to the places of running descendants that are home
    /// place `hp` of instance `h`, after a change of it.
    pub(super) fn mark_aliases(&mut self, prog: &Program, h: u32, hp: usize, change: Change) {
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
    pub(super) fn swap_lent(&mut self, i: u32) {
        for k in 0..self.instance(i).up.len() {
            let (q, h, hp) = self.instance(i).up[k];
            let (a, b) = two_mut(&mut self.instances, i, h);
            std::mem::swap(&mut a.marking[q as usize], &mut b.marking[hp as usize]);
            std::mem::swap(&mut a.in_flight[q as usize], &mut b.in_flight[hp as usize]);
        }
    }

    /// Changes the in-flight count of place `p` of instance `i` (at its home) by one.
    #[inline]
    pub(super) fn flight(&mut self, i: u32, p: usize, up: bool) {
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
    pub(super) fn taken(&mut self, prog: &Program, i: u32, p: usize) -> Result<(), RunError> {
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
    pub(super) fn changed(&mut self, prog: &Program, i: u32, p: usize, only_count: bool) {
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
    pub(super) fn mark_changed(
        &mut self,
        prog: &Program,
        i: u32,
        p: usize,
        only_count: bool,
    ) -> bool {
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

    pub(super) fn put_generated(
        &mut self,
        prog: &Program,
        i: u32,
        p: usize,
    ) -> Result<(), RunError> {
        rules::refill(&mut Fire { st: self, prog }, prog.bundle, &i, p)
    }
}
