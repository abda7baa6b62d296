//! The JIT as the engine's code runner: which codes to compile, when, and what happened.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pnet_bundle::{Bundle, Code, CodeId};
use pnet_engine::{
    CodeRunner, CodeRunnerFactory, Interpreter, Loop, LoopCodes, LoopEnd, RunError, RunnerCodes,
};
use pnet_stdlib::Value;

use crate::{Compiled, FnId, Jit, Lean};

/// When to compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitMode {
    /// Interpret everything.
    Off,
    /// Compile every code when the bundle is loaded (one module, finalized once).
    On,
    /// Compile a code once it has run [`JitFactory::hot_threshold`] times and at least half
    /// of its operations are native; interpret the rest.
    Auto,
}

impl JitMode {
    pub fn parse(s: &str) -> Option<JitMode> {
        Some(match s {
            "off" => JitMode::Off,
            "on" => JitMode::On,
            "auto" => JitMode::Auto,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            JitMode::Off => "off",
            JitMode::On => "on",
            JitMode::Auto => "auto",
        }
    }
}

/// What the JIT did in a run (summed over the engines made by one factory).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    pub mode: Option<JitMode>,
    /// Codes in the bundle.
    pub codes: usize,
    pub compiled: usize,
    /// Codes that were looked at and left to the interpreter (not worth it, or not
    /// compilable).
    pub declined: usize,
    pub compile_time: Duration,
    /// Runs of compiled code, and runs of the interpreter (cold codes, declined codes, and
    /// fallbacks).
    pub native_runs: u64,
    pub interpreted_runs: u64,
    /// Runs of compiled code that went to the interpreter because the frame did not fit
    /// (a scalar slot empty or of another type).
    pub fallbacks: u64,
    /// Per code: `(name, what happened)`.
    pub per_code: Vec<(String, String)>,
    /// Why the JIT could not be made, if it could not.
    pub error: Option<String>,
}

impl fmt::Display for JitStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = self.mode.map_or("off", JitMode::name);
        writeln!(
            f,
            "jit: mode {mode}; {} codes: {} compiled, {} left to the interpreter; compile time {:.3} ms ({:.1} us per compiled code)",
            self.codes,
            self.compiled,
            self.declined,
            self.compile_time.as_secs_f64() * 1e3,
            if self.compiled > 0 {
                self.compile_time.as_secs_f64() * 1e6 / self.compiled as f64
            } else {
                0.0
            },
        )?;
        writeln!(
            f,
            "jit: runs: {} native, {} interpreted ({} fallbacks from compiled code)",
            self.native_runs, self.interpreted_runs, self.fallbacks
        )?;
        if let Some(e) = &self.error {
            writeln!(f, "jit: not available: {e}")?;
        }
        for (name, what) in &self.per_code {
            writeln!(f, "jit:   {name}: {what}")?;
        }
        Ok(())
    }
}

/// Makes a JIT runner for each engine; keeps the statistics.
#[derive(Debug)]
pub struct JitFactory {
    pub mode: JitMode,
    /// Runs before a code counts as hot in [`JitMode::Auto`].
    pub hot_threshold: u32,
    stats: Arc<Mutex<JitStats>>,
}

impl JitFactory {
    pub fn new(mode: JitMode) -> JitFactory {
        JitFactory {
            mode,
            hot_threshold: 64,
            stats: Arc::default(),
        }
    }

