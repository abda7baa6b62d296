//! Translation of one [`Code`] (with its [`Plan`]) to Cranelift IR, in one of two forms:
//!
//! - buffered: `extern "C" fn(buf: *mut u64) -> i32`. `buf` holds, one word each: the native
//!   slots' values, their "has a value" flags, the field inputs, and the result (see
//!   [`Plan::words`]); values sit in the low bytes of their word (little-endian).
//! - direct (with a [`Layout`]): `extern "C" fn(frame: *mut Option<Value>, buf: *mut u64) ->
//!   i32`. The code checks the tag byte of each native slot in the frame and loads its payload
//!   itself (an input must hold a value of its type, a local that or nothing; else it returns
//!   -1 at once, having changed nothing: the caller runs the interpreter), and writes the
//!   native locals it assigned back into their slots (tag byte and payload) at the end. `buf`
//!   holds only the field inputs and the result.
//!
//! The return value is 0 on success, else `pc + 1` of the failing instruction (the error itself
//! is recorded by a helper in the thread's [`crate::rt::Rt`]).
//!
//! Native scalars live in Cranelift variables (one per stack position and type, one per
//! native slot); dynamic values live on the helpers' value stack at their stack position.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    AbiParam, Block, BlockArg, Function, InstBuilder, InstructionData, MemFlagsData, Opcode,
    SigRef, Signature, Value, ValueDef, types,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use pnet_bundle::{Code, Instr};
use pnet_stdlib::{BinOp, Builtin, UnOp};

use crate::analysis::{Plan, Words, native_binary, native_call, native_unary};
use crate::layout::Layout;
use crate::rt;
use crate::types::{K, Nt};

#[derive(Clone, Copy)]
enum E {
    N(Nt, Value),
    D,
}

pub(crate) struct Target {
    pub ptr: types::Type,
    pub call_conv: CallConv,
    pub frontend: TargetFrontendConfig,
}

/// The signature of generated code: `(buf)` or, direct, `(frame, buf)`; an i32 status.
pub(crate) fn signature(target: &Target, direct: bool) -> Signature {
    let mut sig = Signature::new(target.call_conv);
    if direct {
        sig.params.push(AbiParam::new(target.ptr));
    }
    sig.params.push(AbiParam::new(target.ptr));
    sig.returns.push(AbiParam::new(types::I32));
    sig
}

/// Builds the IR of `code` into `func` (whose signature is set here): direct when `layout` is
/// given (then `plan.uses_dyn` must be false).
pub(crate) fn translate(
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    code: &Code,
    plan: &Plan,
    target: &Target,
    layout: Option<&Layout>,
) {
    let direct = layout.filter(|_| !plan.uses_dyn).copied();
    func.signature = signature(target, direct.is_some());
    let b = FunctionBuilder::new(func, fctx);
    let mut g = Gen {
        b,
        code,
        plan,
        words: plan.words(direct.is_some()),
        layout: direct,
        ptr: target.ptr,
        call_conv: target.call_conv,
        frame: Value::from_u32(0),
        buf: Value::from_u32(0),
        exit: Block::from_u32(0),
        blocks: HashMap::new(),
        stack_vars: HashMap::new(),
        slot_val: Vec::new(),
        slot_def: Vec::new(),
        fields: Vec::new(),
        sigs: HashMap::new(),
    };
    g.body();
    g.b.seal_all_blocks();
    g.b.finalize(target.frontend);
}

struct Gen<'a, 'c> {
    b: FunctionBuilder<'a>,
    code: &'c Code,
    plan: &'c Plan,
    words: Words,
    /// Direct: the layout of frame slots.
    layout: Option<Layout>,
    ptr: types::Type,
    call_conv: CallConv,
    /// Direct: the frame (`*mut Option<Value>`).
    frame: Value,
    buf: Value,
    exit: Block,
    blocks: HashMap<usize, Block>,
    stack_vars: HashMap<(usize, Nt), Variable>,
    slot_val: Vec<Variable>,
    slot_def: Vec<Variable>,
    fields: Vec<Variable>,
    sigs: HashMap<(Vec<types::Type>, Option<types::Type>), SigRef>,
}

fn mem() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Cranelift's type for a native scalar in memory (bools and chars are one byte).
fn mem_type(t: Nt) -> types::Type {
    t.clif()
}

