//! Abstract interpretation of a [`Code`]: the kind (native scalar or dynamic) of every stack
//! entry at every instruction, which slots live in registers, which struct fields are loaded
//! directly. Codes that break the bytecode's invariants (bad indices, stack underflow,
//! inconsistent depths where paths meet) are not compiled: the interpreter runs them and
//! reports their errors.

use pnet_bundle::{Code, Instr};
use pnet_stdlib::{BinOp, Builtin, Type, UnOp};

use crate::types::{K, Nt};

/// Where a native slot's value comes from.
#[derive(Clone, Debug)]
pub struct NativeSlot {
    pub slot: u16,
    pub ty: Nt,
    /// Stored by the code (then it may start empty, and is written back at the end);
    /// otherwise an input, which must hold a value of type `ty` when the code starts.
    pub local: bool,
}

/// A struct field held in a register: `${slot.path}` with a scalar type, where the slot is
/// never assigned as a whole and, if any of its fields is assigned, only ever accessed through
/// scalar fields. It is loaded when the code starts (the path must exist then) and, if the
/// code assigns it, written back in place at the end.
#[derive(Clone, Debug)]
pub struct FieldInput {
    pub slot: u16,
    /// The path indices that name this field (equal paths).
    pub paths: Vec<u32>,
    pub ty: Nt,
    pub stored: bool,
}

/// Word indices in the buffer shared with generated code (see [`Plan::words`]); native slot
/// values, when in the buffer, start at word 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Words {
    /// The "has a value" flags of the native slots.
    pub flags: usize,
    pub fields: usize,
    pub result: usize,
    /// The three words of the error record of a failed run (see `rt::ErrRecord`).
    pub err: usize,
    pub len: usize,
}

#[derive(Clone, Debug)]
pub struct Plan {
    /// The stack kinds before each instruction (`None`: unreachable); one more entry for the
    /// end of the program.
    pub states: Vec<Option<Vec<K>>>,
    /// Instructions that start a block (jump targets and fall-through of conditional jumps).
    pub block_start: Vec<bool>,
    pub natives: Vec<NativeSlot>,
    /// Per slot: its index in `natives`.
    pub native_of: Vec<Option<usize>>,
    pub fields: Vec<FieldInput>,
    pub max_depth: usize,
    /// Whether any helper on the value stack is called (then the code and the frame are
    /// installed for the helpers).
    pub uses_dyn: bool,
    pub native_ops: usize,
    pub dyn_ops: usize,
}

impl Plan {
    /// The field input for `LoadPath(s, p)`, if it is one.
    pub fn field(&self, s: u16, p: u32) -> Option<usize> {
        find_field(&self.fields, s, p)
    }

    /// Words of the buffer shared with generated code that reads and writes its native slots
    /// through the buffer: native slot values, their "has a value" flags, field inputs, the
    /// result.
    pub fn buf_len(&self) -> usize {
        2 * self.natives.len() + self.fields.len() + 1
    }

    pub fn result_word(&self) -> usize {
        2 * self.natives.len() + self.fields.len()
    }

    /// Where things are in the buffer shared with generated code: with `direct` (the code reads
    /// and writes its native slots in the frame itself) only the field inputs, the result and
    /// the error record.
    pub(crate) fn words(&self, direct: bool) -> Words {
        let nn = if direct { 0 } else { self.natives.len() };
        let fields = 2 * nn;
        let result = fields + self.fields.len();
        Words {
            flags: nn,
            fields,
            result,
            err: result + 1,
            len: result + 4,
        }
    }

    pub fn end_state(&self) -> Option<&Vec<K>> {
        self.states.last().and_then(|s| s.as_ref())
    }
}

/// The native result type of a unary operator on `t`, if it is done natively.
pub fn native_unary(op: UnOp, t: Nt) -> Option<Nt> {
    match (op, t) {
        (UnOp::Neg, Nt::Int | Nt::Long | Nt::Float | Nt::Double) => Some(t),
        (UnOp::Not, Nt::Bool) => Some(Nt::Bool),
        _ => None,
    }
}

/// The native result type of a binary operator on two `t`s, if it is done natively.
pub fn native_binary(op: BinOp, t: Nt) -> Option<Nt> {
    use BinOp::*;
    let cmp = matches!(op, Lt | Le | Gt | Ge);
    let eq = matches!(op, Eq | Ne);
    match t {
        Nt::Int | Nt::Long | Nt::UInt | Nt::ULong => match op {
            Add | Sub | Mul | IntDiv | Mod | IntPow | BitOr | BitAnd => Some(t),
            _ if cmp || eq => Some(Nt::Bool),
            _ => None,
        },
        Nt::Float | Nt::Double => match op {
            Add | Sub | Mul | Div | Pow => Some(t),
            _ if cmp => Some(Nt::Bool),
            _ => None,
        },
        Nt::Bool => (cmp || eq || matches!(op, Or | And)).then_some(Nt::Bool),
        Nt::Char => (cmp || eq).then_some(Nt::Bool),
    }
}