    /// The statistics so far (complete once the engines are dropped).
    pub fn stats(&self) -> JitStats {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl CodeRunnerFactory for JitFactory {
    fn runner(&self, bundle: &Bundle) -> Box<dyn CodeRunner> {
        Box::new(JitRunner::new(
            bundle,
            self.mode,
            self.hot_threshold,
            self.stats.clone(),
        ))
    }
}

#[derive(Clone, Copy, Debug)]
enum State {
    Cold(u32),
    Compiled(FnId),
    Interpreted,
}

#[derive(Debug)]
struct JitRunner {
    jit: Option<Jit>,
    states: Vec<State>,
    hot: u32,
    buf: Vec<u64>,
    stats: JitStats,
    shared: Arc<Mutex<JitStats>>,
}

impl JitRunner {
    fn new(bundle: &Bundle, mode: JitMode, hot: u32, shared: Arc<Mutex<JitStats>>) -> JitRunner {
        let mut stats = JitStats {
            mode: Some(mode),
            codes: bundle.codes.len(),
            ..JitStats::default()
        };
        let jit = match mode {
            JitMode::Off => None,
            _ => match Jit::new() {
                Ok(j) => Some(j),
                Err(e) => {
                    stats.error = Some(e.to_string());
                    None
                }
            },
        };
        let mut r = JitRunner {
            jit,
            states: vec![State::Cold(0); bundle.codes.len()],
            hot,
            buf: Vec::new(),
            stats,
            shared,
        };
        if mode == JitMode::Off || r.jit.is_none() {
            r.states.fill(State::Interpreted);
        } else if mode == JitMode::On {
            let items: Vec<(usize, &Code)> = bundle.codes.iter().enumerate().collect();
            r.compile(&items, false);
        }
        r
    }

    /// Compiles `(code id, code)`s together (declining those not worth it when `choosy`).
    fn compile(&mut self, items: &[(usize, &Code)], choosy: bool) {
        let Some(jit) = &mut self.jit else {
            return;
        };
        let mut todo = Vec::new();
        for &(i, code) in items {
            match crate::analysis::analyse(code) {
                Some(p) if !choosy || (p.native_ops > 0 && p.native_ops >= p.dyn_ops) => {
                    todo.push((i, code))
                }
                Some(p) => {
                    self.states[i] = State::Interpreted;
                    self.stats.declined += 1;
                    self.stats.per_code.push((
                        code.name.clone(),
                        format!(
                            "interpreted ({} native, {} stdlib operations: not worth it)",
                            p.native_ops, p.dyn_ops
                        ),
                    ));
                }
                None => {
                    self.states[i] = State::Interpreted;
                    self.stats.declined += 1;
                    self.stats
                        .per_code
                        .push((code.name.clone(), "interpreted (not compilable)".into()));
                }
            }
        }
        let before = jit.compile_time();
        let list: Vec<&Code> = todo.iter().map(|&(_, c)| c).collect();
        let ids = jit.compile(&list);
        self.stats.compile_time += jit.compile_time() - before;
        for (&(i, code), id) in todo.iter().zip(ids) {
            match id {
                Some(id) => {
                    self.states[i] = State::Compiled(id);
                    self.stats.compiled += 1;
                    let what = match jit.plan(id) {
                        Some(p) => format!(
                            "compiled ({} native operations, {} calls into the stdlib{})",
                            p.native_ops,
                            p.dyn_ops,
                            if p.fields.is_empty() {
                                String::new()
                            } else {
                                format!(", {} struct fields in registers", p.fields.len())
                            }
                        ),
                        None => "compiled".into(),
                    };
                    self.stats.per_code.push((code.name.clone(), what));
                }
                None => {
                    self.states[i] = State::Interpreted;
                    self.stats.declined += 1;
                    self.stats
                        .per_code
                        .push((code.name.clone(), "interpreted (Cranelift refused)".into()));
                }
            }
        }
    }
}

impl JitRunner {
    /// The compiled function of code `i`, compiling it when it turns hot (`Auto`); `None`:
    /// interpret (counted).
    #[inline]
    fn native(&mut self, i: usize, code: &Code) -> Option<FnId> {
        match self.states.get(i).copied() {
            Some(State::Compiled(f)) => return Some(f),
            Some(State::Cold(n)) => {
                if n + 1 >= self.hot {
                    self.compile(&[(i, code)], true);
                    if let State::Compiled(f) = self.states[i] {
                        return Some(f);
                    }
                } else {
                    self.states[i] = State::Cold(n + 1);
                }
            }
            _ => {}
        }
        self.stats.interpreted_runs += 1;
        None
    }

    /// Counts the outcome of a native run; `None` (a fallback) means: interpret.
    #[inline]
    fn counted<T>(&mut self, r: Option<T>) -> Option<T> {
        if r.is_some() {
            self.stats.native_runs += 1;
        } else {
            self.stats.fallbacks += 1;
            self.stats.interpreted_runs += 1;
        }
        r
    }
}

impl CodeRunner for JitRunner {
    fn run(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<Value, RunError> {
        if let Some(f) = self.native(id.index(), code) {
            let r = match &self.jit {
                Some(jit) => jit.run(f, code, frame, &mut self.buf),
                None => None,
            };
            if let Some(r) = self.counted(r) {
                return r;
            }
        }
        interp.run(code, frame)
    }

    fn run_bool(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<bool, RunError> {
        // The fast path builds the result right here, where it is returned.
        if let Some(State::Compiled(f)) = self.states.get(id.index()).copied()
            && let Some(jit) = &self.jit
        {
            match jit.lean_bool(f, frame, &mut self.buf) {
                Lean::Bool(b) => {
                    self.stats.native_runs += 1;
                    return Ok(b);
                }
                Lean::Failed(status) => {
                    self.stats.native_runs += 1;
                    return Err(jit.lean_error(f, status, code, &self.buf));
                }
                Lean::Fallback => {
                    self.stats.fallbacks += 1;
                    self.stats.interpreted_runs += 1;
                    return interp.run_bool(code, frame);
                }
                Lean::Done | Lean::NotRun => {}
            }
        }
        self.run_bool_full(id, code, frame, interp)
    }

    fn run_effect(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<(), RunError> {
        if let Some(State::Compiled(f)) = self.states.get(id.index()).copied()
            && let Some(jit) = &self.jit
        {
            match jit.lean_effect(f, frame, &mut self.buf) {
                Lean::Done => {
                    self.stats.native_runs += 1;
                    return Ok(());
                }
                Lean::Failed(status) => {
                    self.stats.native_runs += 1;
                    return Err(jit.lean_error(f, status, code, &self.buf));
                }
                Lean::Fallback => {
                    self.stats.fallbacks += 1;
                    self.stats.interpreted_runs += 1;
                    return interp.run_effect(code, frame);
                }
                Lean::Bool(_) | Lean::NotRun => {}
            }
        }
        self.run_effect_full(id, code, frame, interp)
    }

    fn run_loop(
        &mut self,
        l: &Loop,
        token: &mut Value,
        frame: &mut Vec<Option<Value>>,
        max: u64,
        interp: &mut Interpreter,
    ) -> (u64, LoopEnd) {
        if let Some(r) = self.run_loop_lean(l, token, frame, max, interp) {
            return r;
        }
        // Not (yet) compiled: a code at a time, as the engine would run them.
        pnet_engine::drive_loop(
            l,
            token,
            frame,
            max,
            // Through this runner's own `run_bool` and `run_effect` (which compile the codes
            // when they turn hot).
            &mut RunnerCodes {
                runner: self,
                interp,
                l,
            },
        )
    }
}

/// A loop's codes, both compiled for the fast paths, called straight from the loop.
struct LeanCodes<'a> {
    jit: &'a Jit,
    cond: (FnId, &'a Compiled),
    expr: (FnId, &'a Compiled),
    buf: &'a mut Vec<u64>,
    interp: &'a mut Interpreter,
    l: &'a Loop<'a>,
    native: u64,
    /// Runs given to the interpreter: the frame did not hold what a code was compiled for
    /// (or, not expected here, did not fit); it gives the same results.
    fallbacks: u64,
}

impl LoopCodes for LeanCodes<'_> {
    #[inline(always)]
    fn condition(&mut self, frame: &mut [Option<Value>]) -> Result<bool, RunError> {
        match self.jit.lean_bool_of(self.cond.1, frame, self.buf) {
            Lean::Bool(b) => {
                self.native += 1;
                Ok(b)
            }
            Lean::Failed(status) => {
                self.native += 1;
                Err(self
                    .jit
                    .lean_error(self.cond.0, status, self.l.cond_code, self.buf))
            }
            Lean::Done | Lean::Fallback | Lean::NotRun => {
                self.fallbacks += 1;
                self.interp.run_bool(self.l.cond_code, frame)
            }
        }
    }

    #[inline(always)]
    fn expression(&mut self, frame: &mut [Option<Value>]) -> Result<(), RunError> {
        match self.jit.lean_effect_of(self.expr.1, frame, self.buf) {
            Lean::Done => {
                self.native += 1;
                Ok(())
            }
            Lean::Failed(status) => {
                self.native += 1;
                Err(self
                    .jit
                    .lean_error(self.expr.0, status, self.l.expr_code, self.buf))
            }
            Lean::Bool(_) | Lean::Fallback | Lean::NotRun => {
                self.fallbacks += 1;
                self.interp.run_effect(self.l.expr_code, frame)
            }
        }
    }
}

impl JitRunner {
    /// [`CodeRunner::run_loop`] with both codes compiled for the fast paths: resolved once,
    /// then called straight from the loop. `None` if they are not.
    fn run_loop_lean(
        &mut self,
        l: &Loop,
        token: &mut Value,
        frame: &mut Vec<Option<Value>>,
        max: u64,
        interp: &mut Interpreter,
    ) -> Option<(u64, LoopEnd)> {
        let (Some(State::Compiled(fc)), Some(State::Compiled(fe))) = (
            self.states.get(l.cond.index()).copied(),
            self.states.get(l.expr.index()).copied(),
        ) else {
            return None;
        };
        let jit = self.jit.as_ref()?;
        let (cc, ce) = (jit.lean_fn(fc, true)?, jit.lean_fn(fe, false)?);
        let words = Jit::words(cc).max(Jit::words(ce));
        if self.buf.len() < words {
            self.buf.resize(words, 0);
        }
        let mut codes = LeanCodes {
            jit,
            cond: (fc, cc),
            expr: (fe, ce),
            buf: &mut self.buf,
            interp,
            l,
            native: 0,
            fallbacks: 0,
        };
        let r = pnet_engine::drive_loop(l, token, frame, max, &mut codes);
        let (native, fallbacks) = (codes.native, codes.fallbacks);
        self.stats.native_runs += native;
        self.stats.fallbacks += fallbacks;
        self.stats.interpreted_runs += fallbacks;
        Some(r)
    }

    /// [`CodeRunner::run_bool`] beyond the fast path.
    #[inline(never)]
    fn run_bool_full(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<bool, RunError> {
        if let Some(f) = self.native(id.index(), code) {
            let r = match &self.jit {
                Some(jit) => jit.run_bool(f, code, frame, &mut self.buf),
                None => None,
            };
            if let Some(r) = self.counted(r) {
                return r;
            }
        }
        interp.run_bool(code, frame)
    }

    /// [`CodeRunner::run_effect`] beyond the fast path.
    #[inline(never)]
    fn run_effect_full(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<(), RunError> {
        if let Some(f) = self.native(id.index(), code) {
            let r = match &self.jit {
                Some(jit) => jit.run_effect(f, code, frame, &mut self.buf),
                None => None,
            };
            if let Some(r) = self.counted(r) {
                return r;
            }
        }
        interp.run_effect(code, frame)
    }
}

impl Drop for JitRunner {
    fn drop(&mut self) {
        if let Ok(mut s) = self.shared.lock() {
            let mine = std::mem::take(&mut self.stats);
            s.mode = mine.mode;
            s.codes += mine.codes;
            s.compiled += mine.compiled;
            s.declined += mine.declined;
            s.compile_time += mine.compile_time;
            s.native_runs += mine.native_runs;
            s.interpreted_runs += mine.interpreted_runs;
            s.fallbacks += mine.fallbacks;
            s.per_code.extend(mine.per_code);
            if mine.error.is_some() {
                s.error = mine.error;
            }
        }
    }
}