impl Gen<'_, '_> {
    fn body(&mut self) {
        let n = self.code.instrs.len();
        let entry = self.b.create_block();
        self.b.append_block_params_for_function_params(entry);
        self.b.switch_to_block(entry);
        if self.layout.is_some() {
            self.frame = self.b.block_params(entry)[0];
            self.buf = self.b.block_params(entry)[1];
        } else {
            self.buf = self.b.block_params(entry)[0];
        }
        self.exit = self.b.create_block();
        self.b.append_block_param(self.exit, types::I32);
        for pc in 0..=n {
            if self.plan.block_start[pc] || pc == n {
                let blk = self.b.create_block();
                self.blocks.insert(pc, blk);
            }
        }
        // Entry: native slots and field inputs into variables.
        let nn = self.plan.natives.len();
        if let Some(layout) = self.layout {
            self.direct_entry(&layout);
        } else {
            for j in 0..nn {
                let t = self.plan.natives[j].ty;
                let v = self.b.declare_var(t.clif());
                let d = self.b.declare_var(types::I8);
                let x = self.b.ins().load(t.clif(), mem(), self.buf, (8 * j) as i32);
                // An input always holds a value (else `Jit::run` falls back before the call):
                // its flag is a constant and `Jit::run` does not write it.
                let f = if self.plan.natives[j].local {
                    let off = (8 * (self.words.flags + j)) as i32;
                    self.b.ins().load(types::I8, mem(), self.buf, off)
                } else {
                    self.b.ins().iconst(types::I8, 1)
                };
                self.b.def_var(v, x);
                self.b.def_var(d, f);
                self.slot_val.push(v);
                self.slot_def.push(d);
            }
        }
        for (k, f) in self.plan.fields.iter().enumerate() {
            let off = (8 * (self.words.fields + k)) as i32;
            let x = self.b.ins().load(f.ty.clif(), mem(), self.buf, off);
            let v = self.b.declare_var(f.ty.clif());
            self.b.def_var(v, x);
            self.fields.push(v);
        }
        let mut stack: Vec<E> = Vec::new();
        let mut open = true;
        for pc in 0..n {
            if let Some(&blk) = self.blocks.get(&pc) {
                if open {
                    self.edge(&stack, pc);
                    self.b.ins().jump(blk, &[]);
                }
                // A block without a state is unreachable: it stays empty (and is dropped).
                match &self.plan.states[pc] {
                    Some(st) => {
                        self.b.switch_to_block(blk);
                        stack = self.enter(st);
                        open = true;
                    }
                    None => open = false,
                }
            }
            if !open || self.plan.states[pc].is_none() {
                continue;
            }
            open = self.instr(pc, &mut stack);
        }
        // The end.
        let end = self.blocks[&n];
        if open {
            self.edge(&stack, n);
            self.b.ins().jump(end, &[]);
        }
        if let Some(st) = &self.plan.states[n] {
            self.b.switch_to_block(end);
            let stack = self.enter(st);
            // Whole 64-bit words: `Jit::run` reads the word back at once, and a narrower
            // store would defeat store-to-load forwarding.
            if let Some(&E::N(t, v)) = stack.last() {
                let off = (8 * self.words.result) as i32;
                let w = self.bits(t, v);
                self.b.ins().store(mem(), w, self.buf, off);
            }
            let ok = self.b.ins().iconst(types::I32, 0);
            self.b.ins().jump(self.exit, &[BlockArg::Value(ok)]);
        }
        // Exit: write back the native locals.
        self.b.switch_to_block(self.exit);
        let status = self.b.block_params(self.exit)[0];
        if let Some(layout) = self.layout {
            self.direct_exit(&layout);
        } else {
            for j in 0..nn {
                if self.plan.natives[j].local {
                    let t = self.plan.natives[j].ty;
                    let v = self.b.use_var(self.slot_val[j]);
                    let d = self.b.use_var(self.slot_def[j]);
                    let w = self.bits(t, v);
                    let d = self.b.ins().uextend(types::I64, d);
                    self.b.ins().store(mem(), w, self.buf, (8 * j) as i32);
                    let off = (8 * (self.words.flags + j)) as i32;
                    self.b.ins().store(mem(), d, self.buf, off);
                }
            }
        }
        for k in 0..self.plan.fields.len() {
            if self.plan.fields[k].stored {
                let t = self.plan.fields[k].ty;
                let v = self.b.use_var(self.fields[k]);
                let w = self.bits(t, v);
                let off = (8 * (self.words.fields + k)) as i32;
                self.b.ins().store(mem(), w, self.buf, off);
            }
        }
        self.b.ins().return_(&[status]);
    }

    /// Direct entry: checks the tag byte of every native slot in the frame (a mismatch returns
    /// -1 before anything is written) and loads the payloads into variables.
    fn direct_entry(&mut self, layout: &Layout) {
        let fallback = self.b.create_block();
        self.b.set_cold_block(fallback);
        for j in 0..self.plan.natives.len() {
            let ns = &self.plan.natives[j];
            let (t, local) = (ns.ty, ns.local);
            let base = i32::from(ns.slot) * layout.slot_size as i32;
            let v = self.b.declare_var(t.clif());
            let d = self.b.declare_var(types::I8);
            let tag = self.b.ins().load(types::I8, mem(), self.frame, base);
            let is_t = self
                .b
                .ins()
                .icmp_imm_u(IntCC::Equal, tag, i64::from(layout.tag(t)));
            let payload = base + layout.offset(t);
            if local {
                // A value of type `t`, or nothing (`None`); the payload is read only in the
                // first case.
                let is_none =
                    self.b
                        .ins()
                        .icmp_imm_u(IntCC::Equal, tag, i64::from(layout.none_tag));
                let ok = self.b.ins().bor(is_t, is_none);
                let check = self.b.create_block();
                self.b.ins().brif(ok, check, &[], fallback, &[]);
                self.b.switch_to_block(check);
                let load = self.b.create_block();
                let join = self.b.create_block();
                self.b.append_block_param(join, t.clif());
                let zero = self.zero(t);
                self.b
                    .ins()
                    .brif(is_t, load, &[], join, &[BlockArg::Value(zero)]);
                self.b.switch_to_block(load);
                let x = self.b.ins().load(mem_type(t), mem(), self.frame, payload);
                self.b.ins().jump(join, &[BlockArg::Value(x)]);
                self.b.switch_to_block(join);
                let x = self.b.block_params(join)[0];
                self.b.def_var(v, x);
                self.b.def_var(d, is_t);
            } else {
                let next = self.b.create_block();
                self.b.ins().brif(is_t, next, &[], fallback, &[]);
                self.b.switch_to_block(next);
                let x = self.b.ins().load(mem_type(t), mem(), self.frame, payload);
                let one = self.b.ins().iconst(types::I8, 1);
                self.b.def_var(v, x);
                self.b.def_var(d, one);
            }
            self.slot_val.push(v);
            self.slot_def.push(d);
        }
        let body = self.b.create_block();
        self.b.ins().jump(body, &[]);
        self.b.switch_to_block(fallback);
        let none = self.b.ins().iconst(types::I32, -1);
        self.b.ins().return_(&[none]);
        self.b.switch_to_block(body);
    }

