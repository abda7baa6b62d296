//! The single-process net engine: marking, incremental enabling, firing, child nets, tasks.
//!
//! The engine does no I/O. [`Engine::step`] fires one transition (or hands out a module call
//! as a [`Task`]); [`Engine::run_steps`] fires a batch, as that many steps would (and hands a
//! transition that loops on one token to the code runner's loop); a driver serves tasks and
//! injects their results with [`Engine::complete_task`] or fails the job with
//! [`Engine::fail_task`].
//!
//! Marking: one `Tokens` ring buffer (`tokens.rs`) per place of each net instance (32 bytes
//! a token, FIFO: unconstrained takes are from the front, puts go to the back; a
//! condition-chosen token is removed by swapping the front into its slot). Enabling: per
//! transition an `enabled` flag and a cached binding (token indices); a change of a place
//! marks only the transitions adjacent to it dirty, and only dirty transitions are
//! re-examined before the next choice
//! (the search for a token a condition accepts resumes after the tokens known to fail it).
//! Enabled transitions sit in one indexable set per priority group; the engine picks an
//! instance with enabled transitions, its highest non-empty group, and a transition in it,
//! at random from a seeded PRNG.
//!
//! Place-maps of child nets that were not inlined (`pnetc --synthesize-virtual-places`): the
//! child's virtual place *is* the real place of the parent (or, through nested maps, of an
//! outer ancestor), its home. The tokens and the in-flight count live at home; the child's
//! slot stays empty and is lent the home's tokens while the child re-examines its transitions
//! or takes a firing's tokens (`State::swap_lent`). Puts and takes on such a place go to its
//! home and mark the adjacent transitions in every instance that sees it; transitions that
//! touch such places take the general firing path. When the child ends, the tokens stay.
//!
//! The code by job: this file holds the public API ([`Engine`], [`run`], the run types);
//! `program.rs` the static net data computed once (`Program`, `NetInfo`, `TransInfo`, the
//! fast-path plans); `state.rs` the state (`State`, `Instance`: markings, in-flight counts,
//! dirty lists; putting and taking tokens); `enabling.rs` the search for an enabled transition
//! and its binding; `firing.rs` firing (taking inputs, evaluating, outputs, tasks, child nets).

use std::collections::HashMap;

use crate::hook::{Loop, LoopEnd, drive_loop};
use crate::tokens::Tokens;

use num_bigint::BigInt;
use pnet_bundle::{
    Body, Bundle, ConnectKind, FunctionId, Instr, Module, Net, PlaceId, PortId, TransitionId,
};
use pnet_stdlib::{Type, Value};

use crate::ending::Ending;
use crate::error::{RunError, RunErrorKind};
use crate::hook::{CodeRunner, CodeRunnerFactory};
use crate::interp::Interpreter;
use crate::rng::{DEFAULT_SEED, Rng};
use crate::shared;
use crate::validate::validate;

mod enabling;
mod firing;
mod program;
mod rules;
mod state;

use enabling::*;
pub use enabling::{Binding, distinct_tokens, for_each_combination, input_frame, next_combination};
use firing::*;
pub use firing::{child_out_place, eureka_groups, out_value, output_tokens};
use program::*;
pub use program::{Connections, bundle_uses_shared, connections, priority_groups};
use rules::Fire;
pub use rules::{
    Marking, SharedTable, after_take, child_inputs, child_outputs, collect_shareds, initial_tokens,
    refill, release_shareds, take_binding,
};
use state::*;

/// How to run a job.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Seed of the random choice among enabled transitions.
    pub seed: u64,
    /// Stop with an error before firing more than this many transitions.
    pub max_firings: Option<u64>,
    /// Runs expressions and conditions instead of the interpreter (the JIT); `None`: interpret.
    pub runner: Option<std::sync::Arc<dyn CodeRunnerFactory>>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: DEFAULT_SEED,
            max_firings: None,
            runner: None,
        }
    }
}

/// Counters of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Every firing: expressions, module calls handed out, child nets started.
    pub firings: u64,
    pub expressions: u64,
    pub tasks: u64,
    pub child_nets: u64,
}

/// The result of a job: the tokens on the places behind the root's out ports, by port name,
/// in port order; each port's tokens in the order they sit on the place.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    pub outputs: Vec<(String, Vec<Value>)>,
    pub stats: Stats,
    /// What the final marking says about the ending: tokens left, empty out ports.
    pub ending: Ending,
}