/// The native result type of a built-in on native arguments, if it is done natively.
pub fn native_call(f: Builtin, args: &[Nt]) -> Option<Nt> {
    use Builtin::*;
    match (f, args) {
        (Abs, [t]) if t.is_signed_int() || t.is_float() => Some(*t),
        (Floor | Ceil | Round | Sin | Cos | Sqrt | Log, [t]) if t.is_float() => Some(*t),
        // On integers (as in GPI-Space): the argument unchanged.
        (Floor | Ceil | Round, [t]) if t.is_int() => Some(*t),
        (ToInt | ToLong | ToUInt | ToULong | ToFloat | ToDouble, [t]) if t.is_number() => {
            Some(match f {
                ToInt => Nt::Int,
                ToLong => Nt::Long,
                ToUInt => Nt::UInt,
                ToULong => Nt::ULong,
                ToFloat => Nt::Float,
                _ => Nt::Double,
            })
        }
        (Min | Max, [a, b]) if a == b && a.is_number() => Some(*a),
        _ => None,
    }
}

fn find_field(fields: &[FieldInput], s: u16, p: u32) -> Option<usize> {
    fields
        .iter()
        .position(|f| f.slot == s && f.paths.contains(&p))
}

/// The fields held in registers, for the slots whose fields may be (`unpack`).
fn build_fields(code: &Code, unpack: &[bool]) -> Vec<FieldInput> {
    let mut fields: Vec<FieldInput> = Vec::new();
    for i in &code.instrs {
        let (Instr::LoadPath(s, p) | Instr::StorePath(s, p)) = *i else {
            continue;
        };
        let su = usize::from(s);
        if !unpack[su] {
            continue;
        }
        let path = &code.paths[p as usize];
        let Some(ty) = path_type(&code.slots[su].ty, path).and_then(Nt::of_type) else {
            continue;
        };
        let stored = matches!(i, Instr::StorePath(..));
        match fields
            .iter_mut()
            .find(|f| f.slot == s && code.paths[f.paths[0] as usize] == *path)
        {
            Some(f) => {
                if !f.paths.contains(&p) {
                    f.paths.push(p);
                }
                f.stored |= stored;
            }
            None => fields.push(FieldInput {
                slot: s,
                paths: vec![p],
                ty,
                stored,
            }),
        }
    }
    fields
}

/// The static type of `${slot.path}` when the slot's type is a struct type.
fn path_type<'t>(mut t: &'t Type, path: &[String]) -> Option<&'t Type> {
    for name in path {
        let Type::Struct(st) = t else {
            return None;
        };
        t = &st.fields.iter().find(|(n, _)| &**n == name.as_str())?.1;
    }
    Some(t)
}