    /// Direct exit: every native local that holds a value goes back into its frame slot (tag
    /// byte and payload; the slot held nothing or a scalar of the same type on entry, so
    /// nothing needs dropping).
    fn direct_exit(&mut self, layout: &Layout) {
        for j in 0..self.plan.natives.len() {
            let ns = &self.plan.natives[j];
            if !ns.local {
                continue;
            }
            let t = ns.ty;
            let base = i32::from(ns.slot) * layout.slot_size as i32;
            let d = self.b.use_var(self.slot_def[j]);
            let v = self.b.use_var(self.slot_val[j]);
            let write = self.b.create_block();
            let next = self.b.create_block();
            self.b.ins().brif(d, write, &[], next, &[]);
            self.b.switch_to_block(write);
            self.write_slot(layout, t, v, base);
            self.b.ins().jump(next, &[]);
            self.b.switch_to_block(next);
        }
    }

    /// Writes the scalar `v` of type `t` into the frame slot at byte `base`: the slot's first
    /// 16 bytes (the tag byte, the payload, zeros in the padding) in one 16-byte store, so that
    /// the engine's next read of the slot (16-byte loads) is forwarded from it (several
    /// narrower stores make such a load wait for them to reach the cache).
    fn write_slot(&mut self, layout: &Layout, t: Nt, v: Value, base: i32) {
        let off = layout.offset(t);
        let tag = i64::from(layout.tag(t));
        let bits = self.bits(t, v);
        let (lo, hi) = if off >= 8 {
            (self.b.ins().iconst(types::I64, tag), Some(bits))
        } else {
            // The payload is inside the first word (`probe` checked it fits the value).
            let shifted = self.b.ins().ishl_imm_u(bits, i64::from(8 * off));
            (self.b.ins().bor_imm_u(shifted, tag), None)
        };
        let vec = self.b.ins().scalar_to_vector(types::I64X2, lo);
        let vec = match hi {
            Some(hi) => self.b.ins().insertlane(vec, hi, 1),
            None => vec,
        };
        // Slots are 8-byte aligned only: no `aligned` flag.
        let mut flags = MemFlagsData::new();
        flags.set_notrap();
        self.b.ins().store(flags, vec, self.frame, base);
    }

    fn zero(&mut self, t: Nt) -> Value {
        match t {
            Nt::Float => self.b.ins().f32const(0.0),
            Nt::Double => self.b.ins().f64const(0.0),
            _ => self.b.ins().iconst(t.clif(), 0),
        }
    }

    fn var(&mut self, pos: usize, t: Nt) -> Variable {
        if let Some(v) = self.stack_vars.get(&(pos, t)) {
            return *v;
        }
        let v = self.b.declare_var(t.clif());
        self.stack_vars.insert((pos, t), v);
        v
    }

    /// Makes `stack` fit the state at `to` (boxing natives where it wants dynamic values)
    /// and hands the natives over in variables.
    fn edge(&mut self, stack: &[E], to: usize) {
        let Some(st) = self.plan.states[to].clone() else {
            return;
        };
        for (i, (e, k)) in stack.iter().zip(st.iter()).enumerate() {
            match (*e, *k) {
                (E::N(t, v), K::N(_)) => {
                    let var = self.var(i, t);
                    self.b.def_var(var, v);
                }
                (E::N(t, v), K::D) => self.box_at(i, t, v),
                _ => {}
            }
        }
    }

    fn enter(&mut self, st: &[K]) -> Vec<E> {
        let st = st.to_vec();
        st.iter()
            .enumerate()
            .map(|(i, k)| match *k {
                K::N(t) => {
                    let var = self.var(i, t);
                    E::N(t, self.b.use_var(var))
                }
                K::D => E::D,
            })
            .collect()
    }

    // -----------------------------------------------------------------------------------------
    // Calls and error paths.