/// Identifies a task handed out by [`Engine::step`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u64);

/// A module call to run: the function (its body is `Module` or `Modules`) and the values of
/// its input ports.
#[derive(Clone, Debug)]
pub struct Task {
    pub id: TaskId,
    pub function: FunctionId,
    pub transition: TransitionId,
    /// The transition's name.
    pub name: String,
    /// `file:line:col` of the transition.
    pub location: String,
    pub inputs: Vec<(PortId, Value)>,
    /// The value of the module's `eureka-group` expression, if it has one.
    pub eureka_group: Option<String>,
    /// The evaluated memory buffers and transfers of the function; `None` when it has
    /// neither.
    pub memory: Option<TaskMemory>,
}

/// A module call's memory, evaluated over the function's input frame when the transition
/// fires.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskMemory {
    /// Per memory buffer, in the function's order: (size, alignment; 1 when absent).
    pub buffers: Vec<(u64, u64)>,
    /// Per memory transfer, in the function's order: the values of `global` and `local`.
    pub transfers: Vec<(Value, Value)>,
}

/// What one step did.
#[derive(Clone, Debug)]
pub enum Step {
    /// An expression transition fired or a child net started.
    Fired,
    /// A module call to serve.
    Task(Task),
    /// Nothing is enabled, but tasks are running: wait for a result.
    Waiting,
    /// The job has ended.
    Done,
}

/// Runs a job to its end with a driver that serves no module calls (the first module call
/// stops the job with an error naming the module and the transition's location).
pub fn run(
    bundle: &Bundle,
    inputs: &[(String, Vec<Value>)],
    config: &RunConfig,
) -> Result<RunResult, RunError> {
    let mut engine = Engine::new(bundle, config)?;
    engine.put_inputs(inputs)?;
    loop {
        match engine.run_steps(u64::MAX)?.1 {
            Step::Fired => {}
            Step::Task(task) => {
                let f = bundle.function(task.function);
                let (module, function) = match &f.body {
                    Body::Module(m) => module_names(m),
                    Body::Modules { modules, .. } => {
                        modules.first().map(module_names).unwrap_or_default()
                    }
                    _ => Default::default(),
                };
                let mut e = RunError::new(RunErrorKind::ModuleCall { module, function });
                e.transition = Some(task.name);
                e.transition_at = Some(task.location);
                return Err(e);
            }
            Step::Waiting => {
                return Err(RunError::new(RunErrorKind::Bundle(
                    "waiting for tasks that no one runs".into(),
                )));
            }
            Step::Done => return Ok(engine.result()),
        }
    }
}

fn module_names(m: &Module) -> (String, String) {
    (m.name.clone(), m.signature.function.clone())
}

/// A running job.
#[derive(Debug)]
pub struct Engine<'b> {
    prog: Program<'b>,
    st: State,
}

const ROOT: u32 = 0;

