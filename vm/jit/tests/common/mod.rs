//! A generator of random well-typed bytecode programs (typed stack discipline) and of frames
//! full of edge values, shared by the differential tests and the long run.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use num_bigint::BigInt;
use pnet_bundle::{Code, Instr, OpTy, Slot, SlotKind, SourceFileId, SourceSpan};
use pnet_stdlib::{BinOp, Bitset, Builtin, StructType, Type, UnOp, Value};

/// xorshift64*: cheap and deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

pub const S_BOOL: u16 = 0;
pub const S_INT: u16 = 1;
pub const S_LONG: u16 = 2;
pub const S_UINT: u16 = 3;
pub const S_ULONG: u16 = 4;
pub const S_FLOAT: u16 = 5;
pub const S_DOUBLE: u16 = 6;
pub const S_CHAR: u16 = 7;
pub const S_STRING: u16 = 8;
pub const S_BIGINT: u16 = 9;
pub const S_LIST: u16 = 10;
pub const S_SET: u16 = 11;
pub const S_MAP: u16 = 12;
pub const S_BITSET: u16 = 13;
pub const S_POINT: u16 = 14;
pub const S_L_LONG: u16 = 15;
pub const S_L_DOUBLE: u16 = 16;
pub const S_L_BOOL: u16 = 17;
pub const S_L_STRING: u16 = 18;
pub const S_L_UINT: u16 = 19;

fn point_type() -> Type {
    let inner = Type::Struct(Arc::new(StructType {
        name: Arc::from("inner"),
        fields: vec![(Arc::from("z"), Type::Int)],
    }));
    Type::Struct(Arc::new(StructType {
        name: Arc::from("point"),
        fields: vec![
            (Arc::from("x"), Type::Long),
            (Arc::from("y"), Type::Double),
            (Arc::from("s"), inner),
        ],
    }))
}