    fn sig(&mut self, params: &[types::Type], ret: Option<types::Type>) -> SigRef {
        let key = (params.to_vec(), ret);
        if let Some(s) = self.sigs.get(&key) {
            return *s;
        }
        let mut sig = Signature::new(self.call_conv);
        for p in params {
            sig.params.push(AbiParam::new(*p));
        }
        if let Some(r) = ret {
            sig.returns.push(AbiParam::new(r));
        }
        let s = self.b.import_signature(sig);
        self.sigs.insert(key, s);
        s
    }

    /// Calls the helper at `addr` with `args`; returns its result, if any.
    fn call(&mut self, addr: usize, args: &[Value], ret: Option<types::Type>) -> Option<Value> {
        let params: Vec<types::Type> = args
            .iter()
            .map(|a| self.b.func.dfg.value_type(*a))
            .collect();
        let sig = self.sig(&params, ret);
        let callee = self.b.ins().iconst(self.ptr, addr as i64);
        let inst = self.b.ins().call_indirect(sig, callee, args);
        self.b.inst_results(inst).first().copied()
    }

    fn u32c(&mut self, x: u32) -> Value {
        self.b.ins().iconst(types::I32, i64::from(x))
    }

    /// Calls a helper that returns a status; a non-zero status ends the run with an error at
    /// `pc`.
    fn call_checked(&mut self, pc: usize, addr: usize, args: &[Value]) {
        let st = self.call(addr, args, Some(types::I32)).expect("status");
        self.fail_if(st, pc, rt::ErrRecord::HELPER, &[]);
    }

    /// If `cond` (non-zero) holds, ends the run with an error at `pc`, leaving the error
    /// record `kind` and the bits of the operands `args` in the buffer (no call: the caller
    /// makes the error from the record, see `rt::ErrRecord`).
    fn fail_if(&mut self, cond: Value, pc: usize, kind: u64, args: &[(Nt, Value)]) {
        let err = self.b.create_block();
        let ok = self.b.create_block();
        self.b.set_cold_block(err);
        self.b.ins().brif(cond, err, &[], ok, &[]);
        self.b.switch_to_block(err);
        let at = 8 * self.words.err as i32;
        let k = self.b.ins().iconst(types::I64, kind as i64);
        self.b.ins().store(mem(), k, self.buf, at);
        for (i, &(t, v)) in args.iter().enumerate() {
            let w = self.bits(t, v);
            self.b
                .ins()
                .store(mem(), w, self.buf, at + 8 * (i as i32 + 1));
        }
        let st = self.b.ins().iconst(types::I32, (pc + 1) as i64);
        self.b.ins().jump(self.exit, &[BlockArg::Value(st)]);
        self.b.switch_to_block(ok);
    }

    fn bits(&mut self, t: Nt, v: Value) -> Value {
        match t {
            Nt::Bool | Nt::Char | Nt::Int | Nt::UInt => self.b.ins().uextend(types::I64, v),
            Nt::Long | Nt::ULong => v,
            Nt::Float => {
                let i = self.b.ins().bitcast(types::I32, MemFlagsData::new(), v);
                self.b.ins().uextend(types::I64, i)
            }
            Nt::Double => self.b.ins().bitcast(types::I64, MemFlagsData::new(), v),
        }
    }

    fn box_at(&mut self, pos: usize, t: Nt, v: Value) {
        let bits = self.bits(t, v);
        let p = self.u32c(pos as u32);
        let tag = self.u32c(t.tag());
        self.call(
            rt::h_box as *const () as usize,
            &[p, tag, bits],
            Some(types::I32),
        );
    }

    /// Boxes the native entries among the top `n` of `stack` (for a helper on them).
    fn box_top(&mut self, stack: &mut [E], n: usize) {
        let from = stack.len() - n;
        for (i, e) in stack.iter_mut().enumerate().skip(from) {
            if let E::N(t, v) = *e {
                self.box_at(i, t, v);
                *e = E::D;
            }
        }
    }

    fn fail_binary(&mut self, cond: Value, pc: usize, op: BinOp, t: Nt, a: Value, b: Value) {
        let kind = rt::ErrRecord::binary(op, t);
        self.fail_if(cond, pc, kind, &[(t, a), (t, b)]);
    }

    fn fail_call(&mut self, cond: Value, pc: usize, f: Builtin, t: Nt, a: Value) {
        let kind = rt::ErrRecord::call(f, t);
        self.fail_if(cond, pc, kind, &[(t, a)]);
    }

    // -----------------------------------------------------------------------------------------
    // Instructions.