/// Analyses `code`; `None` if it is not compiled.
pub fn analyse(code: &Code) -> Option<Plan> {
    let n = code.instrs.len();
    let nslots = code.slots.len();
    if code.spans.len() != n || n > 1 << 20 {
        return None;
    }
    // Candidate native slots: scalar static type, never accessed through a path.
    let mut slot_nt: Vec<Option<Nt>> = code.slots.iter().map(|s| Nt::of_type(&s.ty)).collect();
    let mut stored = vec![false; nslots];
    let mut path_stored = vec![false; nslots];
    for i in &code.instrs {
        match *i {
            Instr::Load(s) | Instr::Store(s) | Instr::LoadPath(s, _) | Instr::StorePath(s, _)
                if usize::from(s) >= nslots =>
            {
                return None;
            }
            Instr::LoadPath(s, _) => slot_nt[usize::from(s)] = None,
            Instr::StorePath(s, _) => {
                slot_nt[usize::from(s)] = None;
                path_stored[usize::from(s)] = true;
            }
            Instr::Store(s) => stored[usize::from(s)] = true,
            _ => {}
        }
        match *i {
            Instr::LoadPath(_, p) | Instr::StorePath(_, p) if p as usize >= code.paths.len() => {
                return None;
            }
            Instr::Const(c) | Instr::MakeShared(c) if c as usize >= code.consts.len() => {
                return None;
            }
            _ => {}
        }
    }
    // Only forward jumps (the compiler makes no loops; a loop stays with the interpreter).
    for (pc, i) in code.instrs.iter().enumerate() {
        if let Instr::Jump(t) | Instr::JumpIfFalseElsePop(t) | Instr::JumpIfTrueElsePop(t) = *i
            && (t as usize) <= pc
        {
            return None;
        }
    }
    // Slots whose scalar fields may live in registers: never assigned as a whole; if a field
    // is assigned, only accessed through scalar fields.
    let mut unpack: Vec<bool> = (0..nslots).map(|s| !stored[s]).collect();
    for i in &code.instrs {
        match *i {
            Instr::Load(s) if path_stored[usize::from(s)] => unpack[usize::from(s)] = false,
            Instr::LoadPath(s, p) | Instr::StorePath(s, p) if path_stored[usize::from(s)] => {
                let su = usize::from(s);
                if path_type(&code.slots[su].ty, &code.paths[p as usize])
                    .and_then(Nt::of_type)
                    .is_none()
                {
                    unpack[su] = false;
                }
            }
            _ => {}
        }
    }
    let mut fields = build_fields(code, &unpack);
    // Iterate: a slot stored with a value of another kind stops being native.
    for _round in 0..=nslots {
        match flow(code, &slot_nt, &fields) {
            Flow::Done(states, block_start, max_depth, ops) => {
                let mut natives = Vec::new();
                let mut native_of = vec![None; nslots];
                for (s, t) in slot_nt.iter().enumerate() {
                    if let Some(t) = t {
                        let used = code.instrs.iter().any(|i| {
                            matches!(*i, Instr::Load(x) | Instr::Store(x) if usize::from(x) == s)
                        });
                        if used {
                            native_of[s] = Some(natives.len());
                            natives.push(NativeSlot {
                                slot: s as u16,
                                ty: *t,
                                local: stored[s],
                            });
                        }
                    }
                }
                let (native_ops, dyn_ops) = ops;
                return Some(Plan {
                    states,
                    block_start,
                    natives,
                    native_of,
                    fields,
                    max_depth,
                    uses_dyn: dyn_ops > 0,
                    native_ops,
                    dyn_ops,
                });
            }
            Flow::Demote(s) => slot_nt[s] = None,
            Flow::Pack(s) => {
                unpack[s] = false;
                fields = build_fields(code, &unpack);
            }
            Flow::Reject => return None,
        }
    }
    None
}

enum Flow {
    Done(Vec<Option<Vec<K>>>, Vec<bool>, usize, (usize, usize)),
    Demote(usize),
    /// A struct slot whose fields cannot live in registers after all.
    Pack(usize),
    Reject,
}