impl<'b> Engine<'b> {
    /// Validates the bundle and sets up the root net with its initial tokens.
    pub fn new(bundle: &'b Bundle, config: &RunConfig) -> Result<Engine<'b>, RunError> {
        let prog = Program::new(bundle)?;
        if prog.nets[bundle.root.index()].is_none() {
            return Err(RunError::bundle("the root function has no net body"));
        }
        let mut st = State {
            instances: Vec::new(),
            free: Vec::new(),
            ready: Vec::new(),
            dirty_instances: Vec::new(),
            rng: Rng::new(config.seed),
            interp: Interpreter::new(),
            runner: config.runner.as_ref().map(|f| f.runner(bundle)),
            frame: Vec::new(),
            vals: Vec::new(),
            idx: Vec::new(),
            release: Vec::new(),
            dead: Vec::new(),
            shared: SharedTable::default(),
            tasks: HashMap::new(),
            next_task: 0,
            stats: Stats::default(),
            max_firings: config.max_firings,
            eurekas: Vec::new(),
            responses: Vec::new(),
            next_response: 0,
            last_fast: None,
        };
        let root = st.new_instance(&prog, bundle.root, None, Vec::new())?;
        debug_assert_eq!(root, ROOT);
        Ok(Engine { prog, st })
    }

    /// Puts the job's inputs on the places bound to the root's in ports.
    pub fn put_inputs(&mut self, inputs: &[(String, Vec<Value>)]) -> Result<(), RunError> {
        let f = self.prog.bundle.function(self.prog.bundle.root);
        for (name, values) in inputs {
            let port = pnet_bundle::inputs::in_port(f, name).map_err(input_error)?;
            let place = port
                .place
                .ok_or_else(|| input_error(format!("in port `{name}` is bound to no place")))?;
            for v in values {
                pnet_bundle::inputs::check_value(v, &port.ty, &format!("port `{name}`"))
                    .map_err(input_error)?;
                self.st.put(&self.prog, ROOT, place.index(), v.clone());
            }
        }
        Ok(())
    }

    /// Puts a token on a `put_token="true"` place of the root net (a client's `put_token`).
    pub fn put_token(&mut self, place: &str, value: Value) -> Result<(), RunError> {
        let net = self.prog.net_ir(self.prog.bundle.root);
        let p = net
            .place_by_name(place)
            .filter(|p| net.place(*p).put_token)
            .ok_or_else(|| input_error(no_put_token_place(net, place)))?;
        if !fits(&value, &net.place(p).ty) {
            let ty = &net.place(p).ty;
            let hint = pnet_stdlib::suggest::mismatch_hint(&value, ty)
                .map(|h| format!(": {h}"))
                .unwrap_or_default();
            return Err(input_error(format!(
                "value {value} for place `{place}` is not of type {ty}{hint}"
            )));
        }
        self.st.put(&self.prog, ROOT, p.index(), value);
        Ok(())
    }

    /// Re-examines what the last firing changed and ends the child nets that are done, as
    /// the next [`Engine::step`] does first (it draws no random number: a run goes on the
    /// same with or without it). After it, the marking is the one the next choice sees: a
    /// child net that has ended has put its outputs (what a state-space explorer compares).
    pub fn refresh(&mut self) -> Result<(), RunError> {
        self.st.refresh(&self.prog)
    }

    /// Fires one transition (or hands out one task).
    pub fn step(&mut self) -> Result<Step, RunError> {
        self.st.last_fast = None;
        self.st.refresh(&self.prog)?;
        let st = &mut self.st;
        let n = st.ready.len();
        if n == 0 {
            let done = st.instance(ROOT).pending == 0
                && !(self.prog.wait_for_output && self.output_missing());
            return Ok(if done { Step::Done } else { Step::Waiting });
        }
        let i = if n == 1 {
            st.ready[0]
        } else {
            st.ready[st.rng.below(n)]
        };
        let inst = st.instances[i as usize].as_ref().expect("live instance");
        let Some(group) = inst.groups.iter().find(|g| !g.is_empty()) else {
            return Err(RunError::bundle(
                "internal: ready instance without enabled transitions",
            ));
        };
        let t = if group.len() == 1 {
            group[0]
        } else {
            group[st.rng.below(group.len())]
        };
        let info = &self.prog.net(inst.func).trans[t as usize];
        let r = match &info.fast {
            Some(plan) => match st.fire_fast(&self.prog, i, t as usize, plan) {
                Ok(()) => {
                    st.last_fast = Some((i, t));
                    return Ok(Step::Fired);
                }
                Err(e) => e,
            },
            None => match st.fire(&self.prog, i, t as usize) {
                Ok(step) => return Ok(step),
                Err(e) => e,
            },
        };
        Err(self.prog.context(r, i, &st.instances, t))
    }

    /// Fires up to `max` transitions as that many calls of [`Engine::step`] would (the same
    /// choices, the same random numbers drawn, the same markings), and stops early at the
    /// first step that is not a firing (returned) or after a firing that named a eureka group
    /// or answered a response (see [`Engine::has_eurekas_or_responses`]). Returns the number
    /// of firings and the last step (`Step::Fired` if the budget or a eureka/response ended
    /// the batch).
    ///
    /// Cheaper than single steps for loops: when a plain expression transition fired and the
    /// only thing it changed for the next choice is its own enabling (it is the only dirty
    /// transition of the only ready instance and alone in its instance's highest non-empty
    /// priority group), the next step re-examines it and fires it again directly, without
    /// the general re-examination and choice (which would draw no random number and come to
    /// the same transition).
    pub fn run_steps(&mut self, max: u64) -> Result<(u64, Step), RunError> {
        let mut fired = 0u64;
        let mut hot: Option<(u32, u32)> = None;
        while fired < max {
            if let Some((i, t)) = hot.take() {
                match self.st.refire(&self.prog, i, t, max - fired) {
                    Ok(0) => {}
                    Ok(n) => {
                        fired += n;
                        hot = Some((i, t));
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            match self.step()? {
                Step::Fired => {
                    fired += 1;
                    if self.has_eurekas_or_responses() {
                        break;
                    }
                    hot = self.st.last_fast;
                }
                other => return Ok((fired, other)),
            }
        }
        Ok((fired, Step::Fired))
    }

    /// Injects the outputs of a finished task (values of its out ports).
    pub fn complete_task(
        &mut self,
        id: TaskId,
        outputs: Vec<(PortId, Value)>,
    ) -> Result<(), RunError> {
        let rec = self
            .st
            .tasks
            .remove(&id.0)
            .ok_or_else(|| RunError::bundle(format!("unknown task {}", id.0)))?;
        let (i, t) = (rec.instance, rec.transition.index() as u32);
        self.st
            .complete(&self.prog, rec, outputs)
            .map_err(|e| self.prog.context(e, i, &self.st.instances, t))
    }

    /// Fails the job because a task failed; gives the error naming the module and transition.
    pub fn fail_task(&mut self, id: TaskId, message: &str) -> RunError {
        let Some(rec) = self.st.tasks.remove(&id.0) else {
            return RunError::bundle(format!("unknown task {}", id.0));
        };
        let inst = self.st.instance(rec.instance);
        let net = self.prog.net_ir(inst.func);
        let t = net.transition(rec.transition);
        let module = match &self.prog.bundle.function(t.function).body {
            Body::Module(m) => m.name.clone(),
            Body::Modules { modules, .. } => {
                modules.first().map(|m| m.name.clone()).unwrap_or_default()
            }
            _ => String::new(),
        };
        let e = RunError::new(RunErrorKind::TaskFailed {
            module,
            message: message.to_string(),
        });
        self.prog.context(
            e,
            rec.instance,
            &self.st.instances,
            rec.transition.index() as u32,
        )
    }

    /// Whether [`Engine::take_eurekas`] or [`Engine::take_responses`] has anything (a cheap
    /// check for drivers that ask after every step).
    #[inline]
    pub fn has_eurekas_or_responses(&self) -> bool {
        !self.st.eurekas.is_empty() || !self.st.responses.is_empty()
    }

    /// The eureka groups named by `connect-eureka` ports of transitions fired (or tasks
    /// completed) since the last call. The driver removes pending and interrupts running
    /// tasks of these groups and calls [`Engine::discard_task`] for each.
    pub fn take_eurekas(&mut self) -> Vec<String> {
        std::mem::take(&mut self.st.eurekas)
    }

    /// Drops a task without outputs (cancelled by a eureka): the tokens it consumed are gone,
    /// and the number-of-tokens counters of its places go down.
    pub fn discard_task(&mut self, id: TaskId) -> Result<(), RunError> {
        let rec = self
            .st
            .tasks
            .remove(&id.0)
            .ok_or_else(|| RunError::bundle(format!("unknown task {}", id.0)))?;
        self.st.discard(&self.prog, rec)
    }

    /// A client's workflow-response request: puts `Struct [value := VALUE, response_id := ID]`
    /// on the `put_token` place and returns ID; the answer comes out of
    /// [`Engine::take_responses`] once a transition with `connect-response` fires on it.
    pub fn request_response(&mut self, place: &str, value: Value) -> Result<String, RunError> {
        let id = format!("response-{}", self.st.next_response);
        self.st.next_response += 1;
        let token = Value::Struct(vec![
            ("value".into(), value),
            ("response_id".into(), Value::String(id.as_str().into())),
        ]);
        self.put_token(place, token)?;
        Ok(id)
    }

    /// The workflow responses answered since the last call: (response id, value).
    pub fn take_responses(&mut self) -> Vec<(String, Value)> {
        std::mem::take(&mut self.st.responses)
    }

    /// Whether the root function has `drts.wait_for_output`: then [`Engine::step`] answers
    /// [`Step::Waiting`] rather than [`Step::Done`] while an out port's place is empty, so
    /// that a client can still put tokens.
    pub fn waits_for_output(&self) -> bool {
        self.prog.wait_for_output
    }

    /// Whether some out port of the root has no token on its place.
    fn output_missing(&self) -> bool {
        let f = self.prog.bundle.function(self.prog.bundle.root);
        let root = self.st.instance(ROOT);
        f.ports.iter().filter(|p| p.dir.is_output()).any(|p| {
            p.place
                .and_then(|pl| root.marking.get(pl.index()))
                .is_none_or(|m| m.is_empty())
        })
    }

    /// Number of tasks handed out and not yet completed.
    pub fn running_tasks(&self) -> usize {
        self.st.tasks.len()
    }

    /// Every binding that enables `transition` of the root net now, in the order the engine's
    /// binding search meets them (see [`Binding`]): the enumeration a state-space explorer
    /// follows where the engine takes the first.
    pub fn bindings(&mut self, transition: TransitionId) -> Result<Vec<Binding>, RunError> {
        let t = transition.index();
        if t >= self.prog.net(self.st.instance(ROOT).func).trans.len() {
            return Err(input_error(format!("no transition {t} in the root net")));
        }
        self.st.bindings(&self.prog, ROOT, t)
    }

    pub fn stats(&self) -> &Stats {
        &self.st.stats
    }

    /// The tokens on a root place, in order (for tests and inspection).
    pub fn tokens(&self, place: PlaceId) -> Vec<Value> {
        self.st
            .instance(ROOT)
            .marking
            .get(place.index())
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The job's result: the tokens behind the root's out ports.
    pub fn result(&self) -> RunResult {
        let f = self.prog.bundle.function(self.prog.bundle.root);
        let root = self.st.instance(ROOT);
        let outputs = f
            .ports
            .iter()
            .filter(|p| p.dir.is_output())
            .map(|p| {
                let tokens = p
                    .place
                    .and_then(|pl| root.marking.get(pl.index()))
                    .map(|m| m.iter().cloned().collect())
                    .unwrap_or_default();
                (p.name.clone(), tokens)
            })
            .collect();
        RunResult {
            outputs,
            stats: self.st.stats.clone(),
            ending: self.ending(),
        }
    }

    /// What the root net's marking says about how the job ended (see [`Ending`]): the inner
    /// places still holding tokens, the empty out ports, and transitions that lacked a token
    /// on some input while others held tokens.
    pub fn ending(&self) -> Ending {
        let f = self.prog.bundle.function(self.prog.bundle.root);
        let net = self.prog.net_ir(self.prog.bundle.root);
        let info = self.prog.net(self.prog.bundle.root);
        let root = self.st.instance(ROOT);
        let count = |p: usize| root.marking.get(p).map_or(0, |m| m.len() as u64);
        let mut ending = Ending::default();
        let mut out_place = vec![false; net.places.len()];
        for port in f.ports.iter().filter(|p| p.dir.is_output()) {
            match port.place {
                Some(pl) => {
                    out_place[pl.index()] = true;
                    if count(pl.index()) == 0 {
                        ending.empty_outputs.push(port.name.clone());
                    }
                }
                None => ending.empty_outputs.push(port.name.clone()),
            }
        }
        // Places only read (constants) keep their tokens by design.
        let mut consumed = vec![false; net.places.len()];
        let mut read = vec![false; net.places.len()];
        for t in &net.transitions {
            for c in &t.connections {
                match c.kind {
                    ConnectKind::In => consumed[c.place.index()] = true,
                    ConnectKind::Read => read[c.place.index()] = true,
                    _ => {}
                }
            }
            // A child net sees the place through its virtual place and may consume there.
            for &(_, real) in &t.place_map {
                if let Some(c) = consumed.get_mut(real.index()) {
                    *c = true;
                }
            }
        }
        let mut left = vec![false; net.places.len()];
        for (p, place) in net.places.iter().enumerate() {
            let n = count(p);
            if n > 0 && !out_place[p] && !place.generator && (consumed[p] || !read[p]) {
                left[p] = true;
                ending.tokens_left.push((place.name.clone(), n));
            }
        }
        for (t, ti) in info.trans.iter().enumerate() {
            if root.enabled.get(t).copied().unwrap_or(false) {
                continue;
            }
            let has = |p: usize, n: u32| net.places[p].generator || count(p) >= u64::from(n);
            let lacking = ti.need.iter().find(|&&(p, n)| !has(p, n));
            let holding = ti.need.iter().any(|&(p, _)| left[p]);
            if let (Some(&(p, _)), true) = (lacking, holding) {
                if ending.starved.len() < crate::ending::MAX_STARVED {
                    ending
                        .starved
                        .push((net.transitions[t].name.clone(), net.places[p].name.clone()));
                } else {
                    ending.more_starved += 1;
                }
            }
        }
        ending
    }
}

/// "no put_token place `p`", with the nearest put_token place's name and the list of them.
fn no_put_token_place(net: &pnet_bundle::Net, place: &str) -> String {
    let puts: Vec<&pnet_bundle::Place> = net.places.iter().filter(|p| p.put_token).collect();
    let mut msg = format!("no put_token place `{place}`");
    if let Some(near) = pnet_stdlib::suggest::nearest(place, puts.iter().map(|p| p.name.as_str())) {
        msg.push_str(&format!("; did you mean `{near}`?"));
    }
    let listed: Vec<String> = puts
        .iter()
        .map(|p| format!("{} ({})", p.name, p.ty))
        .collect();
    msg.push_str(&format!(
        " (the root net's put_token places: {})",
        if listed.is_empty() {
            "none".to_string()
        } else {
            listed.join(", ")
        }
    ));
    msg
}

fn input_error(m: String) -> RunError {
    RunError::new(RunErrorKind::Input(m))
}

/// `Value::fits` with fast paths for scalars.
#[inline]
pub(crate) fn fits(v: &Value, ty: &Type) -> bool {
    match (v, ty) {
        (_, Type::Any)
        | (Value::Long(_), Type::Long)
        | (Value::Int(_), Type::Int)
        | (Value::ULong(_), Type::ULong)
        | (Value::UInt(_), Type::UInt)
        | (Value::Bool(_), Type::Bool)
        | (Value::Control, Type::Control)
        | (Value::Char(_), Type::Char)
        | (Value::Float(_), Type::Float)
        | (Value::Double(_), Type::Double)
        | (Value::Bigint(_), Type::Bigint)
        | (Value::String(_), Type::String) => true,
        _ => v.fits(ty),
    }
}

/// The `n`-th value of generator place `place`, or the run-time error when its type runs
/// out. The engine's refill of a generator place, also the coloured explorer's.
pub fn generated(place: &pnet_bundle::Place, n: u128) -> Result<Value, RunError> {
    generator_value(&place.ty, n).ok_or_else(|| {
        RunError::new(RunErrorKind::GeneratorExhausted {
            place: place.name.clone(),
            ty: pnet_stdlib::type_name(&place.ty),
        })
    })
}

/// The `n`-th value of a generator place of type `ty`, or `None` when the type runs out (also
/// used by pnetv's coloured explorer, which must generate the same values).
pub fn generator_value(ty: &Type, n: u128) -> Option<Value> {
    Some(match ty {
        Type::Int => Value::Int(i32::try_from(n).ok()?),
        Type::Long => Value::Long(i64::try_from(n).ok()?),
        Type::UInt => Value::UInt(u32::try_from(n).ok()?),
        Type::ULong => Value::ULong(u64::try_from(n).ok()?),
        Type::Char => Value::Char(i8::try_from(n.checked_add(b'a' as u128)?).ok()?),
        Type::String => {
            let mut m = n.checked_add(1)?;
            let mut s = Vec::new();
            while m > 0 {
                m -= 1;
                s.push(b'a' + (m % 26) as u8);
                m /= 26;
            }
            s.reverse();
            Value::string(std::str::from_utf8(&s).ok()?)
        }
        Type::Bigint => Value::bigint(BigInt::from(n)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `match` takes `x` from `a` and `y` from `b` under `x == y`, and `z` from `c`.
    const CROSS: &str = "bundle root f0 main

function f0 main
  net
    place p0 a : long
      token 1L
      token 2L
      token 3L
    place p1 b : long
      token 3L
      token 1L
      token 9L
    place p2 c : long
      token 10L
      token 20L
    place p3 r : long
    transition t0 match priority 0 -> f1 match
      in x <- p0 a
      in y <- p1 b
      in z <- p2 c
      out x -> p3 r
      condition c0

function f1 match
  inout x : long
  in y : long
  in z : long
  expression c1

code c0 \"condition of match\" : any
  slot 0 port x : long
  slot 1 port y : long
  slot 2 port z : long
  reads x y
  0  load        x
  1  load        y
  2  eq

code c1 \"expression of match\" : any
  slot 0 port x : long
  slot 1 port y : long
  slot 2 port z : long
";

    #[test]
    fn bindings_enumerates_every_enabling_binding_in_search_order() {
        let bundle = pnet_bundle::text::parse(CROSS).expect("the net reads");
        let mut e = Engine::new(&bundle, &RunConfig::default()).expect("engine");
        let t = TransitionId::from(0usize);
        let shown: Vec<String> = e
            .bindings(t)
            .expect("bindings")
            .iter()
            .map(|b| {
                let takes: Vec<String> =
                    b.takes.iter().map(|(_, j, v)| format!("{v}@{j}")).collect();
                takes.join(" ")
            })
            .collect();
        expect_test::expect![[r#"
            [
                "1L@0 1L@1 10L@0",
                "1L@0 1L@1 20L@1",
                "3L@2 3L@0 10L@0",
                "3L@2 3L@0 20L@1",
            ]
        "#]]
        .assert_debug_eq(&shown);
        // The engine fires the first of them.
        assert!(matches!(e.step(), Ok(Step::Fired)));
        let left = e.bindings(t).expect("bindings");
        let left: Vec<&Value> = left
            .iter()
            .flat_map(|b| b.takes.iter().map(|t| &t.2))
            .collect();
        assert_eq!(left, [&Value::Long(3), &Value::Long(3), &Value::Long(20)]);
        assert!(e.bindings(TransitionId::from(1usize)).is_err());
    }

    #[test]
    fn combinations_run_in_token_order_with_distinct_tokens_per_place() {
        let mut idx = [0u32; 2];
        let mut seen = Vec::new();
        loop {
            if distinct_tokens(&idx, |_, _| true) {
                seen.push(idx);
            }
            if !next_combination(&mut idx, |_| 3) {
                break;
            }
        }
        assert_eq!(seen, [[0, 1], [0, 2], [1, 0], [1, 2], [2, 0], [2, 1]]);
        assert_eq!(idx, [0, 0]);
    }

    /// [`Engine::refresh`] between steps changes nothing in a run: the same firings, the same
    /// result (child nets that end, generators, place-maps).
    #[test]
    fn refresh_between_steps_leaves_the_run_as_it_is() {
        let nets = [
            include_str!("../../../tests/data/engine/child_net.ir"),
            include_str!("../../../tests/data/engine/place_map_generator.ir"),
            include_str!("../../../tests/data/engine/condition_cross_product.ir"),
            CROSS,
        ];
        for text in nets {
            let bundle = pnet_bundle::text::parse(text).expect("the net reads");
            for seed in 0..4 {
                let run = |refresh: bool| {
                    let config = RunConfig {
                        seed,
                        max_firings: Some(1000),
                        runner: None,
                    };
                    let mut e = Engine::new(&bundle, &config).expect("engine");
                    let mut firings = 0;
                    while let Ok(Step::Fired) = e.step() {
                        firings += 1;
                        if refresh {
                            e.refresh().expect("refresh");
                        }
                    }
                    (firings, e.result())
                };
                let (plain, refreshed) = (run(false), run(true));
                assert!(plain.0 > 0);
                assert_eq!(plain, refreshed, "seed {seed}");
            }
        }
    }

    #[test]
    fn generator_values() {
        let s: Vec<String> = [0u128, 1, 25, 26, 27, 51, 52, 701, 702]
            .iter()
            .map(|&n| match generator_value(&Type::String, n) {
                Some(Value::String(s)) => s.to_string(),
                _ => "?".into(),
            })
            .collect();
        expect_test::expect![[r#"["a", "b", "z", "aa", "ab", "az", "ba", "zz", "aaa"]"#]]
            .assert_eq(&format!("{s:?}"));
        assert!(matches!(
            generator_value(&Type::Char, 0),
            Some(Value::Char(97))
        ));
        assert!(matches!(
            generator_value(&Type::Char, 30),
            Some(Value::Char(127))
        ));
        assert!(generator_value(&Type::Char, 31).is_none());
        assert!(matches!(
            generator_value(&Type::Int, i32::MAX as u128),
            Some(Value::Int(i32::MAX))
        ));
        assert!(generator_value(&Type::Int, i32::MAX as u128 + 1).is_none());
        assert!(generator_value(&Type::Bool, 0).is_none());
    }
}