    /// Emits instruction `pc`; returns whether control falls through.
    fn instr(&mut self, pc: usize, stack: &mut Vec<E>) -> bool {
        let instr = self.code.instrs[pc];
        let n = self.code.instrs.len();
        let pos = stack.len();
        match instr {
            Instr::Const(c) => {
                let v = &self.code.consts[c as usize];
                match Nt::of_value(v) {
                    Some(t) => {
                        let bits = rt::bits_of(t, v).unwrap_or(0);
                        let x = match t {
                            Nt::Float => self.b.ins().f32const(f32::from_bits(bits as u32)),
                            Nt::Double => self.b.ins().f64const(f64::from_bits(bits)),
                            _ => self.b.ins().iconst(t.clif(), bits as i64),
                        };
                        stack.push(E::N(t, x));
                    }
                    None => {
                        let (p, c) = (self.u32c(pos as u32), self.u32c(c));
                        self.call_checked(pc, rt::h_const as *const () as usize, &[p, c]);
                        stack.push(E::D);
                    }
                }
            }
            Instr::Load(s) => match self.plan.native_of[usize::from(s)] {
                Some(j) => {
                    let ns = &self.plan.natives[j];
                    let t = ns.ty;
                    if ns.local {
                        let d = self.b.use_var(self.slot_def[j]);
                        let none = self.b.ins().icmp_imm_s(IntCC::Equal, d, 0);
                        self.fail_if(none, pc, rt::ErrRecord::unbound(s), &[]);
                    }
                    let v = self.b.use_var(self.slot_val[j]);
                    stack.push(E::N(t, v));
                }
                None => {
                    let (p, s) = (self.u32c(pos as u32), self.u32c(u32::from(s)));
                    self.call_checked(pc, rt::h_load as *const () as usize, &[p, s]);
                    stack.push(E::D);
                }
            },
            Instr::LoadPath(s, path) => match self.plan.field(s, path) {
                Some(k) => {
                    let t = self.plan.fields[k].ty;
                    let v = self.b.use_var(self.fields[k]);
                    stack.push(E::N(t, v));
                }
                None => {
                    let p = self.u32c(pos as u32);
                    let s = self.u32c(u32::from(s));
                    let path = self.u32c(path);
                    self.call_checked(pc, rt::h_load_path as *const () as usize, &[p, s, path]);
                    stack.push(E::D);
                }
            },
            Instr::Store(s) => match self.plan.native_of[usize::from(s)] {
                Some(j) => {
                    let Some(E::N(_, v)) = stack.pop() else {
                        return false;
                    };
                    self.b.def_var(self.slot_val[j], v);
                    let one = self.b.ins().iconst(types::I8, 1);
                    self.b.def_var(self.slot_def[j], one);
                }
                None => {
                    self.box_top(stack, 1);
                    stack.pop();
                    let p = self.u32c((pos - 1) as u32);
                    let s = self.u32c(u32::from(s));
                    self.call_checked(pc, rt::h_store as *const () as usize, &[p, s]);
                }
            },
            Instr::StorePath(s, path) if self.plan.field(s, path).is_some() => {
                let k = self.plan.field(s, path).unwrap_or(0);
                let Some(E::N(_, v)) = stack.pop() else {
                    return false;
                };
                self.b.def_var(self.fields[k], v);
            }
            Instr::StorePath(s, path) => {
                self.box_top(stack, 1);
                stack.pop();
                let p = self.u32c((pos - 1) as u32);
                let s = self.u32c(u32::from(s));
                let path = self.u32c(path);
                self.call_checked(pc, rt::h_store_path as *const () as usize, &[p, s, path]);
            }
            Instr::Dup => match stack.last().copied() {
                Some(E::N(t, v)) => stack.push(E::N(t, v)),
                _ => {
                    let p = self.u32c((pos - 1) as u32);
                    self.call_checked(pc, rt::h_dup as *const () as usize, &[p]);
                    stack.push(E::D);
                }
            },
            Instr::Pop => {
                stack.pop();
            }
            Instr::Unary(op, _) => {
                let r = match stack.last().copied() {
                    Some(E::N(t, v)) if native_unary(op, t).is_some() => Some(self.unary(op, t, v)),
                    _ => None,
                };
                match r {
                    Some(r) => {
                        stack.pop();
                        stack.push(r);
                    }
                    None => {
                        self.box_top(stack, 1);
                        let p = self.u32c((pos - 1) as u32);
                        let op = self.u32c(rt::unop_index(op));
                        self.call_checked(pc, rt::h_unary as *const () as usize, &[p, op]);
                    }
                }
            }
            Instr::Binary(op, _) => {
                let (a, b) = (stack[pos - 2], stack[pos - 1]);
                match (a, b) {
                    (E::N(x, va), E::N(y, vb)) if x == y && native_binary(op, x).is_some() => {
                        let r = self.binary(pc, op, x, va, vb);
                        stack.truncate(pos - 2);
                        stack.push(r);
                    }
                    _ => {
                        self.box_top(stack, 2);
                        let p = self.u32c((pos - 2) as u32);
                        let o = self.u32c(rt::binop_index(op));
                        self.call_checked(pc, rt::h_binary as *const () as usize, &[p, o]);
                        stack.truncate(pos - 2);
                        stack.push(E::D);
                    }
                }
            }
            Instr::Call(f) => {
                let k = f.arity();
                let args: Option<Vec<(Nt, Value)>> = stack[pos - k..]
                    .iter()
                    .map(|e| match *e {
                        E::N(t, v) => Some((t, v)),
                        E::D => None,
                    })
                    .collect();
                let native = args.as_ref().and_then(|a| {
                    let ts: Vec<Nt> = a.iter().map(|x| x.0).collect();
                    native_call(f, &ts)
                });
                match (native, args) {
                    (Some(rt_), Some(args)) => {
                        let r = self.builtin(pc, f, &args, rt_);
                        stack.truncate(pos - k);
                        stack.push(E::N(rt_, r));
                    }
                    _ => {
                        self.box_top(stack, k);
                        let p = self.u32c((pos - k) as u32);
                        let fi = self.u32c(rt::builtin_index(f));
                        self.call_checked(pc, rt::h_call as *const () as usize, &[p, fi]);
                        stack.truncate(pos - k);
                        stack.push(E::D);
                    }
                }
            }
            Instr::MakeShared(c) => {
                self.box_top(stack, 1);
                let p = self.u32c((pos - 1) as u32);
                let c = self.u32c(c);
                self.call_checked(pc, rt::h_shared as *const () as usize, &[p, c]);
            }
            Instr::Jump(t) => {
                let to = (t as usize).min(n);
                self.edge(stack, to);
                let blk = self.blocks[&to];
                self.b.ins().jump(blk, &[]);
                return false;
            }
            Instr::JumpIfFalseElsePop(t) | Instr::JumpIfTrueElsePop(t) => {
                let on = matches!(instr, Instr::JumpIfTrueElsePop(_));
                let to = (t as usize).min(n);
                let cond = match stack.last().copied() {
                    Some(E::N(_, v)) => v,
                    _ => {
                        let p = self.u32c((pos - 1) as u32);
                        let o = self.u32c(u32::from(on));
                        let truth = self
                            .call(rt::h_truth as *const () as usize, &[p, o], Some(types::I32))
                            .expect("truth");
                        let bad = self.b.ins().icmp_imm_s(IntCC::Equal, truth, 2);
                        self.fail_if(bad, pc, rt::ErrRecord::HELPER, &[]);
                        truth
                    }
                };
                // Jump when cond == on.
                self.edge(stack, to);
                let mut rest = stack.clone();
                rest.pop();
                self.edge(&rest, pc + 1);
                let (jump_blk, next_blk) = (self.blocks[&to], self.blocks[&(pc + 1)]);
                if on {
                    self.b.ins().brif(cond, jump_blk, &[], next_blk, &[]);
                } else {
                    self.b.ins().brif(cond, next_blk, &[], jump_blk, &[]);
                }
                return false;
            }
        }
        true
    }