fn flow(code: &Code, slot_nt: &[Option<Nt>], fields: &[FieldInput]) -> Flow {
    let n = code.instrs.len();
    let mut states: Vec<Option<Vec<K>>> = vec![None; n + 1];
    let mut block_start = vec![false; n + 1];
    for i in &code.instrs {
        if let Instr::Jump(t) | Instr::JumpIfFalseElsePop(t) | Instr::JumpIfTrueElsePop(t) = *i {
            block_start[(t as usize).min(n)] = true;
        }
    }
    states[0] = Some(Vec::new());
    let mut work = vec![0usize];
    let mut max_depth = 0;
    // Merges `st` into the state at `to`; queues `to` when it changed.
    let merge = |states: &mut Vec<Option<Vec<K>>>, work: &mut Vec<usize>, to: usize, st: Vec<K>| {
        match &mut states[to] {
            None => {
                states[to] = Some(st);
                work.push(to);
                true
            }
            Some(old) => {
                if old.len() != st.len() {
                    return false;
                }
                let mut changed = false;
                for (o, k) in old.iter_mut().zip(st) {
                    if *o != k {
                        *o = K::D;
                        changed = true;
                    }
                }
                if changed {
                    work.push(to);
                }
                true
            }
        }
    };
    while let Some(pc) = work.pop() {
        if pc >= n {
            continue;
        }
        let Some(mut st) = states[pc].clone() else {
            continue;
        };
        let instr = code.instrs[pc];
        macro_rules! pop {
            () => {
                match st.pop() {
                    Some(k) => k,
                    None => return Flow::Reject,
                }
            };
        }
        let mut next = Some(pc + 1);
        match instr {
            Instr::Const(c) => st.push(match Nt::of_value(&code.consts[c as usize]) {
                Some(t) => K::N(t),
                None => K::D,
            }),
            Instr::Load(s) => st.push(match slot_nt[usize::from(s)] {
                Some(t) => K::N(t),
                None => K::D,
            }),
            Instr::LoadPath(s, p) => st.push(match find_field(fields, s, p) {
                Some(f) => K::N(fields[f].ty),
                None => K::D,
            }),
            Instr::Store(s) => {
                let k = pop!();
                if let Some(t) = slot_nt[usize::from(s)]
                    && k != K::N(t)
                {
                    return Flow::Demote(usize::from(s));
                }
            }
            Instr::StorePath(s, p) => {
                let k = pop!();
                if let Some(f) = find_field(fields, s, p)
                    && k != K::N(fields[f].ty)
                {
                    return Flow::Pack(usize::from(s));
                }
            }
            Instr::Pop => {
                pop!();
            }
            Instr::Dup => {
                let k = pop!();
                st.push(k);
                st.push(k);
            }
            Instr::Unary(op, _) => {
                let k = pop!();
                st.push(match k {
                    K::N(t) => native_unary(op, t).map_or(K::D, K::N),
                    K::D => K::D,
                });
            }
            Instr::Binary(op, _) => {
                let b = pop!();
                let a = pop!();
                st.push(match (a, b) {
                    (K::N(x), K::N(y)) if x == y => native_binary(op, x).map_or(K::D, K::N),
                    _ => K::D,
                });
            }
            Instr::Call(f) => {
                let mut args = Vec::new();
                for _ in 0..f.arity() {
                    args.push(pop!());
                }
                args.reverse();
                let nts: Option<Vec<Nt>> = args
                    .iter()
                    .map(|k| match k {
                        K::N(t) => Some(*t),
                        K::D => None,
                    })
                    .collect();
                st.push(nts.and_then(|a| native_call(f, &a)).map_or(K::D, K::N));
            }
            Instr::MakeShared(c) => {
                if !matches!(code.consts[c as usize], pnet_stdlib::Value::String(_)) {
                    return Flow::Reject;
                }
                pop!();
                st.push(K::D);
            }
            Instr::Jump(t) => {
                next = None;
                if !merge(&mut states, &mut work, (t as usize).min(n), st.clone()) {
                    return Flow::Reject;
                }
            }
            Instr::JumpIfFalseElsePop(t) | Instr::JumpIfTrueElsePop(t) => {
                match st.last() {
                    Some(K::N(Nt::Bool)) | Some(K::D) => {}
                    _ => return Flow::Reject,
                }
                if !merge(&mut states, &mut work, (t as usize).min(n), st.clone()) {
                    return Flow::Reject;
                }
                st.pop();
                block_start[pc + 1] = true;
            }
        }
        max_depth = max_depth.max(st.len());
        if let Some(to) = next
            && !merge(&mut states, &mut work, to, st)
        {
            return Flow::Reject;
        }
    }
    // Count the operations done natively and through helpers (reachable code only).
    let mut ops = (0, 0);
    for pc in 0..n {
        let (Some(st), Some(after)) = (&states[pc], states.get(pc + 1)) else {
            continue;
        };
        let native = match code.instrs[pc] {
            Instr::Const(_)
            | Instr::Load(_)
            | Instr::LoadPath(..)
            | Instr::Unary(..)
            | Instr::Binary(..)
            | Instr::Call(_) => {
                // The result's kind: after this instruction (if it falls through).
                let _ = after;
                kind_after(code, pc, st, slot_nt, fields) != K::D
            }
            Instr::Store(s) => slot_nt[usize::from(s)].is_some(),
            Instr::StorePath(s, p) => find_field(fields, s, p).is_some(),
            Instr::MakeShared(_) => false,
            Instr::Dup | Instr::Pop => st.last() != Some(&K::D),
            Instr::Jump(_) => true,
            Instr::JumpIfFalseElsePop(_) | Instr::JumpIfTrueElsePop(_) => st.last() != Some(&K::D),
        };
        if native {
            ops.0 += 1;
        } else {
            ops.1 += 1;
        }
    }
    Flow::Done(states, block_start, max_depth, ops)
}

/// The kind of the value an instruction pushes, given the stack before it.
fn kind_after(
    code: &Code,
    pc: usize,
    st: &[K],
    slot_nt: &[Option<Nt>],
    fields: &[FieldInput],
) -> K {
    let top = |k: usize| st.get(st.len().wrapping_sub(k)).copied().unwrap_or(K::D);
    match code.instrs[pc] {
        Instr::Const(c) => Nt::of_value(&code.consts[c as usize]).map_or(K::D, K::N),
        Instr::Load(s) => slot_nt[usize::from(s)].map_or(K::D, K::N),
        Instr::LoadPath(s, p) => find_field(fields, s, p).map_or(K::D, |f| K::N(fields[f].ty)),
        Instr::Unary(op, _) => match top(1) {
            K::N(t) => native_unary(op, t).map_or(K::D, K::N),
            K::D => K::D,
        },
        Instr::Binary(op, _) => match (top(2), top(1)) {
            (K::N(x), K::N(y)) if x == y => native_binary(op, x).map_or(K::D, K::N),
            _ => K::D,
        },
        Instr::Call(f) => {
            let n = f.arity();
            let args: Option<Vec<Nt>> = (0..n)
                .map(|i| match top(n - i) {
                    K::N(t) => Some(t),
                    K::D => None,
                })
                .collect();
            args.and_then(|a| native_call(f, &a)).map_or(K::D, K::N)
        }
        _ => K::D,
    }
}