pub fn slots() -> Vec<Slot> {
    let port = |name: &str, ty: Type| Slot {
        name: name.into(),
        kind: SlotKind::Port,
        ty,
    };
    let local = |name: &str, ty: Type| Slot {
        name: name.into(),
        kind: SlotKind::Local,
        ty,
    };
    vec![
        port("b", Type::Bool),
        port("i", Type::Int),
        port("l", Type::Long),
        port("u", Type::UInt),
        port("ul", Type::ULong),
        port("f", Type::Float),
        port("d", Type::Double),
        port("c", Type::Char),
        port("s", Type::String),
        port("big", Type::Bigint),
        port("list", Type::List(Box::new(Type::Long))),
        port("set", Type::Set(Box::new(Type::Int))),
        port("map", Type::Map(Box::new(Type::Int), Box::new(Type::Long))),
        port("bs", Type::Bitset),
        port("p", point_type()),
        local("zl", Type::Long),
        local("zd", Type::Double),
        local("zb", Type::Bool),
        local("zs", Type::String),
        local("zu", Type::UInt),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum T {
    Bool,
    Int,
    Long,
    UInt,
    ULong,
    Float,
    Double,
    Char,
    String,
    Bigint,
    List,
    Set,
    Map,
    Bitset,
}

const SCALARS: [T; 8] = [
    T::Bool,
    T::Int,
    T::Long,
    T::UInt,
    T::ULong,
    T::Float,
    T::Double,
    T::Char,
];
const NUMBERS: [T; 6] = [T::Int, T::Long, T::UInt, T::ULong, T::Float, T::Double];
const ALL: [T; 14] = [
    T::Bool,
    T::Int,
    T::Long,
    T::UInt,
    T::ULong,
    T::Float,
    T::Double,
    T::Char,
    T::String,
    T::Bigint,
    T::List,
    T::Set,
    T::Map,
    T::Bitset,
];

fn op_ty(t: T) -> OpTy {
    match t {
        T::Bool => OpTy::Bool,
        T::Int => OpTy::Int,
        T::Long => OpTy::Long,
        T::UInt => OpTy::UInt,
        T::ULong => OpTy::ULong,
        T::Float => OpTy::Float,
        T::Double => OpTy::Double,
        T::Char => OpTy::Char,
        _ => OpTy::Dyn,
    }
}

fn cast_to(t: T) -> Builtin {
    match t {
        T::Int => Builtin::ToInt,
        T::Long => Builtin::ToLong,
        T::UInt => Builtin::ToUInt,
        T::ULong => Builtin::ToULong,
        T::Float => Builtin::ToFloat,
        T::Double => Builtin::ToDouble,
        _ => Builtin::ToBigint,
    }
}

/// A bitset element by `k`: 0, a word boundary (63, 64), 2^32 - 1, 2^63, near the largest
/// unsigned long, beyond 2^16 words, or random.
pub fn large_element(r: &mut Rng, k: usize) -> u64 {
    match k % 8 {
        0 => 0,
        1 => 63,
        2 => 64,
        3 => (1 << 32) - 1,
        4 => 1 << 63,
        5 => u64::MAX - r.next() % 130,
        6 => 64 * 70_000 + r.next() % 64,
        _ => r.next(),
    }
}

/// An edge value (or a random one) of type `t`.
pub fn value(r: &mut Rng, t: T) -> Value {
    let raw = r.next();
    let k = r.below(10);
    match t {
        T::Bool => Value::Bool(raw & 1 == 1),
        T::Int => Value::Int(match k {
            0 => 0,
            1 => -1,
            2 => i32::MAX,
            3 => i32::MIN,
            4 => 1,
            5 => 2,
            6 => (raw % 7) as i32 - 3,
            _ => raw as i32,
        }),
        T::Long => Value::Long(match k {
            0 => 0,
            1 => -1,
            2 => i64::MAX,
            3 => i64::MIN,
            4 => 1,
            5 => i64::from(i32::MIN) - 1,
            6 => (raw % 7) as i64 - 3,
            7 => (raw as i64) >> 20,
            _ => raw as i64,
        }),
        T::UInt => Value::UInt(match k {
            0 => 0,
            1 => u32::MAX,
            2 => 1,
            3 => i32::MAX as u32,
            4 => 2,
            5 => (raw % 5) as u32,
            _ => raw as u32,
        }),
        T::ULong => Value::ULong(match k {
            0 => 0,
            1 => u64::MAX,
            2 => 1,
            3 => i64::MAX as u64,
            4 => u64::from(u32::MAX),
            5 => raw % 5,
            6 => raw % 200,
            _ => raw,
        }),
        T::Float => Value::Float(match k {
            0 => 0.0,
            1 => -1.0,
            2 => f32::MAX,
            3 => f32::MIN,
            4 => f32::NAN,
            5 => f32::INFINITY,
            6 => -0.0,
            7 => f32::MIN_POSITIVE / 2.0,
            8 => 2.5,
            _ => (raw as i32) as f32 / 1000.0,
        }),
        T::Double => Value::Double(match k {
            0 => 0.0,
            1 => -1.0,
            2 => f64::MAX,
            3 => f64::MIN,
            4 => f64::NAN,
            5 => f64::NEG_INFINITY,
            6 => -0.5,
            7 => 9.3e18,
            8 => 2.5,
            _ => (raw as i64) as f64 / 1e6,
        }),
        T::Char => Value::Char(match k {
            0 => 0,
            1 => -1,
            2 => i8::MAX,
            3 => i8::MIN,
            _ => raw as i8,
        }),
        T::String => Value::string(["", "a", "ab", "0x/", "0x/00000000000000ff/", "b"][k % 6]),
        T::Bigint => Value::bigint(match k {
            0 => BigInt::from(0),
            1 => BigInt::from(-1),
            2 => BigInt::from(u64::MAX) * BigInt::from(u64::MAX),
            3 => BigInt::from(i64::MIN),
            _ => BigInt::from(raw as i64 % 1000),
        }),
        T::List => Value::List((0..k % 4).map(|_| value(r, T::Long)).collect()),
        T::Set => Value::Set(
            (0..k % 4)
                .map(|i| Value::Int(i as i32 - 1))
                .collect::<BTreeSet<_>>(),
        ),
        T::Map => Value::Map(
            (0..k % 4)
                .map(|i| (Value::Int(i as i32), value(r, T::Long)))
                .collect::<BTreeMap<_, _>>(),
        ),
        // Dense words, or elements anywhere up to the largest unsigned long (stored sparse).
        T::Bitset if k % 4 == 3 => Value::Bitset(Bitset::from_elements(
            (0..k % 5).map(|i| large_element(r, i)),
        )),
        T::Bitset => Value::Bitset(Bitset::from_words((0..k % 3).map(|_| r.next() & 0xffff))),
    }
}

fn slot_of(t: T) -> Option<u16> {
    Some(match t {
        T::Bool => S_BOOL,
        T::Int => S_INT,
        T::Long => S_LONG,
        T::UInt => S_UINT,
        T::ULong => S_ULONG,
        T::Float => S_FLOAT,
        T::Double => S_DOUBLE,
        T::Char => S_CHAR,
        T::String => S_STRING,
        T::Bigint => S_BIGINT,
        T::List => S_LIST,
        T::Set => S_SET,
        T::Map => S_MAP,
        T::Bitset => S_BITSET,
    })
}

fn local_of(t: T) -> Option<u16> {
    Some(match t {
        T::Long => S_L_LONG,
        T::Double => S_L_DOUBLE,
        T::Bool => S_L_BOOL,
        T::String => S_L_STRING,
        T::UInt => S_L_UINT,
        _ => return None,
    })
}

/// Builds one random program.
pub struct Gen<'r> {
    pub r: &'r mut Rng,
    instrs: Vec<Instr>,
    consts: Vec<Value>,
    paths: Vec<Vec<String>>,
}

fn span(i: usize) -> SourceSpan {
    SourceSpan {
        file: SourceFileId(0),
        start: i as u32,
        end: i as u32 + 1,
    }
}

impl<'r> Gen<'r> {
    pub fn new(r: &'r mut Rng) -> Gen<'r> {
        Gen {
            r,
            instrs: Vec::new(),
            consts: Vec::new(),
            paths: vec![
                vec!["x".into()],
                vec!["y".into()],
                vec!["s".into(), "z".into()],
                vec!["w".into()],
            ],
        }
    }

    /// A program whose value has a random type (sometimes a statement list, sometimes
    /// wrapped as shared).
    pub fn program(mut self, max_depth: u32) -> Code {
        let t = if self.r.chance(60) {
            self.r.pick(&SCALARS)
        } else {
            self.r.pick(&ALL)
        };
        if self.r.chance(15) {
            let u = self.r.pick(&ALL);
            self.expr(u, max_depth);
            self.emit(Instr::Pop);
        }
        self.expr(t, max_depth);
        if self.r.chance(3) {
            let c = self.constant(Value::string("P"));
            self.emit(Instr::MakeShared(c));
        }
        let n = self.instrs.len();
        Code {
            name: "expression of t".into(),
            spans: (0..n).map(span).collect(),
            instrs: self.instrs,
            consts: self.consts,
            paths: self.paths,
            slots: slots(),
            reads: Vec::new(),
            result: Type::Any,
            span: span(9999),
        }
    }

    fn emit(&mut self, i: Instr) {
        self.instrs.push(i);
    }

    fn constant(&mut self, v: Value) -> u32 {
        self.consts.push(v);
        (self.consts.len() - 1) as u32
    }

    fn leaf(&mut self, t: T) {
        match self.r.below(10) {
            0..=3 => {
                let v = value(self.r, t);
                let c = self.constant(v);
                self.emit(Instr::Const(c));
            }
            4 if local_of(t).is_some() => {
                // A local: unbound unless assigned before.
                self.emit(Instr::Load(local_of(t).unwrap_or(0)));
            }
            5 if matches!(t, T::Long | T::Double | T::Int) => {
                let p = match t {
                    T::Long => 0,
                    T::Double => 1,
                    _ => 2,
                };
                self.emit(Instr::LoadPath(S_POINT, p));
            }
            _ => self.emit(Instr::Load(slot_of(t).unwrap_or(0))),
        }
    }

    pub fn expr(&mut self, t: T, depth: u32) {
        if depth == 0 || self.r.chance(20) {
            return self.leaf(t);
        }
        let d = depth - 1;
        // Assignments to locals and struct fields.
        if self.r.chance(8) {
            let to_field = matches!(t, T::Long | T::Double) && self.r.chance(50);
            if let Some(s) = local_of(t).filter(|_| !to_field) {
                self.expr(t, d);
                self.emit(Instr::Dup);
                self.emit(Instr::Store(s));
                return;
            }
            if matches!(t, T::Long | T::Double) {
                self.expr(t, d);
                self.emit(Instr::Dup);
                let p = if self.r.chance(80) {
                    if t == T::Long { 0 } else { 1 }
                } else {
                    3
                };
                self.emit(Instr::StorePath(S_POINT, p));
                return;
            }
        }
        match t {
            T::Bool => self.bool_expr(d),
            T::Int | T::Long | T::UInt | T::ULong => self.int_expr(t, d),
            T::Float | T::Double => self.float_expr(t, d),
            T::Char => self.leaf(t),
            T::String => match self.r.below(3) {
                0 => {
                    self.expr(T::String, d);
                    self.expr(T::String, d);
                    self.emit(Instr::Binary(BinOp::Add, OpTy::Dyn));
                }
                1 => {
                    self.expr(T::Bitset, d);
                    self.emit(Instr::Call(Builtin::BitsetToHex));
                }
                _ => self.leaf(t),
            },
            T::Bigint => match self.r.below(5) {
                0 => {
                    let n = self.r.pick(&NUMBERS);
                    self.expr(n, d);
                    self.emit(Instr::Call(Builtin::ToBigint));
                }
                1 => {
                    self.expr(T::Bigint, d);
                    self.emit(Instr::Unary(UnOp::Neg, OpTy::Dyn));
                }
                2 => {
                    self.expr(T::Bigint, d);
                    let e = self.r.below(20) as i64 - 2;
                    let c = self.constant(Value::bigint(BigInt::from(e)));
                    self.emit(Instr::Const(c));
                    self.emit(Instr::Binary(BinOp::IntPow, OpTy::Dyn));
                }
                _ => {
                    let op = self.r.pick(&[
                        BinOp::Add,
                        BinOp::Sub,
                        BinOp::Mul,
                        BinOp::IntDiv,
                        BinOp::Mod,
                        BinOp::BitOr,
                        BinOp::BitAnd,
                    ]);
                    self.expr(T::Bigint, d);
                    self.expr(T::Bigint, d);
                    self.emit(Instr::Binary(op, OpTy::Dyn));
                }
            },
            T::List => match self.r.below(3) {
                0 => {
                    self.expr(T::List, d);
                    self.expr(T::Long, d);
                    self.emit(Instr::Call(Builtin::StackPush));
                }
                1 => {
                    self.expr(T::List, d);
                    self.emit(Instr::Call(Builtin::StackPop));
                }
                _ => {
                    self.expr(T::List, d);
                    self.expr(T::List, d);
                    self.emit(Instr::Call(Builtin::StackJoin));
                }
            },
            T::Set => {
                let f = self
                    .r
                    .pick(&[Builtin::SetInsert, Builtin::SetErase, Builtin::SetPop]);
                self.expr(T::Set, d);
                if f != Builtin::SetPop {
                    self.expr(T::Int, d);
                }
                self.emit(Instr::Call(f));
            }
            T::Map => {
                if self.r.chance(50) {
                    self.expr(T::Map, d);
                    self.expr(T::Int, d);
                    self.expr(T::Long, d);
                    self.emit(Instr::Call(Builtin::MapAssign));
                } else {
                    self.expr(T::Map, d);
                    self.expr(T::Int, d);
                    self.emit(Instr::Call(Builtin::MapUnassign));
                }
            }
            T::Bitset => match self.r.below(3) {
                0 => {
                    let f = self.r.pick(&[Builtin::BitsetInsert, Builtin::BitsetDelete]);
                    self.expr(T::Bitset, d);
                    self.element(d);
                    self.emit(Instr::Call(f));
                }
                1 => {
                    let f =
                        self.r
                            .pick(&[Builtin::BitsetOr, Builtin::BitsetAnd, Builtin::BitsetXor]);
                    self.expr(T::Bitset, d);
                    self.expr(T::Bitset, d);
                    self.emit(Instr::Call(f));
                }
                _ => {
                    self.expr(T::String, d);
                    self.emit(Instr::Call(Builtin::BitsetFromHex));
                }
            },
        }
    }

    /// A bitset element: mostly below 1000 (so that sets meet), else any unsigned long or
    /// one near a word boundary far out (up to the largest unsigned long).
    fn element(&mut self, d: u32) {
        match self.r.below(4) {
            0 | 1 => {
                self.expr(T::ULong, d);
                let c = self.constant(Value::ULong(1000));
                self.emit(Instr::Const(c));
                self.emit(Instr::Binary(BinOp::Mod, OpTy::ULong));
            }
            2 => self.expr(T::ULong, d),
            _ => {
                let k = self.r.below(8);
                let e = large_element(self.r, k);
                let c = self.constant(Value::ULong(e));
                self.emit(Instr::Const(c));
            }
        }
    }

    fn bool_expr(&mut self, d: u32) {
        match self.r.below(9) {
            0 | 1 => {
                let t = self.r.pick(&ALL[..10]);
                let op = self.r.pick(&[BinOp::Lt, BinOp::Le, BinOp::Gt, BinOp::Ge]);
                self.expr(t, d);
                self.expr(t, d);
                self.emit(Instr::Binary(op, op_ty(t)));
            }
            2 => {
                let t = self.r.pick(&ALL);
                let op = self.r.pick(&[BinOp::Eq, BinOp::Ne]);
                self.expr(t, d);
                self.expr(t, d);
                self.emit(Instr::Binary(op, op_ty(t)));
            }
            3 => {
                self.expr(T::Bool, d);
                self.emit(Instr::Unary(UnOp::Not, OpTy::Bool));
            }
            4 | 5 => {
                // Short-circuit && / ||.
                let or = self.r.chance(50);
                self.expr(T::Bool, d);
                let at = self.instrs.len();
                self.emit(Instr::Jump(0));
                self.expr(T::Bool, d);
                let end = self.instrs.len() as u32;
                self.instrs[at] = if or {
                    Instr::JumpIfTrueElsePop(end)
                } else {
                    Instr::JumpIfFalseElsePop(end)
                };
            }
            6 => {
                let op = self.r.pick(&[BinOp::Or, BinOp::And, BinOp::Add]);
                self.expr(T::Bool, d);
                self.expr(T::Bool, d);
                self.emit(Instr::Binary(op, OpTy::Bool));
            }
            7 => match self.r.below(6) {
                0 => {
                    self.expr(T::List, d);
                    self.emit(Instr::Call(Builtin::StackEmpty));
                }
                1 => {
                    self.expr(T::Set, d);
                    self.expr(T::Int, d);
                    self.emit(Instr::Call(Builtin::SetIsElement));
                }
                2 => {
                    self.expr(T::Bitset, d);
                    self.expr(T::ULong, d);
                    self.emit(Instr::Call(Builtin::BitsetIsElement));
                }
                3 => {
                    self.expr(T::Map, d);
                    self.expr(T::Int, d);
                    self.emit(Instr::Call(Builtin::MapIsAssigned));
                }
                4 => {
                    self.expr(T::Set, d);
                    self.expr(T::Set, d);
                    self.emit(Instr::Call(Builtin::SetIsSubset));
                }
                _ => {
                    self.expr(T::Map, d);
                    self.emit(Instr::Call(Builtin::MapEmpty));
                }
            },
            _ => self.leaf(T::Bool),
        }
    }

    /// A constant divisor of type `t`: every sign and size (0, 1, -1, small, large, the
    /// extremes, powers of two and their negatives, neighbours of both).
    pub fn divisor(&mut self, t: T) -> Value {
        const SIGNED: [i64; 24] = [
            0,
            1,
            -1,
            2,
            -2,
            3,
            -3,
            7,
            -7,
            10,
            1000,
            -1000,
            4,
            8,
            -8,
            641,
            65_536,
            -65_536,
            0x7fff,
            1 << 30,
            -(1 << 30),
            6,
            100,
            12_345,
        ];
        const UNSIGNED: [u64; 16] = [
            0,
            1,
            2,
            3,
            7,
            10,
            1000,
            4,
            8,
            641,
            65_536,
            0x7fff,
            1 << 31,
            6,
            100,
            12_345,
        ];
        let raw = self.r.next();
        let k = self.r.below(40);
        match t {
            T::Int => Value::Int(match k {
                0 | 1 => i32::MAX,
                2 | 3 => i32::MIN,
                4 => i32::MIN + 1,
                5 => i32::MAX - 1,
                6 => (1 << 30) + 1,
                7 => raw as i32,
                8 => (raw as i32) >> (raw % 31),
                _ => SIGNED[k % SIGNED.len()] as i32,
            }),
            T::Long => Value::Long(match k {
                0 | 1 => i64::MAX,
                2 | 3 => i64::MIN,
                4 => i64::MIN + 1,
                5 => 1 << 62,
                6 => -(1 << 62),
                7 => raw as i64,
                8 => (raw as i64) >> (raw % 63),
                9 => i64::from(i32::MAX) + 2,
                10 => i64::from(u32::MAX),
                11 => 1 << 32,
                _ => SIGNED[k % SIGNED.len()],
            }),
            T::UInt => Value::UInt(match k {
                0 | 1 => u32::MAX,
                2 => 1 << 31,
                3 => (1 << 31) + 1,
                4 => u32::MAX - 1,
                5 => raw as u32,
                6 => (raw as u32) >> (raw % 31),
                _ => UNSIGNED[k % UNSIGNED.len()] as u32,
            }),
            _ => Value::ULong(match k {
                0 | 1 => u64::MAX,
                2 => 1 << 63,
                3 => (1 << 63) + 1,
                4 => u64::MAX - 1,
                5 => raw,
                6 => raw >> (raw % 63),
                7 => u64::from(u32::MAX) + 2,
                8 => 7 << 40,
                _ => UNSIGNED[k % UNSIGNED.len()],
            }),
        }
    }

    fn int_expr(&mut self, t: T, d: u32) {
        let signed = matches!(t, T::Int | T::Long);
        if self.r.chance(12) {
            // Division and remainder by a constant.
            let op = if self.r.chance(50) {
                BinOp::IntDiv
            } else {
                BinOp::Mod
            };
            self.expr(t, d);
            let v = self.divisor(t);
            let c = self.constant(v);
            self.emit(Instr::Const(c));
            self.emit(Instr::Binary(op, op_ty(t)));
            return;
        }
        match self.r.below(12) {
            0..=4 => {
                let op = self.r.pick(&[
                    BinOp::Add,
                    BinOp::Sub,
                    BinOp::Mul,
                    BinOp::IntDiv,
                    BinOp::Mod,
                    BinOp::IntPow,
                    BinOp::BitOr,
                    BinOp::BitAnd,
                    BinOp::Add,
                    BinOp::Sub,
                ]);
                self.expr(t, d);
                self.expr(t, d);
                self.emit(Instr::Binary(op, op_ty(t)));
            }
            5 if signed => {
                self.expr(t, d);
                self.emit(Instr::Unary(UnOp::Neg, op_ty(t)));
            }
            5 => {
                self.expr(t, d);
                self.emit(Instr::Unary(UnOp::Neg, op_ty(t)));
            }
            6 | 7 => {
                let from = if self.r.chance(90) {
                    self.r.pick(&NUMBERS)
                } else {
                    T::Bigint
                };
                self.expr(from, d);
                self.emit(Instr::Call(cast_to(t)));
            }
            8 => {
                // `floor`, `ceil` and `round` on an integer: the argument unchanged.
                let f = if signed && self.r.chance(50) {
                    Builtin::Abs
                } else {
                    self.r
                        .pick(&[Builtin::Floor, Builtin::Ceil, Builtin::Round])
                };
                self.expr(t, d);
                self.emit(Instr::Call(f));
            }
            9 => {
                let f = self.r.pick(&[Builtin::Min, Builtin::Max]);
                self.expr(t, d);
                self.expr(t, d);
                self.emit(Instr::Call(f));
            }
            10 if t == T::ULong => {
                let (u, f) = self.r.pick(&[
                    (T::List, Builtin::StackSize),
                    (T::Set, Builtin::SetSize),
                    (T::Map, Builtin::MapSize),
                    (T::Bitset, Builtin::BitsetCount),
                ]);
                self.expr(u, d);
                self.emit(Instr::Call(f));
            }
            10 if t == T::Long => {
                if self.r.chance(50) {
                    self.expr(T::List, d);
                    self.emit(Instr::Call(Builtin::StackTop));
                } else {
                    self.expr(T::Map, d);
                    self.expr(T::Int, d);
                    self.emit(Instr::Call(Builtin::MapGetAssignment));
                }
            }
            _ => self.leaf(t),
        }
    }

    fn float_expr(&mut self, t: T, d: u32) {
        match self.r.below(10) {
            0..=3 => {
                let op = self.r.pick(&[
                    BinOp::Add,
                    BinOp::Sub,
                    BinOp::Mul,
                    BinOp::Div,
                    BinOp::Pow,
                    BinOp::Mul,
                ]);
                self.expr(t, d);
                self.expr(t, d);
                self.emit(Instr::Binary(op, op_ty(t)));
            }
            4 => {
                self.expr(t, d);
                self.emit(Instr::Unary(UnOp::Neg, op_ty(t)));
            }
            5 | 6 => {
                let f = self.r.pick(&[
                    Builtin::Abs,
                    Builtin::Floor,
                    Builtin::Ceil,
                    Builtin::Round,
                    Builtin::Sin,
                    Builtin::Cos,
                    Builtin::Sqrt,
                    Builtin::Log,
                ]);
                self.expr(t, d);
                self.emit(Instr::Call(f));
            }
            7 => {
                let from = self.r.pick(&NUMBERS);
                self.expr(from, d);
                self.emit(Instr::Call(cast_to(t)));
            }
            8 => {
                let f = self.r.pick(&[Builtin::Min, Builtin::Max]);
                self.expr(t, d);
                self.expr(t, d);
                self.emit(Instr::Call(f));
            }
            _ => self.leaf(t),
        }
    }
}

/// A frame for the slots of [`slots`]: random values; now and then an empty or mistyped slot,
/// or a struct with a missing field.
pub fn frame(r: &mut Rng) -> Vec<Option<Value>> {
    let mut f: Vec<Option<Value>> = ALL.iter().map(|t| Some(value(r, *t))).collect();
    let inner = Value::Struct(vec![(Arc::from("z"), value(r, T::Int))]);
    let mut point = vec![
        (Arc::from("x"), value(r, T::Long)),
        (Arc::from("y"), value(r, T::Double)),
        (Arc::from("s"), inner),
    ];
    if r.chance(3) {
        point.remove(r.below(3));
    }
    f.push(Some(Value::Struct(point)));
    // Locals start empty.
    f.extend([None, None, None, None, None]);
    if r.chance(4) {
        let s = r.below(14);
        f[s] = if r.chance(50) {
            None
        } else {
            Some(value(r, ALL[(s + 1) % 14]))
        };
    }
    if r.chance(2) {
        f[S_POINT as usize] = Some(Value::Long(3));
    }
    f
}