    fn unary(&mut self, op: UnOp, t: Nt, v: Value) -> E {
        let r = match (op, t) {
            (UnOp::Neg, Nt::Float | Nt::Double) => self.b.ins().fneg(v),
            (UnOp::Neg, _) => self.b.ins().ineg(v),
            (UnOp::Not, _) => self.b.ins().bxor_imm_u(v, 1),
        };
        E::N(t, r)
    }

    fn binary(&mut self, pc: usize, op: BinOp, t: Nt, a: Value, b: Value) -> E {
        use BinOp::*;
        if let Some(cc) = cmp_cc(op, t) {
            let r = match cc {
                Cc::I(cc) => self.b.ins().icmp(cc, a, b),
                Cc::F(cc) => self.b.ins().fcmp(cc, a, b),
            };
            return E::N(Nt::Bool, r);
        }
        let r = if t.is_float() {
            match op {
                Add => self.b.ins().fadd(a, b),
                Sub => self.b.ins().fsub(a, b),
                Mul => self.b.ins().fmul(a, b),
                Div => {
                    let ab = self.b.ins().fabs(b);
                    let min = match t {
                        Nt::Float => self.b.ins().f32const(f32::MIN_POSITIVE),
                        _ => self.b.ins().f64const(f64::MIN_POSITIVE),
                    };
                    let small = self.b.ins().fcmp(FloatCC::LessThan, ab, min);
                    self.fail_binary(small, pc, op, t, a, b);
                    self.b.ins().fdiv(a, b)
                }
                _ => {
                    let (h, ty) = match t {
                        Nt::Float => (rt::h_powf32 as *const () as usize, types::F32),
                        _ => (rt::h_powf64 as *const () as usize, types::F64),
                    };
                    self.call(h, &[a, b], Some(ty)).expect("pow")
                }
            }
        } else if t == Nt::Bool {
            match op {
                Or => self.b.ins().bor(a, b),
                _ => self.b.ins().band(a, b),
            }
        } else {
            let signed = t.is_signed_int();
            match op {
                Add => self.b.ins().iadd(a, b),
                Mul => self.b.ins().imul(a, b),
                BitOr => self.b.ins().bor(a, b),
                BitAnd => self.b.ins().band(a, b),
                Sub => {
                    if !signed {
                        let under = self.b.ins().icmp(IntCC::UnsignedLessThan, a, b);
                        self.fail_binary(under, pc, op, t, a, b);
                    }
                    self.b.ins().isub(a, b)
                }
                IntDiv | Mod if self.nonzero_const(t, b).is_some() => {
                    let d = self.nonzero_const(t, b).unwrap_or(1);
                    self.div_by_const(op, t, a, b, d)
                }
                IntDiv | Mod => {
                    let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
                    self.fail_binary(zero, pc, op, t, a, b);
                    if signed {
                        // x div -1 wraps to -x; x mod -1 is 0 (no trap on MIN / -1).
                        let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
                        let one = self.b.ins().iconst(t.clif(), 1);
                        let safe = self.b.ins().select(m1, one, b);
                        if op == IntDiv {
                            let q = self.b.ins().sdiv(a, safe);
                            let neg = self.b.ins().ineg(a);
                            self.b.ins().select(m1, neg, q)
                        } else {
                            self.b.ins().srem(a, safe)
                        }
                    } else if op == IntDiv {
                        self.b.ins().udiv(a, b)
                    } else {
                        self.b.ins().urem(a, b)
                    }
                }
                _ => {
                    // IntPow
                    if signed {
                        let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, b, 0);
                        self.fail_binary(neg, pc, op, t, a, b);
                    }
                    let e = if t.clif() == types::I64 {
                        b
                    } else {
                        self.b.ins().uextend(types::I64, b)
                    };
                    let (h, ty) = if t.clif() == types::I64 {
                        (rt::h_pow64 as *const () as usize, types::I64)
                    } else {
                        (rt::h_pow32 as *const () as usize, types::I32)
                    };
                    self.call(h, &[a, e], Some(ty)).expect("pow")
                }
            }
        };
        E::N(t, r)
    }

    /// The value of `v` if it is a non-zero integer constant of type `t` (sign-extended for
    /// the signed types, zero-extended for the unsigned ones).
    fn nonzero_const(&self, t: Nt, v: Value) -> Option<i64> {
        let dfg = &self.b.func.dfg;
        let ValueDef::Result(inst, 0) = dfg.value_def(v) else {
            return None;
        };
        let InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } = dfg.insts[inst]
        else {
            return None;
        };
        let bits = imm.bits();
        let d = match t {
            Nt::Int => i64::from(bits as i32),
            Nt::UInt => i64::from(bits as u32),
            Nt::Long | Nt::ULong => bits,
            _ => return None,
        };
        (d != 0).then_some(d)
    }

    /// `a div d` / `a mod d` for a non-zero constant `d` (the Cranelift value `b`): no check
    /// can fail. `-1` is the one signed divisor that traps in Cranelift (`MIN / -1`): the
    /// language wraps, `x div -1 = -x` and `x mod -1 = 0`. Every other divisor is left to
    /// Cranelift, which turns a constant divisor into shifts or a multiplication by its
    /// "magic" reciprocal (Granlund-Montgomery; `cranelift_codegen::opts::div_const`).
    fn div_by_const(&mut self, op: BinOp, t: Nt, a: Value, b: Value, d: i64) -> Value {
        let div = op == BinOp::IntDiv;
        if t.is_signed_int() {
            match (d, div) {
                (-1, true) => self.b.ins().ineg(a),
                (-1, false) => self.b.ins().iconst(t.clif(), 0),
                (_, true) => self.b.ins().sdiv(a, b),
                (_, false) => self.b.ins().srem(a, b),
            }
        } else if div {
            self.b.ins().udiv(a, b)
        } else {
            self.b.ins().urem(a, b)
        }
    }

    fn f64_of(&mut self, t: Nt, v: Value) -> Value {
        if t == Nt::Float {
            self.b.ins().fpromote(types::F64, v)
        } else {
            v
        }
    }

    fn builtin(&mut self, pc: usize, f: Builtin, args: &[(Nt, Value)], rt_: Nt) -> Value {
        use Builtin::*;
        let (t, a) = args[0];
        match f {
            Abs if t.is_float() => self.b.ins().fabs(a),
            Abs => {
                let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, a, 0);
                let na = self.b.ins().ineg(a);
                self.b.ins().select(neg, na, a)
            }
            Min | Max => {
                let b = args[1].1;
                // min: b when a > b; max: b when a < b (NaN: a).
                let pick_b = match (f, cmp_cc(if f == Min { BinOp::Gt } else { BinOp::Lt }, t)) {
                    (_, Some(Cc::I(cc))) => self.b.ins().icmp(cc, a, b),
                    (_, Some(Cc::F(cc))) => self.b.ins().fcmp(cc, a, b),
                    (_, None) => self.b.ins().iconst(types::I8, 0),
                };
                self.b.ins().select(pick_b, b, a)
            }
            Sqrt | Log => {
                let zero = if t == Nt::Float {
                    self.b.ins().f32const(0.0)
                } else {
                    self.b.ins().f64const(0.0)
                };
                let cc = if f == Sqrt {
                    FloatCC::LessThan
                } else {
                    FloatCC::LessThanOrEqual
                };
                let bad = self.b.ins().fcmp(cc, a, zero);
                self.fail_call(bad, pc, f, t, a);
                let x = self.f64_of(t, a);
                let r = if f == Sqrt {
                    self.b.ins().sqrt(x)
                } else {
                    let fi = self.u32c(rt::builtin_index(f));
                    self.call(rt::h_math as *const () as usize, &[fi, x], Some(types::F64))
                        .expect("math")
                };
                self.demote_to(t, r)
            }
            Floor | Ceil | Round if t.is_int() => a,
            Floor | Ceil | Round | Sin | Cos => {
                let x = self.f64_of(t, a);
                let fi = self.u32c(rt::builtin_index(f));
                let r = self
                    .call(rt::h_math as *const () as usize, &[fi, x], Some(types::F64))
                    .expect("math");
                self.demote_to(t, r)
            }
            _ => self.cast(pc, f, t, a, rt_),
        }
    }

    fn demote_to(&mut self, t: Nt, r: Value) -> Value {
        if t == Nt::Float {
            self.b.ins().fdemote(types::F32, r)
        } else {
            r
        }
    }

    /// A cast between native number types (see `pnet_stdlib::builtins::cast`): float-to-integer
    /// casts are range-checked, integer-to-integer casts wrap.
    fn cast(&mut self, pc: usize, f: Builtin, from: Nt, a: Value, to: Nt) -> Value {
        if from.is_float() {
            let x = self.f64_of(from, a);
            return match to {
                Nt::Double => x,
                Nt::Float => {
                    // A finite value that becomes infinite fails.
                    let r = self.b.ins().fdemote(types::F32, x);
                    let ax = self.b.ins().fabs(x);
                    let inf = self.b.ins().f64const(f64::INFINITY);
                    let finite = self.b.ins().fcmp(FloatCC::LessThan, ax, inf);
                    let ar = self.b.ins().fabs(r);
                    let finf = self.b.ins().f32const(f32::INFINITY);
                    let rinf = self.b.ins().fcmp(FloatCC::Equal, ar, finf);
                    let bad = self.b.ins().band(finite, rinf);
                    self.fail_call(bad, pc, f, from, a);
                    r
                }
                _ => {
                    // trunc(x) in [lo, hi] <=> x > lo - 1 && x < hi + 1 (exact bounds).
                    let (lo, lo_incl, hi) = match to {
                        Nt::Int => (-2147483649.0, false, 2147483648.0),
                        Nt::UInt => (-1.0, false, 4294967296.0),
                        Nt::Long => (-9223372036854775808.0, true, 9223372036854775808.0),
                        _ => (-1.0, false, 18446744073709551616.0),
                    };
                    let lo_c = self.b.ins().f64const(lo);
                    let hi_c = self.b.ins().f64const(hi);
                    let cc_lo = if lo_incl {
                        FloatCC::GreaterThanOrEqual
                    } else {
                        FloatCC::GreaterThan
                    };
                    let above = self.b.ins().fcmp(cc_lo, x, lo_c);
                    let below = self.b.ins().fcmp(FloatCC::LessThan, x, hi_c);
                    let inr = self.b.ins().band(above, below);
                    let bad = self.b.ins().icmp_imm_s(IntCC::Equal, inr, 0);
                    self.fail_call(bad, pc, f, from, a);
                    if to.is_signed_int() {
                        self.b.ins().fcvt_to_sint_sat(to.clif(), x)
                    } else {
                        self.b.ins().fcvt_to_uint_sat(to.clif(), x)
                    }
                }
            };
        }
        // From an integer.
        let signed = from.is_signed_int();
        if to.is_float() {
            return if signed {
                self.b.ins().fcvt_from_sint(to.clif(), a)
            } else {
                self.b.ins().fcvt_from_uint(to.clif(), a)
            };
        }
        if from == to {
            return a;
        }
        // Integer-to-integer casts wrap modulo 2^N (C++20 conversion, as in GPI-Space): widen
        // to i64 by the source's signedness, then keep the low bits.
        let w = if from.clif() == types::I64 {
            a
        } else if signed {
            self.b.ins().sextend(types::I64, a)
        } else {
            self.b.ins().uextend(types::I64, a)
        };
        if to.clif() == types::I64 {
            w
        } else {
            self.b.ins().ireduce(types::I32, w)
        }
    }
}

enum Cc {
    I(IntCC),
    F(FloatCC),
}

/// The condition code of a comparison operator on `t` (`None`: not a comparison, or `==`/`!=`
/// on floats, which fail).
fn cmp_cc(op: BinOp, t: Nt) -> Option<Cc> {
    use BinOp::*;
    if t.is_float() {
        return Some(Cc::F(match op {
            Lt => FloatCC::LessThan,
            Le => FloatCC::LessThanOrEqual,
            Gt => FloatCC::GreaterThan,
            Ge => FloatCC::GreaterThanOrEqual,
            _ => return None,
        }));
    }
    let signed = matches!(t, Nt::Int | Nt::Long | Nt::Char);
    Some(Cc::I(match (op, signed) {
        (Eq, _) => IntCC::Equal,
        (Ne, _) => IntCC::NotEqual,
        (Lt, true) => IntCC::SignedLessThan,
        (Le, true) => IntCC::SignedLessThanOrEqual,
        (Gt, true) => IntCC::SignedGreaterThan,
        (Ge, true) => IntCC::SignedGreaterThanOrEqual,
        (Lt, false) => IntCC::UnsignedLessThan,
        (Le, false) => IntCC::UnsignedLessThanOrEqual,
        (Gt, false) => IntCC::UnsignedGreaterThan,
        (Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
        _ => return None,
    }))
}
